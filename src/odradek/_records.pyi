"""Types of the compiled record loop (``_records.c``); see ``odradek.client.consumer.decoder``."""

from typing import Any

from odradek._types import ReadableBuffer

def decode_batches(
    out: list[Any],
    data: ReadableBuffer,
    pos: int,
    fetch_offset: int,
    check_crcs: bool,
    topic: str,
    partition: int,
    record_type: type[tuple[Any, ...]],
    /,
) -> int:
    """Appends ``record_type`` tuples for the records at or after ``fetch_offset`` of the whole
    batches in ``data`` from ``pos`` on to ``out``; returns the position of the first batch not
    decoded (cut off at the end, or declined for the reference to decide)."""

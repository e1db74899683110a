"""Types of the compiled record encoder (``_record_encoder.c``); see ``odradek.records.codec``."""

from collections.abc import Sequence
from typing import Any

def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: Any,
    value: Any,
    headers: Sequence[tuple[str, Any]],
    /,
) -> bytes:
    """The compiled ``records.record_format.encode_record``: the same bytes, answers and errors
    (arguments it does not encode itself are handed to that reference)."""

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

def encode_arrow_records(
    rows: int,
    limit_bytes: int,
    base_timestamp: int,
    timestamps: Any,
    key_offsets: Any,
    key_data: Any,
    key_validity: Any,
    key_base: int,
    value_offsets: Any,
    value_data: Any,
    value_validity: Any,
    value_base: int,
    /,
) -> tuple[bytes, int, int]:
    """The compiled ``spark._arrow_encoder.encode_arrow_records_py``: the same bytes, counts
    and errors, from Arrow buffers."""

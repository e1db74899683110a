"""Types of the compiled producer-state shortcut (``_producer_state.c``); see
``odradek.storage.producer_state``."""

from typing import Any

from odradek._types import ReadableBuffer

def producer_next_in_order(producers: dict[int, Any], data: ReadableBuffer, /) -> Any:
    """The compiled ``producer_state.py_next_in_order``: behaves identically."""

def producer_record_next(
    producers: dict[int, Any],
    entry: Any,
    data: ReadableBuffer,
    base_offset: int,
    max_timestamp: int,
    now_ms: int,
    batch_type: Any,
    entry_type: Any,
    /,
) -> int:
    """The compiled ``producer_state.py_record_next``: behaves identically."""

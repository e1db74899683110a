"""Types of the compiled append fast path (``_append.c``); see ``odradek.storage.file_records``."""

from odradek._types import ReadableBuffer

def append_batch(
    fd: int,
    data: ReadableBuffer,
    base_offset: int,
    leader_epoch: int | None,
    max_size: int,
    max_timestamp: int,
    max_last_offset_delta: int,
    /,
) -> tuple[int, int, int] | None:
    """The compiled ``file_records.py_append_batch``: behaves identically. ``base_offset``
    must fit in int64 and ``leader_epoch`` in int32 (OverflowError otherwise)."""

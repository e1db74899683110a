"""Types of the compiled append fast path (``_append.c``); see ``odradek.storage.file_records``."""

from odradek._types import ReadableBuffer
from odradek.storage.segment_tail import Tail

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

class AppendState:
    """The compiled ``odradek.storage.append_state.PyAppendState``: behaves identically."""

    @property
    def base_offset(self) -> int: ...
    @property
    def max_offset(self) -> int: ...
    @property
    def tail_max_batches(self) -> int: ...

    index_interval_bytes: int
    next_offset: int
    max_timestamp_so_far: int
    offset_of_max_timestamp: int
    first_batch_timestamp: int
    bytes_since_last_index_entry: int
    indexes_full: bool
    tail: Tail | None

    def __init__(
        self, base_offset: int, index_interval_bytes: int, tail_max_batches: int
    ) -> None: ...
    def append(
        self,
        fd: int,
        data: ReadableBuffer,
        base_offset: int,
        leader_epoch: int | None,
        position: int,
        max_batch_bytes: int,
        max_file_bytes: int,
        segment_ms: int,
        /,
    ) -> tuple[int, int, int] | None: ...

"""Types of the compiled column decoder (``_columns.c``); see ``odradek.records.columns``."""

from odradek._types import ReadableBuffer
from odradek.records.columns import Columns

class ColumnBuilder:
    """The compiled ``ColumnBuilder``: behaves exactly like ``PyColumnBuilder``."""

    def __init__(self, include_headers: bool) -> None: ...
    def add_batches(
        self, data: ReadableBuffer, min_offset: int, end_offset: int, check_crcs: bool
    ) -> int: ...
    @property
    def count(self) -> int: ...
    def finish(self) -> Columns: ...

def _set_max_column_bytes(limit: int) -> int:
    """For tests only: lowers the bound on one column's data bytes; returns the previous."""

"""The active segment's appends that write index entries (``LogSegment``'s, in Python): the
general path's per-batch indexing, and the fast path when the append state (``append_state``)
declined for an index entry due or a tail to trim or start.

An index entry is added when more than ``index.interval.bytes`` were appended since the last
one: the offset index maps the batch's base offset to its position, the time index the
largest timestamp so far to its batch's offset (only when it grew). Index pages are reserved
before the batch is written (``IndexFile.reserve_entries``: a full disk refuses the append
before anything is written), and a full index only makes lookups sparser. The tail
(``segment_tail``) is trimmed to its newer half when full, and started at an interval point
when unknown.

Called by the segment's single writer, under the log's lock.
"""

from __future__ import annotations

from odradek._types import ReadableBuffer
from odradek.records.batch import BatchHeader
from odradek.storage.append_state import AppendState
from odradek.storage.config import LogConfig
from odradek.storage.file_records import BatchFields, FileRecords
from odradek.storage.offset_index import OffsetIndex
from odradek.storage.segment_tail import TAIL_MAX_BATCHES, new_tail, trimmed_tail
from odradek.storage.time_index import TimeIndex


def append_indexing(
    state: AppendState,
    records: FileRecords,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    data: ReadableBuffer,
    base_offset: int,
    leader_epoch: int | None,
    config: LogConfig,
) -> BatchFields | None:
    """``LogSegment.append_batch``'s outcome (same contract) for a batch the append state
    declined: writes the index entries due and trims or starts the tail."""
    # >= 0 only while the segment holds a batch: an empty segment declines.
    first_timestamp = state.first_batch_timestamp
    if first_timestamp < 0 or base_offset < state.base_offset or state.indexes_full:
        return None
    due = state.bytes_since_last_index_entry > state.index_interval_bytes
    if due:
        if offset_index.is_full or time_index.is_full:
            return None  # the cached flag is a shortcut: never index past a full index
        # Index pages first (see IndexFile.reserve_entries).
        offset_index.reserve_entries()
        time_index.reserve_entries()
    position = records.size
    fields = records.append_batch(
        data,
        base_offset,
        leader_epoch,
        config.max_message_bytes,
        config.segment_bytes,
        first_timestamp + config.segment_ms,
        state.max_offset - base_offset,
    )
    if fields is None:
        return None
    max_timestamp = fields[1]
    if max_timestamp > state.max_timestamp_so_far:
        state.max_timestamp_so_far = max_timestamp
        state.offset_of_max_timestamp = base_offset
    size = len(data)
    last_offset = base_offset + fields[0]
    if due:
        # As ``_index_batch``; neither index was full (checked above).
        offset_index.append_trusted(base_offset, position)
        if state.max_timestamp_so_far > time_index.last_timestamp:
            time_index.append_trusted(state.max_timestamp_so_far, state.offset_of_max_timestamp)
        state.indexes_full = offset_index.is_full or time_index.is_full
        state.bytes_since_last_index_entry = size
        if state.tail is None:
            state.tail = new_tail(base_offset, position, last_offset, size)
            state.next_offset = last_offset + 1
            return fields
    else:
        state.bytes_since_last_index_entry += size
    # As ``_remember_in_tail``, inline (the hot path).
    tail = state.tail
    if tail is not None:
        positions = tail[1]
        if len(positions) >= TAIL_MAX_BATCHES:
            tail = state.tail = trimmed_tail(tail)
            positions = tail[1]
        positions.append(position)
        tail[3].append(size)
        tail[2].append(last_offset)
    state.next_offset = last_offset + 1
    return fields


def index_batch(
    state: AppendState,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    header: BatchHeader,
    position: int,
) -> None:
    """Accounts for the batch ``header`` just placed at ``position`` (the general append path
    and recovery): the largest timestamp, an index entry when due, the tail, the next offset."""
    if header.max_timestamp > state.max_timestamp_so_far:
        state.max_timestamp_so_far = header.max_timestamp
        state.offset_of_max_timestamp = header.base_offset
    if state.bytes_since_last_index_entry > state.index_interval_bytes:
        # Entries are in order by construction, under the log's lock. A full index (after
        # segment.index.bytes shrank) only makes lookups sparser.
        if not offset_index.is_full:
            offset_index.append_trusted(header.base_offset, position)
        if state.max_timestamp_so_far > time_index.last_timestamp and not time_index.is_full:
            time_index.append_trusted(state.max_timestamp_so_far, state.offset_of_max_timestamp)
        state.indexes_full = offset_index.is_full or time_index.is_full
        state.bytes_since_last_index_entry = 0
        if state.tail is None:
            state.tail = new_tail(header.base_offset, position, header.last_offset, header.size)
        else:
            _remember_in_tail(state, position, header.last_offset, header.size)
    else:
        _remember_in_tail(state, position, header.last_offset, header.size)
    state.bytes_since_last_index_entry += header.size
    state.next_offset = header.base_offset + header.last_offset_delta + 1


def _remember_in_tail(state: AppendState, position: int, last_offset: int, size: int) -> None:
    tail = state.tail
    if tail is not None:
        positions = tail[1]
        if len(positions) >= TAIL_MAX_BATCHES:
            tail = state.tail = trimmed_tail(tail)
            positions = tail[1]
        positions.append(position)
        tail[3].append(size)
        tail[2].append(last_offset)  # last: see ``Tail``

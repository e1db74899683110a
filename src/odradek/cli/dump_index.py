"""The index files of ``odradek dump-log``: ``.index`` and ``.timeindex``, like kafka-dump-log.

An offset index (``<base offset>.index``) prints one line per entry, the absolute offset of a
batch and its byte position in the segment's ``.log``::

    offset: 42 position: 0

a time index (``<base offset>.timeindex``) one line per entry, the largest timestamp so far in
the segment and the offset of the batch where it was first seen::

    timestamp: 1700000000000 offset: 42

(the layouts are ``storage.offset_index``'s and ``storage.time_index``'s; this reads the bytes
and never opens the files with the storage classes, which would map and lock them). The
index of a segment still being written is preallocated: its zero tail is not entries, and is
shown as one ``Skipped N zero entries at the end (preallocated space)`` line.

Checks, reported after the entries as ``Problem: ...`` lines (status 1):

- always (what ``--index-sanity-check`` does alone, as the broker's ``sanity_check`` on load):
  the length is a whole number of entries; offsets and positions strictly increase in an
  offset index; timestamps strictly increase and offsets never decrease in a time index;
- ``--verify-index-only`` (entries not printed): each entry against the segment's ``.log``
  next to it — an offset index entry must point at a batch starting at that offset, a time
  index entry must name a batch starting at its offset whose max timestamp is the entry's.

Dumping, checking and verifying only read the files.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from odradek.records.batch import BatchHeader

OFFSET_INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
_OFFSET_ENTRY: Final = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY: Final = struct.Struct(">qi")  # timestamp, relative offset


@dataclass(slots=True)
class IndexReport:
    """What dumping one index file found: the output ``lines`` and the ``problems``."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class LogBatches:
    """The batch headers of a ``.log`` (as far as they are valid): by position, by base
    offset, and where the valid prefix ends (``stopped``, None when the whole file is valid)."""

    by_position: dict[int, BatchHeader]
    by_base_offset: dict[int, BatchHeader]
    stopped: str | None


def dump_index(
    path: Path, base_offset: int, log: LogBatches | None, *, print_entries: bool
) -> IndexReport:
    """Reads the index at ``path`` (its kind from the suffix); ``log`` given: verifies each
    entry against it."""
    data = path.read_bytes()
    timed = path.suffix == TIME_INDEX_SUFFIX
    entry = _TIME_ENTRY if timed else _OFFSET_ENTRY
    report = IndexReport()
    whole = len(data) - len(data) % entry.size
    if whole != len(data):
        report.problems.append(
            f"the file is {len(data)} bytes, not a whole number of {entry.size}-byte entries "
            f"({len(data) - whole} bytes left over at position {whole})"
        )
    entries = [entry.unpack_from(data, at) for at in range(0, whole, entry.size)]
    count = len(entries)
    while count > 1 and entries[count - 1] == (0, 0):  # slot 0 may be a real (0, 0)
        count -= 1
    if not entries:
        report.lines.append(f"{path} is empty.")
    previous: tuple[int, int] | None = None
    for slot, (key, value) in enumerate(entries[:count]):
        if timed:
            timestamp, offset, position = key, base_offset + value, None
            if print_entries:
                report.lines.append(f"timestamp: {timestamp} offset: {offset}")
            problem = _time_order(slot, previous, (timestamp, value))
            previous = (timestamp, value)
        else:
            offset, position = base_offset + key, value
            if print_entries:
                report.lines.append(f"offset: {offset} position: {position}")
            problem = _offset_order(slot, previous, (key, value))
            previous = (key, value)
        if problem is not None:
            report.problems.append(problem)
        if log is not None:
            mismatch = (
                _verify_time(slot, key, offset, log)
                if position is None
                else _verify_offset(slot, offset, position, log)
            )
            if mismatch is not None:
                report.problems.append(mismatch)
    if count < len(entries):
        report.lines.append(
            f"Skipped {len(entries) - count} zero entries at the end (preallocated space)"
        )
    if log is not None and log.stopped is not None and report.problems:
        report.problems.append(f"the log segment is corrupt: {log.stopped}")
    return report


def _offset_order(slot: int, previous: tuple[int, int] | None, this: tuple[int, int]) -> str | None:
    relative, position = this
    if relative < 0 or position < 0:
        return f"entry {slot}: negative relative offset {relative} or position {position}"
    if previous is not None and (relative <= previous[0] or position <= previous[1]):
        return (
            f"entry {slot}: relative offset {relative} at position {position} does not come "
            f"after entry {slot - 1}'s {previous[0]} at {previous[1]}"
        )
    return None


def _time_order(slot: int, previous: tuple[int, int] | None, this: tuple[int, int]) -> str | None:
    timestamp, relative = this
    if relative < 0:
        return f"entry {slot}: negative relative offset {relative}"
    if previous is not None and (timestamp <= previous[0] or relative < previous[1]):
        return (
            f"entry {slot}: timestamp {timestamp} at relative offset {relative} does not come "
            f"after entry {slot - 1}'s {previous[0]} at {previous[1]}"
        )
    return None


def _verify_offset(slot: int, offset: int, position: int, log: LogBatches) -> str | None:
    header = log.by_position.get(position)
    if header is None:
        return f"entry {slot}: offset {offset}: no batch starts at position {position} in the log"
    if header.base_offset != offset:
        return (
            f"entry {slot}: index offset {offset}, but the batch at position {position} "
            f"starts at offset {header.base_offset}"
        )
    return None


def _verify_time(slot: int, timestamp: int, offset: int, log: LogBatches) -> str | None:
    header = log.by_base_offset.get(offset)
    if header is None:
        return f"entry {slot}: timestamp {timestamp}: no batch starts at offset {offset} in the log"
    if header.max_timestamp != timestamp:
        return (
            f"entry {slot}: index timestamp {timestamp}, but the batch at offset {offset} has "
            f"max timestamp {header.max_timestamp}"
        )
    return None

"""Producer-state snapshot files beside a partition's segments, and rebuilding the state.

A snapshot is ``<offset>.snapshot`` in the log's directory (20-digit offset, as segment files):
the producer state (``producer_state.encode_snapshot``) of every batch below ``offset``. One is
written when the active segment rolls and at clean shutdown, so that loading a partition reads
the newest snapshot at or below the log end offset and scans only the batch headers after it
(Kafka's ``ProducerStateManager``); without a usable snapshot the whole log is scanned.

Rules kept: a snapshot past the log end offset (written before a truncation or before a crash
lost the tail) is deleted, never read; an unreadable one is deleted and the next older one is
tried; writing a snapshot deletes those below the log start offset except the newest of them
(it still holds the producers whose records retention or DeleteRecords removed, KIP-360).
Writes are atomic (``checkpoints.atomic_write``).

Thread safety: the caller's (a partition, on the broker's event loop).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from typing import TYPE_CHECKING

from odradek.errors import CorruptRecordError
from odradek.records.batch import BatchHeader
from odradek.storage.checkpoints import atomic_write
from odradek.storage.producer_state import ProducerState, decode_snapshot, encode_snapshot

if TYPE_CHECKING:
    from odradek.storage.log import Log

__all__ = [
    "SNAPSHOT_SUFFIX",
    "delete_snapshots_after",
    "load_producer_state",
    "snapshot_offsets",
    "write_snapshot",
]

logger = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOT_FILE = re.compile(r"^(\d{20})\.snapshot$")


def _path(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")


def snapshot_offsets(directory: str) -> list[int]:
    """The offsets of the snapshot files in ``directory``, oldest first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = (_SNAPSHOT_FILE.match(name) for name in names)
    return sorted(int(match.group(1)) for match in found if match is not None)


def _remove(directory: str, offset: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(_path(directory, offset))


def write_snapshot(directory: str, state: ProducerState, log_start_offset: int) -> None:
    """Writes ``state`` as ``<state.end_offset>.snapshot`` and deletes the snapshots it makes
    useless (below the log start offset, except the newest of those)."""
    atomic_write(_path(directory, state.end_offset), encode_snapshot(state))
    older = [offset for offset in snapshot_offsets(directory) if offset < log_start_offset]
    for offset in older[:-1]:
        _remove(directory, offset)


def delete_snapshots_after(directory: str, offset: int) -> None:
    """Deletes the snapshots past ``offset`` (the log was truncated to ``offset``)."""
    for found in snapshot_offsets(directory):
        if found > offset:
            _remove(directory, found)


def load_producer_state(log: Log, now_ms: int) -> ProducerState:
    """The producer state of ``log`` up to its log end offset: the newest usable snapshot,
    then every batch header after it (its producers count as appended at ``now_ms``)."""
    directory = log.directory
    log_end_offset = log.log_end_offset
    delete_snapshots_after(directory, log_end_offset)
    state = None
    for offset in reversed(snapshot_offsets(directory)):
        try:
            with open(_path(directory, offset), "rb") as file:
                state = decode_snapshot(file.read(), offset)
            break
        except (OSError, CorruptRecordError) as error:
            logger.warning(
                "%s: producer snapshot %d unusable (%s); deleted",
                log.topic_partition,
                offset,
                error,
            )
            _remove(directory, offset)
    if state is None:
        state = ProducerState(log.log_start_offset)
    scanned = 0
    for header in batch_headers_from(log, state.end_offset):
        state.update(header, header.base_offset, header.max_timestamp, now_ms)
        scanned += 1
    state.end_offset = log_end_offset
    if scanned:
        logger.info(
            "%s: producer state of %d producers rebuilt (%d batches scanned)",
            log.topic_partition,
            len(state),
            scanned,
        )
    return state


def batch_headers_from(log: Log, offset: int) -> list[BatchHeader]:
    """The headers of the log's batches whose last offset is at or past ``offset``."""
    headers = []
    for segment in log.segments():
        if segment.next_offset <= offset:
            continue
        start = segment.translate_offset(offset) if offset > segment.base_offset else None
        position = 0 if start is None else start.position
        for _, header in segment.log.batches_from(position):
            if header.base_offset + header.last_offset_delta >= offset:
                headers.append(header)
    return headers

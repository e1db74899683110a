"""The leader-epoch cache of one partition log (KIP-101, KIP-279): which leader epoch began at
which offset, kept in memory and in the partition directory's ``leader-epoch-checkpoint``.

A replica that comes back after a leader change asks the new leader where its own latest epoch
ends (OffsetForLeaderEpoch) and truncates to that offset: the point where the two logs diverge.
Truncating to the high watermark alone loses committed records or keeps divergent ones
(KIP-101's two scenarios); this cache is what answers the question on both sides.

Entries are ``(epoch, start_offset)``, both strictly increasing. The rules it keeps (Kafka's
``LeaderEpochFileCache``):

- ``assign(epoch, start_offset)`` adds an entry only when the epoch differs from the latest or
  starts earlier than it; an entry that would break monotonicity first removes every entry
  with an epoch or start offset at or past the new one's.
- ``end_offset_for(epoch, log_end_offset)``: for the latest epoch, the log end offset; for an
  older one, the start offset of the first epoch above it, answered with the largest known
  epoch at or below the one asked (the requested epoch itself when it precedes every entry);
  ``UNDEFINED`` (-1, -1) for epoch -1 or an epoch newer than any known.
- ``truncate_from_end(offset)`` drops entries starting at or past ``offset`` (the log was
  truncated there); ``truncate_from_start(offset)`` drops entries wholly below it and moves the
  one covering it to start there (the log start offset moved).

Every change is written at once (write, fsync, rename: ``checkpoints.atomic_write``). Changes
are rare — a new leader epoch, a truncation, a log start move — so appends pay only the
``latest_epoch`` comparison ``Log`` makes.

File layout (text, Kafka's ``LeaderEpochCheckpointFile``)::

    0                     version
    2                     number of entries
    0 0                   epoch, start offset
    2 5

Thread safety: none of its own; ``Log`` calls it under the log's lock.
"""

from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass

from odradek.storage.checkpoints import atomic_write

__all__ = [
    "CHECKPOINT_FILE_NAME",
    "UNDEFINED",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochEndOffset",
    "EpochEntry",
    "LeaderEpochCache",
    "parse_checkpoint",
    "render_checkpoint",
]

logger = logging.getLogger(__name__)

CHECKPOINT_FILE_NAME = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0
_UNSETTLED = -2


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """Leader epoch ``epoch`` wrote its first record at ``start_offset``."""

    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """An answer of ``end_offset_for``: the epoch found and the offset where it ends."""

    epoch: int
    end_offset: int

    @property
    def undefined(self) -> bool:
        return self.epoch == UNDEFINED_EPOCH and self.end_offset == UNDEFINED_EPOCH_OFFSET


UNDEFINED = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def render_checkpoint(entries: list[EpochEntry]) -> bytes:
    """The checkpoint file's bytes for ``entries`` (see the module docstring)."""
    lines = [str(_VERSION), str(len(entries))]
    lines += [f"{entry.epoch} {entry.start_offset}" for entry in entries]
    return ("\n".join(lines) + "\n").encode()


def parse_checkpoint(text: str) -> list[EpochEntry]:
    """The entries of a checkpoint file's text.

    Raises:
        ValueError: an unknown version, a wrong count, a malformed line, or entries that are
            not strictly increasing in both epoch and start offset.
    """
    lines = text.splitlines()
    if len(lines) < 2:
        raise ValueError("missing version or count")
    if int(lines[0]) != _VERSION:
        raise ValueError(f"unknown version {lines[0]!r}")
    count = int(lines[1])
    body = [line for line in lines[2:] if line.strip()]
    if count != len(body):
        raise ValueError(f"expected {count} entries, found {len(body)}")
    entries: list[EpochEntry] = []
    for line in body:
        epoch, start_offset = line.split()
        entry = EpochEntry(int(epoch), int(start_offset))
        if entry.epoch < 0 or entry.start_offset < 0:
            raise ValueError(f"negative entry {line!r}")
        if entries and (
            entry.epoch <= entries[-1].epoch or entry.start_offset < entries[-1].start_offset
        ):
            raise ValueError(f"entry {line!r} does not follow {entries[-1]}")
        entries.append(entry)
    return entries


class LeaderEpochCache:
    """See the module docstring.

    Args:
        path: the checkpoint file (None: kept in memory only, for tests and tools).
        entries: the initial entries, monotonic (``load`` reads them from ``path``).
    """

    def __init__(self, path: str | None, entries: list[EpochEntry] | None = None) -> None:
        self.path = path
        self._entries: list[EpochEntry] = list(entries or [])
        #: The latest epoch (-1: none).
        self.latest_epoch = self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH
        #: The latest epoch once written to the file, -2 while a change is only in memory: a
        #: plain attribute ``Log`` compares on every append (an append in any other epoch
        #: calls ``assign``, which records the epoch or writes the pending change).
        self.settled_epoch = self.latest_epoch

    @classmethod
    def load(cls, directory: str) -> LeaderEpochCache | None:
        """The cache of the partition in ``directory``; None when it has no checkpoint file
        or the file is unreadable or malformed (logged), so the caller rebuilds it."""
        path = os.path.join(directory, CHECKPOINT_FILE_NAME)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            logger.warning("cannot read %s: %s; rebuilding it from the log", path, error)
            return None
        try:
            # Bytes that are not UTF-8 are a malformed file too (UnicodeDecodeError is a
            # ValueError), never an error at start-up.
            entries = parse_checkpoint(data.decode("utf-8"))
        except ValueError as error:
            logger.warning("malformed %s: %s; rebuilding it from the log", path, error)
            return None
        return cls(path, entries)

    # ------------------------------------------------------------------ reads

    def entries(self) -> list[EpochEntry]:
        """A copy of the entries, oldest first."""
        return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochEndOffset:
        """Where ``requested_epoch`` ends in this log (see the module docstring)."""
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED
        if requested_epoch == self.latest_epoch:
            return EpochEndOffset(requested_epoch, log_end_offset)
        epochs = [entry.epoch for entry in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED  # newer than anything this log has seen
        if higher == 0:
            # Older than every known epoch: it ended where the oldest known one began.
            return EpochEndOffset(requested_epoch, self._entries[0].start_offset)
        return EpochEndOffset(self._entries[higher - 1].epoch, self._entries[higher].start_offset)

    # ------------------------------------------------------------------ changes

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Records that ``epoch`` starts at ``start_offset``; returns whether anything
        changed. ``flush`` False keeps the change in memory until the next write: for an
        epoch with no records yet (a new leader's), whose loss in a crash changes no answer."""
        if epoch < 0 or start_offset < 0:
            return False
        latest = self.latest_entry
        if latest is not None and epoch == latest.epoch and start_offset >= latest.start_offset:
            if flush and self.settled_epoch != self.latest_epoch:
                self.flush()  # the epoch's first records: its entry must survive a crash now
            return False
        kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        if len(kept) != len(self._entries):
            logger.warning(
                "%s: epoch %d at offset %d removes non-monotonic entries %s",
                self.path,
                epoch,
                start_offset,
                self._entries[len(kept) :],
            )
        kept.append(EpochEntry(epoch, start_offset))
        self._replace(kept, flush=flush)
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drops the entries starting at or past ``end_offset``; returns whether any went."""
        kept = [entry for entry in self._entries if entry.start_offset < end_offset]
        if len(kept) == len(self._entries):
            return False
        self._replace(kept)
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Drops the entries wholly below ``start_offset`` and moves the one covering it to
        start there; returns whether anything changed."""
        starts = [entry.start_offset for entry in self._entries]
        floor = bisect.bisect_right(starts, start_offset) - 1
        if floor < 0 or (floor == 0 and starts[0] == start_offset):
            return False
        kept = [EpochEntry(self._entries[floor].epoch, start_offset)]
        kept += self._entries[floor + 1 :]
        self._replace(kept)
        return True

    def clear(self) -> None:
        """Forgets every entry (the log was emptied)."""
        if self._entries:
            self._replace([])

    def flush(self) -> None:
        """Writes the checkpoint file (no-op without a path)."""
        if self.path is not None:
            atomic_write(self.path, render_checkpoint(self._entries))
        self.settled_epoch = self.latest_epoch

    def _replace(self, entries: list[EpochEntry], *, flush: bool = True) -> None:
        self._entries = entries
        self.latest_epoch = entries[-1].epoch if entries else UNDEFINED_EPOCH
        if flush:
            self.flush()
        else:
            self.settled_epoch = _UNSETTLED

    def __repr__(self) -> str:
        pairs = ", ".join(f"{e.epoch}: {e.start_offset}" for e in self._entries)
        return f"LeaderEpochCache({{{pairs}}})"

"""Producers and transactions in the storage crash fuzz (``storage_crash``): the workload's
idempotent and transactional appends, the damage done to producer-state snapshots and
transaction indexes, and the check of what recovery rebuilt from them.

**Writing.** ``Producers`` appends through a broker ``Partition`` over the fuzzed log, as a
leader does: idempotent batches of three producers (each continuing its sequence, now and then
a new epoch from sequence 0), transactional batches of two more, and COMMIT or ABORT markers
ending their transactions. The partition keeps the producer state, writes its
``<offset>.snapshot`` when the log rolled (and at a clean shutdown, as the broker does), and
appends each abort to the active segment's ``.txnindex``. A replication truncation goes
through the partition too (its snapshots past the new end are deleted, its state reloaded).

**Damage** (kinds ``snapshot`` and ``txn-index``): one ``.snapshot`` or ``.txnindex`` file
deleted, cut at any byte, or garbled (random bytes written over part of it).

**Check** (``check_producers``), on a reopened log whose every batch was served: a fresh
``Partition`` over it loads its producer state (the newest usable snapshot, then the batches
after it) and its transactions (a scan of the log, which also rewrites the ``.txnindex``
files). Both must equal what the surviving batches imply, read here with an independent scan:

- for each producer with a data batch in the log: the epoch and last sequence of its last
  batch (one whose batches all lie below the log start offset may be unknown when no
  snapshot remembers it: the scan starts at the log start offset); a producer known only from
  a snapshot must have its last batch below the first segment (retention removed it);
- the open transactions (producer → first offset), the last stable offset, the aborted
  transactions (producer, first offset, marker offset) and each segment's ``.txnindex``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from odradek._clock import MockClock
from odradek.broker.replication.partition import Partition
from odradek.records.batch import iter_batches
from odradek.records.codec import build_batch
from odradek.records.control import ControlType, control_type
from odradek.records.record import SimpleRecord
from odradek.storage.log import Log
from odradek.storage.producer_snapshots import SNAPSHOT_SUFFIX
from odradek.storage.txn_index import TXN_INDEX_SUFFIX, read_txn_index_file

__all__ = [
    "PRODUCER_DAMAGE_KINDS",
    "ProducerCheckError",
    "Producers",
    "check_now_or_later",
    "check_producers",
    "damage_producer_files",
]

IDEMPOTENT_IDS = (1_000, 1_001, 1_002)
TRANSACTIONAL_IDS = (2_000, 2_001)
PRODUCER_DAMAGE_KINDS = ("snapshot", "txn-index")


class ProducerCheckError(Exception):
    """What recovery rebuilt differs from what the log implies."""


@dataclass(slots=True)
class Producers:
    """The writer's producers over ``partition`` (see the module docstring)."""

    partition: Partition
    epochs: dict[int, int] = field(default_factory=dict)
    sequences: dict[int, int] = field(default_factory=dict)

    @classmethod
    def over(cls, log: Log, clock: MockClock, leader_epoch: int) -> Producers:
        partition = Partition(
            log.topic_partition, log, broker_id=1, replicas=[1], leader_epoch=leader_epoch,
            clock=clock,
        )  # fmt: skip
        return cls(partition)

    def append(self, rng: random.Random, clock: MockClock, leader_epoch: int) -> tuple[int, bytes]:
        """One producer's append (a batch or a marker); returns its base offset and bytes."""
        partition = self.partition
        partition.leader_epoch = leader_epoch
        index = partition.transactions.index(partition.high_watermark)
        open_now = [pid for pid in TRANSACTIONAL_IDS if index.is_open(pid)]
        if open_now and rng.random() < 0.3:
            pid = rng.choice(open_now)
            info = partition.append_marker(pid, self.epochs[pid], rng.random() < 0.5, 0)
            return info.first_offset, self._stored(info.first_offset)
        pid = rng.choice(IDEMPOTENT_IDS + TRANSACTIONAL_IDS)
        if pid not in self.epochs or (rng.random() < 0.05 and not index.is_open(pid)):
            self.epochs[pid] = self.epochs.get(pid, -1) + 1
            self.sequences[pid] = 0
        count = rng.randint(1, 4)
        records = [
            SimpleRecord(clock.now_ms(), None, rng.randbytes(rng.randint(0, 60)))
            for _ in range(count)
        ]
        data = bytearray(
            build_batch(
                records,
                producer_id=pid,
                producer_epoch=self.epochs[pid],
                base_sequence=self.sequences[pid],
                transactional=pid in TRANSACTIONAL_IDS,
            )
        )
        info = partition.append_as_leader(data)
        self.sequences[pid] += count
        return info.first_offset, bytes(data)

    def _stored(self, offset: int) -> bytes:
        data = self.partition.log.read(offset, 1 << 20).read_bytes()
        position, header = next(iter_batches(data))
        return bytes(data[position : position + header.size])

    def truncate_to(self, offset: int) -> None:
        """A replication truncation through the partition; each producer continues from
        what is left (a producer with nothing left starts over at a new epoch)."""
        partition = self.partition
        partition.truncate_to(offset)
        state = partition.producer_state
        for pid in list(self.epochs):
            entry = state.get(pid)
            if entry is None or not entry.batches:
                self.epochs[pid] += 1
                self.sequences[pid] = 0
            else:
                self.epochs[pid] = entry.producer_epoch
                self.sequences[pid] = entry.last_sequence + 1

    def before_clean_shutdown(self) -> None:
        """The broker writes every partition's snapshot before its logs close."""
        self.partition.write_producer_snapshot()


def damage_producer_files(rng: random.Random, directory: str, kind: str) -> bool:
    """Deletes, cuts or garbles one ``.snapshot`` (``kind`` snapshot) or ``.txnindex``
    file; returns False when there is none."""
    suffix = SNAPSHOT_SUFFIX if kind == "snapshot" else TXN_INDEX_SUFFIX
    names = sorted(name for name in os.listdir(directory) if name.endswith(suffix))
    if not names:
        return False
    path = os.path.join(directory, rng.choice(names[-2:] if rng.random() < 0.7 else names))
    size = os.path.getsize(path)
    action = rng.choice(["delete", "cut", "garble"])
    if action == "delete":
        os.remove(path)
    elif action == "cut":
        os.truncate(path, rng.randint(0, max(size - 1, 0)))
    elif size:
        with open(path, "r+b") as handle:
            handle.seek(rng.randrange(size))
            handle.write(rng.randbytes(rng.randint(1, 8)))
    return True


@dataclass(slots=True)
class _Implied:
    """What the batches of a log imply."""

    #: producer id → (epoch, last sequence, last offset) of its last data batch.
    producers: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    open: dict[int, int] = field(default_factory=dict)
    #: (producer id, first offset, marker offset) of each aborted transaction, by segment.
    aborted: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)


def _implied(log: Log) -> _Implied:
    implied = _Implied()
    for segment in log.segments():
        data = segment.log.read(0, segment.log.size)
        for position, header in iter_batches(data):
            pid = header.producer_id
            if pid < 0:
                continue
            if not header.is_control:
                last_sequence = header.base_sequence + header.last_offset_delta
                implied.producers[pid] = (header.producer_epoch, last_sequence, header.last_offset)
                if header.is_transactional:
                    implied.open.setdefault(pid, header.base_offset)
                continue
            kind = control_type(data, header, position)
            if kind not in (ControlType.ABORT, ControlType.COMMIT):
                continue
            first = implied.open.pop(pid, None)
            if first is not None and kind == ControlType.ABORT:
                entry = (pid, first, header.base_offset)
                implied.aborted.setdefault(segment.base_offset, []).append(entry)
    return implied


def check_producers(log: Log, clock: MockClock, crash_start: int) -> None:
    """The producer state and transactions recovery rebuilds (see the module docstring);
    ``crash_start``: the log start offset at the crash (a lost log-start checkpoint brings
    back batches below it, which the producer state may not know).

    Raises:
        ProducerCheckError: the first difference.
    """
    implied = _implied(log)
    partition = Partition(log.topic_partition, log, broker_id=1, replicas=[1], clock=clock)
    state = partition.producer_state
    for pid, (epoch, last_sequence, last_offset) in sorted(implied.producers.items()):
        entry = state.get(pid)
        got = (
            None
            if entry is None or not entry.batches
            else (entry.producer_epoch, entry.last_sequence)
        )
        if got is None and last_offset < max(log.log_start_offset, crash_start):
            continue  # only below the log start offset, and no snapshot to remember it by
        if got != (epoch, last_sequence):
            raise ProducerCheckError(
                f"producer {pid}: the state rebuilt says (epoch, last sequence) {got}, "
                f"the log {(epoch, last_sequence)}"
            )
    first_segment = log.segments()[0].base_offset
    for entry in state.entries():
        if entry.producer_id not in implied.producers and entry.last_offset >= first_segment:
            raise ProducerCheckError(
                f"producer {entry.producer_id} rebuilt with its last batch at "
                f"{entry.last_offset}, but the log holds no batch of it"
            )
    end = log.log_end_offset
    index = partition.transactions.index(end)
    if index.open_transactions != implied.open:
        raise ProducerCheckError(
            f"open transactions rebuilt {index.open_transactions}, the log {implied.open}"
        )
    lso = min(implied.open.values(), default=end)
    if partition.transactions.last_stable_offset(end) != lso:
        raise ProducerCheckError(
            f"last stable offset {partition.transactions.last_stable_offset(end)}, "
            f"the log implies {lso}"
        )
    want = sorted(entry for entries in implied.aborted.values() for entry in entries)
    got_aborted = sorted(
        (a.producer_id, a.first_offset, a.last_offset) for a in index.aborted_between(0, end + 1)
    )
    if got_aborted != want:
        raise ProducerCheckError(f"aborted transactions rebuilt {got_aborted}, the log {want}")
    files = {
        int(name[:20]): [
            (a.producer_id, a.first_offset, a.last_offset)
            for a in read_txn_index_file(os.path.join(log.directory, name))
        ]
        for name in os.listdir(log.directory)
        if name.endswith(TXN_INDEX_SUFFIX)
    }
    if files != implied.aborted:
        raise ProducerCheckError(f".txnindex files hold {files}, the log implies {implied.aborted}")


def check_now_or_later(
    rng: random.Random, log: Log, clock: MockClock, crash_start: int
) -> Callable[[Log], None] | None:
    """``check_producers`` on the reopened log now, or (returned) on the log of the next
    reopen, after more appends: a broker loads the producer state at first use only."""
    if rng.random() < 0.5:
        check_producers(log, clock, crash_start)
        return None
    return lambda again: check_producers(again, clock, crash_start)

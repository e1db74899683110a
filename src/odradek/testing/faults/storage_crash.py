"""Crash-recovery fuzz of the storage engine, in-process: seeded runs that write a real log
through a ``LogManager``, crash it, damage what is on disk, reopen it and check the contract
of RELIABILITY.md ("Crash recovery").

One run (``run_once(seed, directory)``), everything drawn from ``random.Random(seed)``:

1. **Write.** A ``LogManager`` (mock clock, manual scheduler, cleaner off) with a small
   ``segment.bytes``, ``segment.index.bytes`` and ``index.interval.bytes`` takes a few dozen
   operations: appends of batches (several records, gzip or not, timestamps that sometimes go
   back) in a leader epoch that sometimes moves on, flushes (``flush.messages`` or by hand),
   rolls, recovery-point checkpoints, replication truncations and DeleteRecords with
   retention; in half the runs also idempotent and transactional batches and their markers
   (``storage_crash_txn``). A model keeps the bytes of every batch the log holds.
2. **Crash.** ``unclean``: the process dies (files let go as they are, indexes preallocated,
   no marker); ``clean``: ``shutdown()`` (flushed, trimmed, marker written);
   ``clean-no-marker``: a clean shutdown whose marker is then lost.
3. **Damage**, 0–3 of (see ``DAMAGE_KINDS``): a ``.log`` cut at any byte, a bit flip in the
   bytes the batch CRC32C covers (after the recovery point, or before it: *at rest*), a garbage
   or zero-filled tail, index and time-index files deleted / cut / scribbled / preallocated
   again (an untrimmed index), the recovery-point, log-start and leader-epoch checkpoints
   deleted / emptied / cut / replaced by garbage, a crash during a roll (a new empty
   segment at the log end offset, with or without its index files, preallocated or not), and
   a producer snapshot or ``.txnindex`` deleted / cut / garbled.
4. **Reopen and check** (``check_reopened``). Positions are compared in *log order*: segment
   base offset, then byte position. A batch is **intact** when it ends at or before the first
   damaged byte of the run (any later byte may be garbage, so nothing after it is owed).
   The contract:

   - every batch served by ``Log.read`` (from the log start offset to the log end offset,
     with random ``max_bytes``) is whole, has a valid CRC32C, and its offsets continue the
     previous batch's; the log end offset is the offset after the last batch;
   - every batch served is byte-for-byte one the writer stored at that offset;
   - no intact batch at or after the log start offset of the crash is missing (flushed or
     not: recovery truncates at the first bad batch, never before);
   - a read at any offset starts with the batch holding it; ``offset_for_timestamp`` agrees
     with a scan of the records served; the leader-epoch cache names the epoch of every batch
     served;
   - appends continue at the log end offset and, with everything before them, survive
     another crash (unclean, after a flush) or clean shutdown and reopen;
   - with producers: the producer state and transactions rebuilt (at once, or after those
     appends and reopen) are what the surviving batches imply (``check_producers``).

   One relaxation, Kafka's own: data below the recovery point was fsynced and is trusted
   without its CRC (checking it would read the whole log at every start), so a bit flipped
   *at rest* there may be served unnoticed: the batch it hit and those after it are then only
   required to be what the disk holds. Such runs are counted as ``undetected``, not failures.
   Flips in the base offset and partition leader epoch (outside the CRC in format v2) are not
   made: nothing can tell them apart from real values.

A failing run raises nothing: its ``RunResult`` lists the violations and the seed, and
``python -m odradek.testing.faults.storage_crash --runs 1 --seed S`` (``scripts/crash-fuzz``)
replays it.
"""

from __future__ import annotations

import argparse
import bisect
import logging
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.errors import KafkaError
from odradek.records.batch import HEADER_SIZE, CompressionType, parse_header, validate_batch
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import SimpleRecord
from odradek.storage.cleaner.config import CleanerConfig
from odradek.storage.config import LogConfig
from odradek.storage.leader_epoch_cache import CHECKPOINT_FILE_NAME
from odradek.storage.log import Log
from odradek.storage.manager import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LogManager,
)
from odradek.storage.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    partition_dir_name,
    segment_path,
)
from odradek.storage.scheduler import ManualScheduler
from odradek.testing.faults import storage_crash_txn as txn

TP = TopicPartition("crash", 0)
CRASH_MODES = ("unclean", "clean", "clean-no-marker")
DAMAGE_KINDS = (
    "truncate",
    "flip",
    "flip-at-rest",
    "garbage-tail",
    "zero-tail",
    "index",
    "time-index",
    "recovery-checkpoint",
    "start-checkpoint",
    "epoch-checkpoint",
    "roll-crash",
    *txn.PRODUCER_DAMAGE_KINDS,
)
#: Where a batch lies in log order: (segment base offset, byte position).
LogPosition = tuple[int, int]


@dataclass(slots=True)
class Model:
    """What the writer knows: the stored bytes of every batch by base offset."""

    batches: dict[int, bytes] = field(default_factory=dict)
    #: The idempotent and transactional producers (None: plain batches only).
    producers: txn.Producers | None = None

    def truncate(self, offset: int) -> None:
        for base in [base for base in self.batches if base >= offset]:
            del self.batches[base]


@dataclass(frozen=True, slots=True)
class Crash:
    """The state at the crash that the check needs."""

    mode: str
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    #: Every batch on disk: base offset -> (segment base, start, end position, next offset).
    locations: dict[int, tuple[int, int, int, int]]


@dataclass(slots=True)
class Damage:
    kinds: list[str] = field(default_factory=list)
    #: The first damaged byte in log order (None: no .log byte damaged).
    first: LogPosition | None = None
    #: Base offsets of batches flipped below the recovery point (may be served unnoticed).
    at_rest: set[int] = field(default_factory=set)

    def damaged_from(self, position: LogPosition) -> None:
        if self.first is None or position < self.first:
            self.first = position


@dataclass(frozen=True, slots=True)
class RunResult:
    seed: int
    mode: str
    kinds: tuple[str, ...]
    violations: tuple[str, ...]
    undetected: bool
    batches_written: int
    batches_lost: int

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass(slots=True)
class _Served:
    """What a full read of a reopened log returned."""

    batches: list[bytes] = field(default_factory=list)
    #: Reading stopped at an at-rest flip the log could not notice (allowed).
    stopped_at_rest: bool = False
    #: Batches on disk at the crash (at or past its log start offset) not served: the ones
    #: after the first damaged byte that recovery cut.
    lost: int = 0


class ContractViolationError(Exception):
    """A contract violation found by the check (collected into ``RunResult``)."""


# ----------------------------------------------------------------------------- writing


def _config(rng: random.Random) -> LogConfig:
    return LogConfig(
        segment_bytes=rng.choice([1_200, 2_000, 4_000, 8_000]),
        segment_index_bytes=rng.choice([48, 96, 240, 4_096]),
        index_interval_bytes=rng.choice([0, 150, 600, 4_096]),
        flush_messages=rng.choice([1, 4, 25, 10**9, 10**9]),
        file_delete_delay_ms=0,
    )


def _manager(
    root: str, config: LogConfig, clock: MockClock, scheduler: ManualScheduler | None = None
) -> LogManager:
    return LogManager(
        [root],
        config,
        clock=clock,
        scheduler=scheduler or ManualScheduler(clock),
        cleaner_config=CleanerConfig(enable=False),
        recovery_threads_per_data_dir=1,
    )


def _batch(rng: random.Random, clock: MockClock) -> bytearray:
    records = [
        SimpleRecord(
            clock.now_ms() + rng.choice([0, 0, 0, rng.randint(-3_000, 3_000)]),
            None if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 8)),
            rng.randbytes(rng.randint(0, 150)),
        )
        for _ in range(rng.randint(1, 5))
    ]
    compression = CompressionType.GZIP if rng.random() < 0.2 else CompressionType.NONE
    return bytearray(build_batch(records, compression=compression))


def _write(
    rng: random.Random,
    manager: LogManager,
    log: Log,
    clock: MockClock,
    scheduler: ManualScheduler,
) -> Model:
    model = Model()
    epoch = rng.randint(0, 3)
    if rng.random() < 0.5:
        model.producers = producers = txn.Producers.over(log, clock, epoch)
    for _ in range(rng.randint(3, 60)):
        clock.advance(rng.randint(0, 40))
        draw = rng.random()
        if draw < 0.70 and model.producers is not None and rng.random() < 0.6:
            offset, stored = producers.append(rng, clock, epoch)
            model.batches[offset] = stored
        elif draw < 0.70:
            data = _batch(rng, clock)
            info = log.append(data, leader_epoch=epoch)
            model.batches[info.first_offset] = bytes(data)
        elif draw < 0.75:
            epoch += rng.randint(1, 2)
            if rng.random() < 0.5:
                log.assign_epoch_start(epoch)
        elif draw < 0.81:
            log.flush()
        elif draw < 0.87:
            manager.checkpoint_logs()
        elif draw < 0.92:
            log.roll()
        elif draw < 0.97:
            bases = sorted(b for b in model.batches if b > log.log_start_offset)
            if bases:
                offset = rng.choice(bases)
                if model.producers is not None:
                    model.producers.truncate_to(offset)
                else:
                    log.truncate_to(offset)
                model.truncate(offset)
        else:
            target = rng.randint(log.log_start_offset, log.log_end_offset)
            log.maybe_increment_log_start_offset(target)
            log.delete_old_segments()
        if rng.random() < 0.3:
            # Background work (the flush a roll schedules, delayed deletions) lags behind
            # the appends, so unflushed data spans segments as on a busy broker.
            scheduler.run_due()
    return model


def _crash(manager: LogManager, log: Log) -> None:
    """The process dies: every file is let go as it is (no flush, no trim, no marker)."""
    for segment in log.segments():
        segment.discard()


# ----------------------------------------------------------------------------- damage


def _segment_bases(directory: str) -> list[int]:
    return sorted(int(name[:20]) for name in os.listdir(directory) if name.endswith(LOG_SUFFIX))


def _locations(directory: str) -> dict[int, tuple[int, int, int, int]]:
    locations: dict[int, tuple[int, int, int, int]] = {}
    for base in _segment_bases(directory):
        with open(segment_path(directory, base, LOG_SUFFIX), "rb") as handle:
            data = handle.read()
        position = 0
        while position + HEADER_SIZE <= len(data):
            header = validate_batch(data, position)
            locations[header.base_offset] = (
                base,
                position,
                position + header.size,
                header.next_offset,
            )
            position += header.size
    return locations


def _damage_file(rng: random.Random, path: str, *, preallocate: int = 0) -> str:
    """Deletes, empties, cuts, scribbles on or extends a file; returns what it did."""
    if not os.path.exists(path):
        return "absent"
    size = os.path.getsize(path)
    action = rng.choice(["delete", "empty", "cut", "scribble", "garbage", "preallocate"])
    if action == "delete":
        os.remove(path)
    elif action == "empty":
        os.truncate(path, 0)
    elif action == "cut":
        os.truncate(path, rng.randint(0, size))
    elif action == "scribble" and size:
        with open(path, "r+b") as handle:
            handle.seek(rng.randrange(size))
            handle.write(rng.randbytes(rng.randint(1, 12)))
    elif action == "garbage":
        with open(path, "ab") as handle:
            handle.write(rng.randbytes(rng.randint(1, 40)))
    elif action == "preallocate":
        os.truncate(path, max(size, preallocate or size + rng.randint(1, 64)))
    return action


def _damage(
    rng: random.Random, directory: str, root: str, crash: Crash, config: LogConfig
) -> Damage:
    damage = Damage()
    bases = _segment_bases(directory)
    kinds = [k for k in DAMAGE_KINDS if k != "roll-crash" or crash.mode == "unclean"]
    for kind in rng.sample(kinds, rng.choice([0, 1, 1, 1, 2, 2, 3])):
        base = rng.choice(bases) if rng.random() < 0.5 else bases[-1]
        if kind in ("flip", "flip-at-rest"):
            at_rest = kind == "flip-at-rest"
            # Any batch of the log, at rest (below the recovery point: fsynced) or not.
            chosen = [
                (o, b, s, e)
                for o, (b, s, e, n) in crash.locations.items()
                if (n <= crash.recovery_point) == at_rest
            ]
            if not chosen:
                continue
            offset, base, start, end = rng.choice(chosen)
        log_path = segment_path(directory, base, LOG_SUFFIX)
        size = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        if kind == "truncate":
            cut = rng.randint(0, size)
            if cut == size:
                continue
            os.truncate(log_path, cut)
            damage.damaged_from((base, cut))
        elif kind in ("flip", "flip-at-rest"):
            # Bytes the CRC32C covers (attributes onwards), the length field, magic and CRC:
            # never the base offset (0-7) or partition leader epoch (12-15).
            spot = start + rng.choice([rng.randint(8, 11), rng.randint(16, end - start - 1)])
            if spot >= size:  # cut off by an earlier damage
                continue
            with open(log_path, "r+b") as handle:
                handle.seek(spot)
                byte = handle.read(1)[0]
                handle.seek(spot)
                handle.write(bytes([byte ^ (1 << rng.randint(0, 7))]))
            damage.damaged_from((base, spot))
            if at_rest:
                damage.at_rest.add(offset)
        elif kind in ("garbage-tail", "zero-tail"):
            start = size if rng.random() < 0.5 else rng.randint(0, size)
            length = rng.randint(1, 400)
            filler = rng.randbytes(length) if kind == "garbage-tail" else bytes(length)
            with open(log_path, "r+b") as handle:
                handle.seek(start)
                handle.write(filler)
                handle.truncate()  # the tail is replaced: a torn or unwritten end
            damage.damaged_from((base, start))
        elif kind in ("index", "time-index"):
            suffix = INDEX_SUFFIX if kind == "index" else TIME_INDEX_SUFFIX
            _damage_file(
                rng, segment_path(directory, base, suffix), preallocate=config.segment_index_bytes
            )
        elif kind.endswith("checkpoint"):
            name = {
                "recovery-checkpoint": os.path.join(root, RECOVERY_POINT_CHECKPOINT),
                "start-checkpoint": os.path.join(root, LOG_START_OFFSET_CHECKPOINT),
                "epoch-checkpoint": os.path.join(directory, CHECKPOINT_FILE_NAME),
            }[kind]
            _damage_file(rng, name)
        elif kind in txn.PRODUCER_DAMAGE_KINDS:
            if not txn.damage_producer_files(rng, directory, kind):
                continue
        elif kind == "roll-crash":
            new_base = crash.log_end_offset
            if new_base in bases:
                continue
            with open(segment_path(directory, new_base, LOG_SUFFIX), "wb"):
                pass
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                if rng.random() < 0.6:
                    with open(segment_path(directory, new_base, suffix), "wb") as handle:
                        if rng.random() < 0.5:
                            handle.truncate(config.segment_index_bytes // 24 * 24)
        damage.kinds.append(kind)
    return damage


# ----------------------------------------------------------------------------- checking


def _read_all(log: Log, rng: random.Random, model: Model, damage: Damage) -> _Served:
    """Reads every batch from the log start offset to the log end offset, checking each
    (see the module docstring); stops quietly only at an allowed at-rest flip."""
    served = _Served()
    at_rest_from = min(damage.at_rest, default=None)
    offset = log.log_start_offset
    end = log.log_end_offset
    while offset < end:
        try:
            data = log.read(offset, rng.choice([1, 200, 5_000, 1 << 20])).read_bytes()
            offset = _check_slice(data, offset, model, served)
        except (ContractViolationError, KafkaError) as error:
            reached = parse_header(served.batches[-1]).next_offset if served.batches else offset
            if at_rest_from is not None and max(offset, reached) >= at_rest_from:
                served.stopped_at_rest = True
                return served
            raise ContractViolationError(f"reading at offset {offset}: {error}") from error
    if offset != end:
        raise ContractViolationError(
            f"the last batch ends at {offset}, the log end offset is {end}"
        )
    return served


def _check_slice(data: bytes, offset: int, model: Model, served: _Served) -> int:
    """Checks the whole batches of a read at ``offset``; returns the offset to read next."""
    position = 0
    next_offset = offset
    while len(data) - position >= HEADER_SIZE:
        header = parse_header(data, position)
        if position + header.size > len(data):
            break
        validate_batch(data, position)
        if position == 0 and not header.base_offset <= offset <= header.last_offset:
            raise ContractViolationError(
                f"a read at {offset} starts with the batch {header.base_offset}-"
                f"{header.last_offset}"
            )
        if position and header.base_offset != next_offset:
            raise ContractViolationError(
                f"batch {header.base_offset} follows a batch ending at {next_offset}"
            )
        batch = data[position : position + header.size]
        if model.batches.get(header.base_offset) != batch:
            raise ContractViolationError(
                f"batch {header.base_offset} is not the batch written there"
            )
        served.batches.append(batch)
        next_offset = header.next_offset
        position += header.size
    if next_offset == offset:
        raise ContractViolationError(
            f"a read at {offset} returned no whole batch ({len(data)} bytes)"
        )
    return next_offset


def _check_lookups(
    rng: random.Random, log: Log, served: _Served, crash_start: int, at_rest_from: int
) -> None:
    """Reads by offset and by timestamp, and the leader-epoch cache, against the batches."""
    start = log.log_start_offset
    if served.batches:
        for _ in range(4):
            target = rng.randrange(start, log.log_end_offset)
            data = log.read(target, 1).read_bytes()
            header = parse_header(data)
            if not header.base_offset <= target <= header.last_offset:
                raise ContractViolationError(
                    f"a read at {target} starts at the batch {header.base_offset}-"
                    f"{header.last_offset}"
                )
    records = [
        record
        for batch in served.batches
        if not parse_header(batch).is_control  # markers are no answer to a time lookup
        for record in decode_batch_records(batch)
        if record.offset >= start
    ]
    targets = [rng.choice(records).timestamp + rng.randint(-1, 1) for _ in records[:5]]
    targets.append(max((r.timestamp for r in records), default=0) + 1)
    for target in targets:
        linear = next((r for r in records if r.timestamp >= target), None)
        found = log.offset_for_timestamp(target)
        want = None if linear is None else (linear.offset, linear.timestamp)
        got = None if found is None else (found.offset, found.timestamp)
        if want != got:
            raise ContractViolationError(
                f"offset_for_timestamp({target}) = {got}, the records say {want}"
            )
    entries = log.leader_epoch_entries()
    starts = [entry_start for _epoch, entry_start in entries]
    if starts and starts[-1] > log.log_end_offset:
        raise ContractViolationError(f"leader epochs {entries} start past the log end offset")
    for batch in served.batches:
        header = parse_header(batch)
        # Batches below the log start offset of the crash may come back (the log-start
        # checkpoint is periodic, as Kafka's): the epoch cache was trimmed past them. Those
        # after an at-rest flip (even one never served) are only owed what the disk holds.
        low = max(start, crash_start)
        if header.partition_leader_epoch < 0 or not low <= header.last_offset < at_rest_from:
            continue
        slot = bisect.bisect_right(starts, max(header.base_offset, start, crash_start)) - 1
        epoch = entries[slot][0] if slot >= 0 else None
        if epoch != header.partition_leader_epoch:
            raise ContractViolationError(
                f"leader epochs {entries} give epoch {epoch} at offset {header.base_offset}, "
                f"whose batch has epoch {header.partition_leader_epoch}"
            )


def check_reopened(
    rng: random.Random, log: Log, model: Model, crash: Crash, damage: Damage
) -> _Served:
    """The contract on a reopened log (see the module docstring).

    Raises:
        ContractViolationError: the first violation found.
    """
    for base, batch in model.batches.items():
        if parse_header(batch).next_offset > crash.log_start_offset and (
            base not in crash.locations
        ):
            raise ContractViolationError(
                f"batch {base} was missing from the disk already at the crash"
            )
    served = _read_all(log, rng, model, damage)
    got = {parse_header(batch).base_offset for batch in served.batches}
    for base, (segment, _start, end, next_offset) in sorted(crash.locations.items()):
        intact = damage.first is None or (segment, end) <= damage.first
        if intact and next_offset > crash.log_start_offset and base not in got:
            raise ContractViolationError(
                f"intact batch {base}-{next_offset - 1} (segment {segment}, ends at {end}) "
                f"was lost; first damaged byte {damage.first}, recovery point "
                f"{crash.recovery_point}"
            )
    served.lost = sum(
        1
        for base, (*_, next_offset) in crash.locations.items()
        if next_offset > crash.log_start_offset and base not in got
    )
    if not served.stopped_at_rest:
        try:
            at_rest_from = min(damage.at_rest, default=1 << 62)
            _check_lookups(rng, log, served, crash.log_start_offset, at_rest_from)
        except KafkaError:
            # An at-rest flip below the log start offset is never read by offset, but a
            # time lookup scans across it: an error there is the same allowed blind spot.
            if not damage.at_rest:
                raise
            served.stopped_at_rest = True
    return served


def _append_and_reopen(
    rng: random.Random,
    manager: LogManager,
    log: Log,
    served: _Served,
    reopen: Callable[[], LogManager],
    *,
    at_rest: bool,
    check: Callable[[Log], None] | None = None,
) -> None:
    """Appends after recovery, crashes or shuts down again, and checks what the next open
    holds: everything served before plus the appends."""
    epoch = max(log.latest_epoch, 0) + rng.randint(0, 1)
    model = Model({parse_header(batch).base_offset: batch for batch in served.batches})
    appended: list[int] = []
    for _ in range(rng.randint(1, 3)):
        expected = log.log_end_offset
        data = bytearray(build_batch([SimpleRecord(0, b"k", rng.randbytes(20))]))
        info = log.append(data, leader_epoch=epoch)
        if info.first_offset != expected:
            raise ContractViolationError(f"an append went to {info.first_offset}, not {expected}")
        model.batches[info.first_offset] = bytes(data)
        appended.append(info.first_offset)
    if rng.random() < 0.5:
        manager.shutdown()
    else:
        log.flush()
        manager.checkpoint_logs()
        _crash(manager, log)
    again = reopen()
    try:
        log = _the_log(again)
        if served.stopped_at_rest:
            if log.log_end_offset <= appended[0]:
                # This open noticed the at-rest flip the previous one served and cut the log
                # there: what was appended after it goes too (Kafka's trust model).
                return
            model.batches = {base: model.batches[base] for base in appended}
            for base in appended:
                fetched = log.read(base, 1 << 20).read_bytes()
                _check_slice(fetched, base, model, _Served())
            return
        reread = _read_all(log, rng, model, Damage())
        bases = [parse_header(batch).base_offset for batch in reread.batches]
        expected_bases = sorted(model.batches)
        # A later open may notice an at-rest flip the first one served, and cut there.
        if bases != expected_bases and not (at_rest and bases == expected_bases[: len(bases)]):
            raise ContractViolationError(
                f"after appends and another reopen the log holds batches {bases}, "
                f"expected {sorted(model.batches)}"
            )
        if check is not None:
            check(log)
    finally:
        again.shutdown()


def _the_log(manager: LogManager) -> Log:
    log = manager.get_log(TP)
    if log is None:
        raise ContractViolationError("the reopened log directory holds no log")
    return log


# ----------------------------------------------------------------------------- runs


def run_once(seed: int, workdir: str) -> RunResult:
    """One seeded run in a fresh directory under ``workdir`` (removed afterwards)."""
    rng = random.Random(seed)
    root = os.path.join(workdir, f"crash-fuzz-{seed}")
    shutil.rmtree(root, ignore_errors=True)
    directory = os.path.join(root, partition_dir_name(TP))
    clock = MockClock()
    config = _config(rng)
    mode = rng.choice(CRASH_MODES)
    damage = Damage()
    violations: list[str] = []
    served = _Served()
    model = Model()
    try:
        scheduler = ManualScheduler(clock)
        manager = _manager(root, config, clock, scheduler)
        manager.startup()
        log = manager.get_or_create_log(TP)
        model = _write(rng, manager, log, clock, scheduler)
        log_start_offset, log_end_offset = log.log_start_offset, log.log_end_offset
        if mode == "unclean":
            _crash(manager, log)
        else:
            if model.producers is not None:
                model.producers.before_clean_shutdown()
            manager.shutdown()
            if mode == "clean-no-marker":
                os.remove(os.path.join(root, CLEAN_SHUTDOWN_FILE))
        crash = Crash(
            mode, log_start_offset, log_end_offset, log.recovery_point, _locations(directory)
        )
        damage = _damage(rng, directory, root, crash, config)
        reopened = _manager(root, config, clock)
        reopened.startup()
        try:
            log = _the_log(reopened)
            served = check_reopened(rng, log, model, crash, damage)
            check = None
            if model.producers is not None and not damage.at_rest:
                check = txn.check_now_or_later(rng, log, clock, log_start_offset)
            _append_and_reopen(
                rng,
                reopened,
                log,
                served,
                lambda: _started(_manager(root, config, clock)),
                at_rest=bool(damage.at_rest),
                check=check,
            )
        finally:
            reopened.shutdown()
    except (ContractViolationError, txn.ProducerCheckError) as violation:
        violations.append(str(violation))
    except Exception as error:  # any crash of the storage engine is a finding
        frames = traceback.extract_tb(error.__traceback__)
        where = " <- ".join(
            f"{os.path.basename(frame.filename)}:{frame.lineno} {frame.name}"
            for frame in reversed(frames[1:])
        )
        violations.append(f"{type(error).__name__}: {error} (at {where})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return RunResult(
        seed,
        mode,
        tuple(damage.kinds),
        tuple(violations),
        served.stopped_at_rest,
        len(model.batches),
        served.lost,
    )


def _started(manager: LogManager) -> LogManager:
    manager.startup()
    return manager


@dataclass(slots=True)
class _Tally:
    runs: int = 0
    failed: int = 0
    undetected: int = 0
    lost: int = 0


def run_many(
    runs: int,
    seed: int,
    workdir: str,
    *,
    progress: Callable[[str], None] | None = None,
) -> list[RunResult]:
    """Runs seeds ``seed`` .. ``seed + runs - 1``; ``progress`` gets a line now and then."""
    results: list[RunResult] = []
    started = time.monotonic()
    every = max(1, runs // 20)
    for number in range(runs):
        results.append(run_once(seed + number, workdir))
        if progress is not None and (number + 1) % every == 0:
            elapsed = time.monotonic() - started
            failed = sum(not result.ok for result in results)
            progress(
                f"{number + 1}/{runs} runs, {failed} failed, {(number + 1) / elapsed:.1f} runs/s"
            )
    return results


def summary(results: Sequence[RunResult]) -> str:
    """A table by crash mode and damage kind: runs, failures, at-rest flips served unnoticed,
    and batches lost (not intact: after the first damaged byte)."""
    rows: dict[str, _Tally] = {}
    for result in results:
        keys = [f"mode {result.mode}"] + [f"damage {k}" for k in result.kinds or ("none",)]
        for key in ["all runs", *keys]:
            tally = rows.setdefault(key, _Tally())
            tally.runs += 1
            tally.failed += not result.ok
            tally.undetected += result.undetected
            tally.lost += result.batches_lost
    lines = [f"{'':28} {'runs':>7} {'failed':>7} {'undetected':>10} {'batches lost':>12}"]
    for key, tally in rows.items():
        lines.append(
            f"{key:28} {tally.runs:>7} {tally.failed:>7} {tally.undetected:>10} {tally.lost:>12}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="crash-fuzz", description="Crash-recovery fuzz of the storage engine."
    )
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0, help="the first run's seed")
    parser.add_argument("--dir", help="where runs write (default: a temporary directory)")
    parser.add_argument("--verbose", action="store_true", help="show the storage's log lines")
    args = parser.parse_args(argv)
    # Recovery logs every repair it makes: thousands of lines a run of this fuzz.
    logging.basicConfig(level=logging.INFO if args.verbose else logging.CRITICAL)
    # A private directory (mkdtemp) on the RAM file system when there is one: fsyncs are free.
    shm = "/dev/shm"  # noqa: S108
    parent = args.dir or (shm if os.path.isdir(shm) else None)
    workdir = tempfile.mkdtemp(prefix="crash-fuzz-", dir=parent)
    started = time.monotonic()
    try:
        results = run_many(args.runs, args.seed, workdir, progress=print)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - started
    print(summary(results))
    failures = [result for result in results if not result.ok]
    print(
        f"{len(results)} runs in {elapsed:.1f} s ({len(results) / elapsed:.1f} runs/s), "
        f"{len(failures)} failed"
    )
    for result in failures[:20]:
        print(f"FAILED seed {result.seed} ({result.mode}; {', '.join(result.kinds) or 'none'}):")
        for violation in result.violations:
            print(f"    {violation}")
        print(f"    reproduce: scripts/crash-fuzz --runs 1 --seed {result.seed}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

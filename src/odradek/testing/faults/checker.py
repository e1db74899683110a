"""The checker of a fault run: a history and the replicas read after healing → a ``Report``.

Pure: plain values in, a value out; no I/O, no clock. The rules it keeps (Kafka's contract,
RELIABILITY.md):

- **lost**: every acknowledged value is in the final log at the partition and offset its
  acknowledgement gave (the final log is the reference replica's records below the high
  watermark; the reference is the partition's leader when the caller says so, else its first
  replica). A value found elsewhere is still lost where it was promised; ``found_at`` says
  where it went.
- **unstable reads**: every value a consumer read is in the final log where it was read
  (consumers only see records below the high watermark, which must survive).
- **duplicates**: a value of an idempotent producer appears at most once in the final log
  (non-idempotent duplicates are counted, not violations: retries may duplicate them).
- **reordered**: an idempotent producer's acknowledged offsets on one partition rise in the
  order it sent the values.
- **divergent**: every replica holds the reference's records below the high watermark.
- **offsets backwards**: a group's committed offset for a partition, as acknowledged to a
  commit or answered to an OffsetFetch, is never lower than one acknowledged or answered
  before the later request was sent.
- **transactions** (``txn_checker``): given what a read_committed consumer read after
  healing, committed transactions whole and once, aborted ones invisible, unknown ones all
  or nothing, each in produced order.
- **unavailability**: per fault, the longest time any partition went without an
  acknowledgement between the fault's application and the next fault (or the end of the
  history), counting the time up to the end only if a send was still waiting; per kind, the
  p50 and max over its faults. Figures, not violations.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from odradek.testing.faults.history import (
    Ack,
    Commit,
    CommittedLog,
    CommittedRead,
    Consume,
    Event,
    Failure,
    FaultWindow,
    ReplicaLog,
    Send,
)
from odradek.testing.faults.txn_checker import TxnReport, check_transactions, tally_transactions

Position = tuple[int, int]  # (partition, offset)


@dataclass(frozen=True, slots=True)
class Lost:
    value: bytes
    partition: int
    offset: int
    found_at: tuple[Position, ...]


@dataclass(frozen=True, slots=True)
class UnstableRead:
    consumer: str
    value: bytes
    partition: int
    offset: int
    found_at: tuple[Position, ...]


@dataclass(frozen=True, slots=True)
class Duplicate:
    value: bytes
    producer: str
    positions: tuple[Position, ...]


@dataclass(frozen=True, slots=True)
class Reordered:
    producer: str
    partition: int
    earlier_value: bytes
    earlier_offset: int
    later_value: bytes
    later_offset: int


@dataclass(frozen=True, slots=True)
class Divergence:
    partition: int
    broker_id: int
    reference_broker_id: int
    first_offset: int
    detail: str


@dataclass(frozen=True, slots=True)
class OffsetBackwards:
    partition: int
    earlier_offset: int
    earlier_at_s: float
    later_offset: int
    later_sent_at_s: float
    later_source: str  # "commit" or "fetch"


@dataclass(frozen=True, slots=True)
class Unavailability:
    """The windows measured for one fault kind (seconds, one per fault of that kind)."""

    kind: str
    windows_s: tuple[float, ...]

    @property
    def p50_s(self) -> float:
        ordered = sorted(self.windows_s)
        return ordered[(len(ordered) - 1) // 2] if ordered else 0.0

    @property
    def max_s(self) -> float:
        return max(self.windows_s, default=0.0)


@dataclass(frozen=True, slots=True)
class Report:
    sent: int
    acknowledged: int
    failed: int
    consumed: int
    commits: int
    lost: tuple[Lost, ...] = ()
    unstable_reads: tuple[UnstableRead, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()
    duplicates_without_idempotence: int = 0
    reordered: tuple[Reordered, ...] = ()
    divergent: tuple[Divergence, ...] = ()
    offsets_backwards: tuple[OffsetBackwards, ...] = ()
    unavailability: Mapping[str, Unavailability] = field(default_factory=dict)
    transactions: TxnReport = field(default_factory=TxnReport)

    @property
    def violations(self) -> int:
        return (
            self.transactions.violations
            + len(self.lost)
            + len(self.unstable_reads)
            + len(self.duplicates)
            + len(self.reordered)
            + len(self.divergent)
            + len(self.offsets_backwards)
        )

    @property
    def clean(self) -> bool:
        return self.violations == 0


def check(
    events: Sequence[Event],
    replicas: Iterable[ReplicaLog],
    faults: Sequence[FaultWindow] = (),
    *,
    leaders: Mapping[int, int] | None = None,
    committed_logs: Iterable[CommittedLog] | None = None,
) -> Report:
    """Checks ``events`` against the final ``replicas``.

    Args:
        events: the history, in recording order (``History.events()``).
        replicas: every replica of every partition, read after healing.
        faults: the faults applied, for the unavailability windows.
        leaders: partition → broker id of the replica to take as the reference (its leader).
        committed_logs: every partition as read with read_committed after healing, for the
            transactions' rules; without it the transactions are only counted.
    """
    by_partition: dict[int, list[ReplicaLog]] = defaultdict(list)
    for replica in replicas:
        by_partition[replica.partition].append(replica)
    reference: dict[int, ReplicaLog] = {}
    for partition, copies in by_partition.items():
        copies.sort(key=lambda r: r.broker_id)
        wanted = (leaders or {}).get(partition)
        reference[partition] = next((r for r in copies if r.broker_id == wanted), copies[0])

    final: dict[Position, bytes] = {}
    where: dict[bytes, list[Position]] = defaultdict(list)
    for partition, replica in reference.items():
        for offset, value in replica.records:
            final[(partition, offset)] = value
            where[value].append((partition, offset))

    sends = [e for e in events if isinstance(e, Send)]
    acks = [e for e in events if isinstance(e, Ack)]
    consumes = [e for e in events if isinstance(e, Consume)]
    idempotent = {s.value: s.producer for s in sends if s.idempotent}
    producer_of = {s.value: s.producer for s in sends}

    lost = tuple(
        Lost(a.value, a.partition, a.offset, tuple(where.get(a.value, ())))
        for a in acks
        if final.get((a.partition, a.offset)) != a.value
    )
    unstable = tuple(
        UnstableRead(c.consumer, c.value, c.partition, c.offset, tuple(where.get(c.value, ())))
        for c in consumes
        if final.get((c.partition, c.offset)) != c.value
    )
    duplicates = tuple(
        Duplicate(value, idempotent[value], tuple(positions))
        for value, positions in where.items()
        if len(positions) > 1 and value in idempotent
    )
    others = sum(
        len(positions) - 1
        for value, positions in where.items()
        if len(positions) > 1 and value not in idempotent and value in producer_of
    )
    return Report(
        sent=len(sends),
        acknowledged=len(acks),
        failed=sum(1 for e in events if isinstance(e, Failure)),
        consumed=len(consumes),
        commits=sum(1 for e in events if isinstance(e, Commit)),
        lost=lost,
        unstable_reads=unstable,
        duplicates=duplicates,
        duplicates_without_idempotence=others,
        reordered=_reordered(sends, acks),
        divergent=_divergent(by_partition, reference),
        offsets_backwards=_offsets_backwards(events),
        unavailability=_unavailability(events, faults),
        transactions=(
            tally_transactions(events)
            if committed_logs is None
            else check_transactions(events, committed_logs)
        ),
    )


def _reordered(sends: Sequence[Send], acks: Sequence[Ack]) -> tuple[Reordered, ...]:
    order = {s.value: index for index, s in enumerate(sends) if s.idempotent}
    streams: dict[tuple[str, int], list[tuple[int, Ack]]] = defaultdict(list)
    for ack in acks:
        if ack.value in order:
            streams[(ack.producer, ack.partition)].append((order[ack.value], ack))
    found = []
    for (producer, partition), stream in sorted(streams.items()):
        stream.sort(key=lambda item: item[0])
        for (_, earlier), (_, later) in itertools.pairwise(stream):
            if later.offset <= earlier.offset:
                found.append(
                    Reordered(
                        producer,
                        partition,
                        earlier.value,
                        earlier.offset,
                        later.value,
                        later.offset,
                    )
                )
    return tuple(found)


def _divergent(
    by_partition: Mapping[int, Sequence[ReplicaLog]], reference: Mapping[int, ReplicaLog]
) -> tuple[Divergence, ...]:
    found = []
    for partition, copies in sorted(by_partition.items()):
        ref = reference[partition]
        for replica in copies:
            if replica is ref:
                continue
            detail = _difference(ref, replica)
            if detail is not None:
                found.append(
                    Divergence(partition, replica.broker_id, ref.broker_id, detail[0], detail[1])
                )
    return tuple(found)


def _difference(reference: ReplicaLog, replica: ReplicaLog) -> tuple[int, str] | None:
    """The first offset below the high watermark where ``replica`` differs, and how."""
    limit = min(reference.high_watermark, replica.high_watermark)
    if reference.high_watermark != replica.high_watermark:
        return (
            limit,
            f"high watermark {replica.high_watermark} != {reference.high_watermark}",
        )
    ours = {o: v for o, v in reference.records if o < limit}
    theirs = {o: v for o, v in replica.records if o < limit}
    for offset in sorted(ours.keys() | theirs.keys()):
        mine, other = ours.get(offset), theirs.get(offset)
        if mine != other:
            if other is None:
                return offset, "missing on this replica"
            if mine is None:
                return offset, "missing on the reference"
            return offset, f"{other!r} where the reference has {mine!r}"
    return None


def _offsets_backwards(events: Sequence[Event]) -> tuple[OffsetBackwards, ...]:
    observed: dict[int, list[tuple[float, float, int, str]]] = defaultdict(list)
    for event in events:
        if isinstance(event, Commit):
            observed[event.partition].append((event.sent_at_s, event.at_s, event.offset, "commit"))
        elif isinstance(event, CommittedRead) and event.offset >= 0:
            observed[event.partition].append((event.sent_at_s, event.at_s, event.offset, "fetch"))
    found = []
    for partition, items in sorted(observed.items()):
        # Completions by time, with the highest offset completed up to each one.
        done = sorted(items, key=lambda item: item[1])
        times = [item[1] for item in done]
        best: list[tuple[int, float]] = []
        for _, at_s, offset, _ in done:
            if not best or offset > best[-1][0]:
                best.append((offset, at_s))
            else:
                best.append(best[-1])
        for sent_at_s, _, offset, source in items:
            index = bisect.bisect_left(times, sent_at_s)
            if index == 0:
                continue
            highest, highest_at = best[index - 1]
            if offset < highest:
                found.append(
                    OffsetBackwards(partition, highest, highest_at, offset, sent_at_s, source)
                )
    return tuple(found)


def _unavailability(
    events: Sequence[Event], faults: Sequence[FaultWindow]
) -> dict[str, Unavailability]:
    if not faults:
        return {}
    end_s = max((_time(e) for e in events), default=0.0)
    acks: dict[int, list[float]] = defaultdict(list)
    resolved: dict[int, list[float]] = defaultdict(list)
    sends: dict[int, list[float]] = defaultdict(list)
    for event in events:
        if isinstance(event, Ack):
            acks[event.partition].append(event.at_s)
            resolved[event.partition].append(event.at_s)
        elif isinstance(event, Failure):
            resolved[event.partition].append(event.at_s)
        elif isinstance(event, Send):
            sends[event.partition].append(event.at_s)
    for times in (*acks.values(), *resolved.values(), *sends.values()):
        times.sort()
    ordered = sorted(faults, key=lambda f: f.applied_at_s)
    windows: dict[str, list[float]] = defaultdict(list)
    for index, fault in enumerate(ordered):
        start = fault.applied_at_s
        stop = ordered[index + 1].applied_at_s if index + 1 < len(ordered) else end_s
        stop = max(stop, start)
        worst = 0.0
        for partition, sent in sends.items():
            gap = _longest_gap(acks[partition], resolved[partition], sent, start, stop)
            worst = max(worst, gap)
        windows[fault.kind].append(worst)
    return {kind: Unavailability(kind, tuple(w)) for kind, w in sorted(windows.items())}


def _longest_gap(
    acks: Sequence[float],
    resolved: Sequence[float],
    sends: Sequence[float],
    start: float,
    stop: float,
) -> float:
    """The longest stretch of [start, stop] without an acknowledgement. The stretch after
    the last acknowledgement counts only while a send was waiting: more sends by ``stop``
    than acknowledgements and failures by that last acknowledgement."""
    low = bisect.bisect_left(acks, start)
    high = bisect.bisect_right(acks, stop)
    previous = start
    worst = 0.0
    for at_s in acks[low:high]:
        worst = max(worst, at_s - previous)
        previous = at_s
    if bisect.bisect_right(sends, stop) > bisect.bisect_right(resolved, previous):
        worst = max(worst, stop - previous)
    return worst


def _time(event: Event) -> float:
    return event.at_s

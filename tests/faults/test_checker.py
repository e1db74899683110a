"""The fault-run checker on plain histories: a clean run is clean, and each kind of violation
(lost acknowledged record, unstable read, duplicate under idempotence, acknowledged order
broken, divergent replica, committed offset going backwards; and for transactions read with
read_committed: a committed one lost, a record duplicated, an aborted one visible, an unknown
one partly visible, records out of produced order) is found and only it; the
unavailability windows per fault kind are the longest stretches without acknowledgements."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from odradek.testing.faults.checker import check
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
    Transaction,
)


def _produced(
    producer: str, partition: int, offsets: Sequence[int], *, idempotent: bool = True
) -> list[Event]:
    """Sends then acks of ``<producer>-<i>`` at the given offsets, one per 10 ms."""
    events: list[Event] = []
    for index, offset in enumerate(offsets):
        value = f"{producer}-{index}".encode()
        events.append(Send(index * 0.01, producer, idempotent, partition, value))
        events.append(Ack(index * 0.01 + 0.005, producer, partition, offset, value))
    return events


def _replicas(
    partition: int, records: Sequence[tuple[int, bytes]], brokers: Sequence[int] = (0, 1, 2)
) -> list[ReplicaLog]:
    hw = max((o for o, _ in records), default=-1) + 1
    return [ReplicaLog(partition, b, hw, tuple(records)) for b in brokers]


def _log(events: Sequence[Event]) -> list[tuple[int, bytes]]:
    return sorted((e.offset, e.value) for e in events if isinstance(e, Ack))


def test_a_clean_history_is_clean() -> None:
    events = _produced("p0", 0, range(5))
    events.append(Consume(1.0, "c0", 0, 2, b"p0-2"))
    events.append(Commit(1.0, 1.1, "c0", 0, 3))
    events.append(CommittedRead(1.2, 1.3, 0, 3))
    report = check(events, _replicas(0, _log(events)))
    assert report.clean, report
    assert (report.sent, report.acknowledged, report.consumed, report.commits) == (5, 5, 1, 1)


def test_an_acknowledged_record_missing_from_the_replicas_is_lost() -> None:
    events = _produced("p0", 0, range(5))
    kept = [r for r in _log(events) if r[0] != 3]
    report = check(events, _replicas(0, kept))
    assert [(lost.value, lost.partition, lost.offset) for lost in report.lost] == [(b"p0-3", 0, 3)]
    assert report.lost[0].found_at == ()
    assert report.violations == 1


def test_an_acknowledged_record_moved_to_another_offset_is_lost_where_promised() -> None:
    events = _produced("p0", 0, [0, 1])
    report = check(events, _replicas(0, [(0, b"p0-0"), (1, b"other"), (2, b"p0-1")]))
    assert [(lost.value, lost.found_at) for lost in report.lost] == [(b"p0-1", ((0, 2),))]


def test_an_acknowledged_offset_at_or_past_the_high_watermark_is_lost() -> None:
    events = _produced("p0", 0, [0, 1])
    replicas = [ReplicaLog(0, b, 1, ((0, b"p0-0"),)) for b in (0, 1, 2)]
    assert [lost.offset for lost in check(events, replicas).lost] == [1]


def test_a_failed_send_is_not_lost_when_absent() -> None:
    events: list[Event] = [
        Send(0.0, "p0", True, 0, b"p0-0"),
        Failure(1.0, "p0", 0, b"p0-0", "timed out"),
    ]
    report = check(events, _replicas(0, []))
    assert report.clean
    assert report.failed == 1


def test_a_consumed_record_missing_afterwards_is_an_unstable_read() -> None:
    events = _produced("p0", 0, range(2))
    events.append(Consume(1.0, "c0", 0, 2, b"ghost"))
    report = check(events, _replicas(0, _log(events)))
    assert [(u.consumer, u.offset, u.value) for u in report.unstable_reads] == [("c0", 2, b"ghost")]
    assert report.violations == 1


def test_a_duplicate_of_an_idempotent_producer_is_a_violation() -> None:
    events = _produced("p0", 0, range(3))
    log = [*_log(events), (3, b"p0-1")]
    report = check(events, _replicas(0, log))
    assert [(d.value, d.producer, d.positions) for d in report.duplicates] == [
        (b"p0-1", "p0", ((0, 1), (0, 3)))
    ]
    assert report.lost == ()


def test_a_duplicate_without_idempotence_is_counted_not_a_violation() -> None:
    events = _produced("p1", 0, range(3), idempotent=False)
    log = [*_log(events), (3, b"p1-1")]
    report = check(events, _replicas(0, log))
    assert report.clean
    assert report.duplicates_without_idempotence == 1


def test_acknowledged_offsets_against_send_order_are_reordered() -> None:
    # p0-1 was sent before p0-2 but acknowledged at a higher offset.
    events = _produced("p0", 0, [0, 2, 1])
    report = check(events, _replicas(0, _log(events)))
    assert [
        (r.earlier_value, r.earlier_offset, r.later_value, r.later_offset) for r in report.reordered
    ] == [(b"p0-1", 2, b"p0-2", 1)]
    assert report.violations == 1


def test_reordering_without_idempotence_is_allowed() -> None:
    events = _produced("p1", 0, [0, 2, 1], idempotent=False)
    assert check(events, _replicas(0, _log(events))).clean


@pytest.mark.parametrize(
    ("records", "hw", "offset", "words"),
    [
        (((0, b"p0-0"), (1, b"xx")), 3, 1, "where the reference has"),
        (((0, b"p0-0"),), 3, 1, "missing on this replica"),
        (((0, b"p0-0"), (1, b"p0-1"), (2, b"p0-2")), 2, 2, "high watermark 2 != 3"),
    ],
)
def test_a_replica_that_differs_below_the_high_watermark_diverges(
    records: tuple[tuple[int, bytes], ...], hw: int, offset: int, words: str
) -> None:
    events = _produced("p0", 0, range(3))
    good = tuple(_log(events))
    replicas = [ReplicaLog(0, 0, 3, good), ReplicaLog(0, 1, 3, good), ReplicaLog(0, 2, hw, records)]
    report = check(events, replicas, leaders={0: 0})
    assert [(d.broker_id, d.reference_broker_id, d.first_offset) for d in report.divergent] == [
        (2, 0, offset)
    ]
    assert words in report.divergent[0].detail
    assert report.lost == ()


def test_the_leader_is_the_reference_replica() -> None:
    events = _produced("p0", 0, range(2))
    good = tuple(_log(events))
    replicas = [ReplicaLog(0, 0, 2, ((0, b"p0-0"),)), ReplicaLog(0, 1, 2, good)]
    report = check(events, replicas, leaders={0: 1})
    assert report.lost == ()
    assert [d.broker_id for d in report.divergent] == [0]


def test_a_commit_lower_than_one_acknowledged_before_goes_backwards() -> None:
    events: list[Event] = [
        Commit(1.0, 1.1, "c0", 0, 50),
        Commit(2.0, 2.1, "c1", 0, 40),
        Commit(2.0, 2.1, "c1", 1, 7),  # another partition: no order with partition 0
    ]
    report = check(events, [])
    assert [
        (b.partition, b.earlier_offset, b.later_offset, b.later_source)
        for b in report.offsets_backwards
    ] == [(0, 50, 40, "commit")]


def test_a_fetched_committed_offset_lower_than_an_acknowledged_commit_goes_backwards() -> None:
    events: list[Event] = [Commit(1.0, 1.1, "c0", 0, 50), CommittedRead(1.5, 1.6, 0, 20)]
    assert [b.later_source for b in check(events, []).offsets_backwards] == ["fetch"]


def test_concurrent_commits_may_complete_in_either_order() -> None:
    # The second commit was sent before the first was acknowledged: no order between them.
    events: list[Event] = [
        Commit(1.0, 1.5, "c0", 0, 50),
        Commit(1.2, 1.6, "c1", 0, 40),
        CommittedRead(1.05, 1.7, 0, 30),
        CommittedRead(0.5, 0.6, 0, -1),  # nothing committed yet
    ]
    assert check(events, []).clean


def test_unavailability_is_the_longest_stretch_without_acknowledgements_per_kind() -> None:
    events: list[Event] = []
    # Partition 0 acknowledges every 0.1 s from 0 to 10 s except between 2.0 and 5.0 s;
    # partition 1 every 0.1 s except between 6.0 and 7.0 s.
    for step in range(101):
        at_s = step / 10
        for partition, (lo, hi) in ((0, (2.0, 5.0)), (1, (6.0, 7.0))):
            value = f"p-{partition}-{step}".encode()
            events.append(Send(at_s, "p", False, partition, value))
            if not lo < at_s < hi:
                events.append(Ack(at_s, "p", partition, step, value))
    faults = [
        FaultWindow("kill-leader", "broker 0", 1.5, 2.5),
        FaultWindow("pause", "broker 1", 5.5, 6.5),
        FaultWindow("kill-leader", "broker 2", 8.0, 8.5),
    ]
    report = check(events, [], faults)
    assert set(report.unavailability) == {"kill-leader", "pause"}
    kill = report.unavailability["kill-leader"]
    assert kill.windows_s == pytest.approx((3.0, 0.1))
    assert kill.max_s == pytest.approx(3.0)
    assert kill.p50_s == pytest.approx(0.1)
    assert report.unavailability["pause"].windows_s == pytest.approx((1.0,))


def test_a_partition_still_waiting_at_the_end_counts_to_the_end() -> None:
    events: list[Event] = [
        Send(0.0, "p", False, 0, b"a"),
        Ack(0.1, "p", 0, 0, b"a"),
        Send(1.0, "p", False, 0, b"b"),
        Failure(9.0, "p", 0, b"b", "timed out"),
    ]
    report = check(events, [], [FaultWindow("kill-zookeeper", "zk 1", 0.5, 2.0)])
    assert report.unavailability["kill-zookeeper"].max_s == pytest.approx(8.5)


# --- transactions (read_committed) -------------------------------------------------------------


def _txn(
    number: int, outcome: str, partitions: Sequence[int] = (0, 1), size: int = 4
) -> Transaction:
    records = tuple(
        (partitions[k % len(partitions)], f"tx0-{number}-{k}".encode()) for k in range(size)
    )
    return Transaction(float(number), "tx0", number, outcome, records)


def _visible(*txns: Transaction, partitions: int = 2) -> list[CommittedLog]:
    """What read_committed would show if every record of ``txns`` were written in order, each
    transaction followed by its marker (one offset)."""
    logs: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    next_offset = dict.fromkeys(range(partitions), 0)
    for txn in txns:
        for partition, value in txn.records:
            logs[partition].append((next_offset[partition], value))
            next_offset[partition] += 1
        for partition in {p for p, _ in txn.records}:
            next_offset[partition] += 1  # the commit marker
    return [CommittedLog(p, tuple(records)) for p, records in logs.items()]


def test_whole_committed_and_invisible_aborted_transactions_are_clean() -> None:
    committed, aborted = _txn(0, "committed"), _txn(1, "aborted")
    unknown_in, unknown_out = _txn(2, "unknown"), _txn(3, "unknown")
    events: list[Event] = [committed, aborted, unknown_in, unknown_out]
    report = check(events, [], committed_logs=_visible(committed, unknown_in))
    assert report.clean, report
    txns = report.transactions
    assert (txns.committed, txns.aborted, txns.unknown, txns.unknown_visible) == (1, 1, 2, 1)
    assert txns.records_visible == 8


def test_a_committed_transaction_missing_a_record_is_lost() -> None:
    committed = _txn(0, "committed")
    logs = [
        CommittedLog(log.partition, tuple(r for r in log.records if r[1] != b"tx0-0-3"))
        for log in _visible(committed)
    ]
    report = check([committed], [], committed_logs=logs)
    assert [(v.kind, v.values) for v in report.transactions.examples()] == [("lost", (b"tx0-0-3",))]
    assert not report.clean


def test_a_transaction_record_seen_twice_is_duplicated() -> None:
    committed = _txn(0, "committed", partitions=(0,))
    (log,) = _visible(committed, partitions=1)
    logs = [CommittedLog(0, (*log.records, (9, b"tx0-0-1")))]
    report = check([committed], [], committed_logs=logs)
    assert [(v.kind, v.values) for v in report.transactions.examples()] == [
        ("duplicated", (b"tx0-0-1",))
    ]


def test_an_aborted_transaction_visible_under_read_committed_is_a_violation() -> None:
    committed, aborted = _txn(0, "committed"), _txn(1, "aborted")
    report = check([committed, aborted], [], committed_logs=_visible(committed, aborted))
    assert [(v.kind, v.number) for v in report.transactions.examples()] == [("aborted visible", 1)]
    assert report.transactions.aborted_visible[0].values == tuple(v for _, v in aborted.records)


def test_an_unknown_transaction_partly_visible_is_partial() -> None:
    unknown = _txn(0, "unknown")
    logs = [log for log in _visible(unknown) if log.partition == 0]  # partition 1's half gone
    report = check([unknown], [], committed_logs=[*logs, CommittedLog(1, ())])
    assert [(v.kind, v.values) for v in report.transactions.examples()] == [
        ("partial", (b"tx0-0-0", b"tx0-0-2"))
    ]


@pytest.mark.parametrize("outcome", ["committed", "unknown"])
def test_a_transaction_out_of_produced_order_on_a_partition_is_reordered(outcome: str) -> None:
    txn = _txn(0, outcome, partitions=(0,), size=3)
    logs = [CommittedLog(0, ((0, b"tx0-0-0"), (1, b"tx0-0-2"), (2, b"tx0-0-1")))]
    report = check([txn], [], committed_logs=logs)
    assert [(v.kind, v.values) for v in report.transactions.examples()] == [
        ("reordered", (b"tx0-0-1", b"tx0-0-2"))
    ]


def test_a_transaction_record_on_another_partition_is_reordered() -> None:
    txn = _txn(0, "committed", partitions=(0,), size=2)
    logs = [CommittedLog(0, ((0, b"tx0-0-0"),)), CommittedLog(1, ((0, b"tx0-0-1"),))]
    report = check([txn], [], committed_logs=logs)
    assert [v.kind for v in report.transactions.examples()] == ["reordered"]


def test_without_a_read_committed_read_transactions_are_only_counted() -> None:
    report = check([_txn(0, "committed"), _txn(1, "aborted"), _txn(2, "unknown")], [])
    assert report.clean
    txns = report.transactions
    assert (txns.committed, txns.aborted, txns.unknown) == (1, 1, 1)


def test_a_transaction_outcome_must_be_known_to_the_history() -> None:
    with pytest.raises(ValueError, match="outcome"):
        _txn(0, "maybe")

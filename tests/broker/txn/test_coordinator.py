"""The pure transaction coordinator: epochs and fencing, the transaction life cycle, retries,
timeouts, expiry, and rebuilding from its own records (the failover path)."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.txn.coordinator import MAX_EPOCH, MarkerJob, TransactionCoordinator
from odradek.broker.txn.records import TxnState, decode_key, decode_value
from odradek.errors import ErrorCode

A = TopicPartition("a", 0)
B = TopicPartition("b", 1)


class Log:
    """The coordinator's records, as its partition would hold them."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes | None]] = []

    def take(self, outcome):  # type: ignore[no-untyped-def]
        self.records.extend(outcome.records)
        return outcome


def started(log: Log, coordinator: TransactionCoordinator, tid: str = "t") -> tuple[int, int]:
    result = log.take(coordinator.init_producer_id(0, tid, 60_000, new_producer_id=100)).response
    assert result.error is ErrorCode.NONE
    return result.producer_id, result.producer_epoch


def test_init_allocates_then_bumps_the_epoch_and_fences_the_old_one() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    assert coordinator.needs_producer_id("t")
    pid, epoch = started(log, coordinator)
    assert (pid, epoch) == (100, 0)
    assert not coordinator.needs_producer_id("t")
    again = log.take(coordinator.init_producer_id(1, "t", 60_000)).response
    assert (again.error, again.producer_id, again.producer_epoch) == (ErrorCode.NONE, 100, 1)
    # The producer of epoch 0 is fenced everywhere.
    add = coordinator.add_partitions(2, "t", 100, 0, [A]).response
    assert add == {A: ErrorCode.PRODUCER_FENCED}
    assert coordinator.end_txn(2, "t", 100, 0, True).response is ErrorCode.PRODUCER_FENCED
    assert coordinator.end_txn(2, "t", 99, 1, True).response is (
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    )


def test_a_transaction_commits_through_prepare_markers_and_complete() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    pid, epoch = started(log, coordinator)
    assert log.take(coordinator.add_partitions(5, "t", pid, epoch, [A])).response == {
        A: ErrorCode.NONE
    }
    # Adding what is already there writes nothing.
    assert coordinator.add_partitions(6, "t", pid, epoch, [A]).records == ()
    log.take(coordinator.add_partitions(7, "t", pid, epoch, [B]))
    meta = coordinator.get("t")
    assert meta is not None
    assert meta.state is TxnState.ONGOING
    assert meta.start_ms == 5
    ended = log.take(coordinator.end_txn(8, "t", pid, epoch, True))
    assert ended.response is ErrorCode.NONE
    assert ended.markers == (MarkerJob("t", pid, epoch, True, frozenset({A, B})),)
    # While the markers are written: retries and new requests wait.
    assert coordinator.end_txn(9, "t", pid, epoch, True).response is (
        ErrorCode.CONCURRENT_TRANSACTIONS
    )
    assert coordinator.end_txn(9, "t", pid, epoch, False).response is ErrorCode.INVALID_TXN_STATE
    assert coordinator.add_partitions(9, "t", pid, epoch, [A]).response == {
        A: ErrorCode.CONCURRENT_TRANSACTIONS
    }
    assert coordinator.init_producer_id(9, "t", 60_000).response.error is (
        ErrorCode.CONCURRENT_TRANSACTIONS
    )
    assert log.take(coordinator.complete(10, ended.markers[0])).response is True
    meta = coordinator.get("t")
    assert meta is not None
    assert meta.state is TxnState.COMPLETE_COMMIT
    assert not meta.partitions
    # A retried EndTxn after completion is answered as done; the other way is refused.
    assert coordinator.end_txn(11, "t", pid, epoch, True).response is ErrorCode.NONE
    assert coordinator.end_txn(11, "t", pid, epoch, False).response is ErrorCode.INVALID_TXN_STATE


def test_end_without_a_transaction_is_an_invalid_state() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    pid, epoch = started(log, coordinator)
    assert coordinator.end_txn(1, "t", pid, epoch, False).response is ErrorCode.INVALID_TXN_STATE


def test_init_during_an_open_transaction_aborts_it_under_a_new_epoch() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    pid, epoch = started(log, coordinator)
    log.take(coordinator.add_partitions(1, "t", pid, epoch, [A]))
    fenced = log.take(coordinator.init_producer_id(2, "t", 60_000))
    assert fenced.response.error is ErrorCode.CONCURRENT_TRANSACTIONS
    assert fenced.markers == (MarkerJob("t", pid, epoch + 1, False, frozenset({A})),)
    # The zombie cannot commit; the new producer gets the next epoch once the abort is done.
    assert coordinator.end_txn(3, "t", pid, epoch, True).response is ErrorCode.PRODUCER_FENCED
    log.take(coordinator.complete(4, fenced.markers[0]))
    again = log.take(coordinator.init_producer_id(5, "t", 60_000)).response
    assert (again.error, again.producer_epoch) == (ErrorCode.NONE, epoch + 2)


def test_timeouts_are_checked_and_open_transactions_time_out() -> None:
    log, coordinator = Log(), TransactionCoordinator(max_timeout_ms=1_000)
    too_long = coordinator.init_producer_id(0, "t", 1_001, new_producer_id=1)
    assert too_long.response.error is ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert coordinator.init_producer_id(0, "t", 0, new_producer_id=1).response.error is (
        ErrorCode.INVALID_TRANSACTION_TIMEOUT
    )
    result = log.take(coordinator.init_producer_id(0, "t", 500, new_producer_id=1)).response
    log.take(coordinator.add_partitions(100, "t", 1, result.producer_epoch, [A]))
    assert coordinator.next_timeout_ms() == 600
    assert coordinator.abort_timed_out(599).response == []
    aborted = log.take(coordinator.abort_timed_out(600))
    assert aborted.response == ["t"]
    assert aborted.markers == (MarkerJob("t", 1, 1, False, frozenset({A})),)
    assert coordinator.next_timeout_ms() is None


def test_idle_ids_expire_with_a_tombstone() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    started(log, coordinator, "old")
    log.take(coordinator.init_producer_id(50, "new", 60_000, new_producer_id=7))
    expired = log.take(coordinator.expire_ids(100, 60))
    assert expired.response == ["old"]
    assert expired.records == ((log.records[-1][0], None),)
    assert decode_key(expired.records[0][0]) == "old"
    assert coordinator.get("old") is None
    assert coordinator.get("new") is not None


def test_the_epoch_overflow_takes_a_new_producer_id() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    started(log, coordinator)
    for now in range(MAX_EPOCH):
        log.take(coordinator.init_producer_id(now, "t", 60_000))
    assert coordinator.needs_producer_id("t")
    result = coordinator.init_producer_id(1, "t", 60_000, new_producer_id=555).response
    assert (result.producer_id, result.producer_epoch) == (555, 0)


def test_a_new_coordinator_rebuilds_the_state_and_finishes_what_was_preparing() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    pid, epoch = started(log, coordinator, "preparing")
    log.take(coordinator.add_partitions(1, "preparing", pid, epoch, [A, B]))
    log.take(coordinator.end_txn(2, "preparing", pid, epoch, False))
    other = log.take(coordinator.init_producer_id(3, "open", 60_000, new_producer_id=9)).response
    log.take(coordinator.add_partitions(4, "open", 9, other.producer_epoch, [A]))

    successor = TransactionCoordinator()
    jobs = successor.load(log.records)
    assert jobs == [MarkerJob("preparing", pid, epoch, False, frozenset({A, B}))]
    assert successor.transactions() == coordinator.transactions()
    meta = successor.get("open")
    assert meta is not None
    assert meta.state is TxnState.ONGOING
    assert decode_value("open", log.records[-1][1] or b"").partitions == frozenset({A})


def test_verification_answers_whether_partitions_are_in_the_transaction() -> None:
    log, coordinator = Log(), TransactionCoordinator()
    pid, epoch = started(log, coordinator)
    log.take(coordinator.add_partitions(1, "t", pid, epoch, [A]))
    verified = coordinator.add_partitions(2, "t", pid, epoch, [A, B], verify_only=True)
    assert verified.records == ()
    assert verified.response == {A: ErrorCode.NONE, B: ErrorCode.INVALID_TXN_STATE}

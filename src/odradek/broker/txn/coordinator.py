"""``TransactionCoordinator``: the transactional ids of one ``__transaction_state`` partition,
as a pure state machine (KIP-98, KIP-360, KIP-588).

Every operation takes ``now_ms`` and returns a ``TxnOutcome``: the records to append to the
partition (one per changed id), the response, and the marker jobs to run once the records are
replicated (each job writes a COMMIT or ABORT marker to every partition of a transaction;
when all are written the runtime calls ``complete``). State is rebuilt by replaying the
partition (``load``), which also returns the jobs of transactions that were preparing when the
previous coordinator stopped: the new coordinator finishes them.

Rules kept (Kafka's ``TransactionCoordinator``):

- a producer is fenced by its epoch: requests with the id's producer id but another epoch get
  PRODUCER_FENCED, with another producer id INVALID_PRODUCER_ID_MAPPING; InitProducerId bumps
  the epoch (a new producer id and epoch 0 once the epoch would overflow);
- InitProducerId while a transaction is open aborts it under a bumped epoch (the old producer
  is fenced) and answers CONCURRENT_TRANSACTIONS; while one is being committed or aborted, any
  new request answers CONCURRENT_TRANSACTIONS (the client retries);
- ``transaction.timeout.ms`` above ``transaction.max.timeout.ms`` (or not positive) is
  INVALID_TRANSACTION_TIMEOUT; an open transaction older than its timeout is aborted under a
  bumped epoch (``abort_timed_out``);
- EndTxn repeated after its transaction completed the same way answers NONE (a retry); the
  other way, or with no transaction, INVALID_TXN_STATE;
- an idle id unused for ``transactional.id.expiration.ms`` is removed (``expire_ids``).

Not thread-safe: the runtime calls it on the event loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from odradek._types import TopicPartition
from odradek.broker.txn.records import (
    TransactionMetadata,
    TxnState,
    encode_key,
    encode_value,
    replay,
)
from odradek.errors import ErrorCode

__all__ = [
    "InitProducerIdResult",
    "MarkerJob",
    "TransactionCoordinator",
    "TxnOutcome",
]

R = TypeVar("R")
#: Past this epoch InitProducerId moves the id to a new producer id (Kafka's Short.MAX - 1).
MAX_EPOCH = 32_766
_Record = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class MarkerJob:
    """Write ``commit``/abort markers of ``producer_id`` at ``producer_epoch`` to
    ``partitions``, then complete ``transactional_id``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class TxnOutcome(Generic[R]):
    records: tuple[_Record, ...]
    response: R
    markers: tuple[MarkerJob, ...] = ()


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


def _record(meta: TransactionMetadata) -> _Record:
    return encode_key(meta.transactional_id), encode_value(meta)


def _job(meta: TransactionMetadata) -> MarkerJob:
    return MarkerJob(
        meta.transactional_id,
        meta.producer_id,
        meta.producer_epoch,
        meta.state is TxnState.PREPARE_COMMIT,
        meta.partitions,
    )


class TransactionCoordinator:
    """See the module docstring.

    Args:
        max_timeout_ms: ``transaction.max.timeout.ms``.
    """

    def __init__(self, max_timeout_ms: int = 900_000) -> None:
        self._max_timeout_ms = max_timeout_ms
        self._txns: dict[str, TransactionMetadata] = {}

    # --- loading and inspection -----------------------------------------------------------

    def load(self, records: Iterable[tuple[bytes | None, bytes | None]]) -> list[MarkerJob]:
        """Replaces the state with the replay of ``records``; returns the marker jobs of the
        transactions that were being committed or aborted."""
        self._txns = replay(records)
        return [_job(meta) for meta in self._txns.values() if meta.state.is_preparing]

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    def transactions(self) -> list[TransactionMetadata]:
        """Every id's state, by id."""
        return [self._txns[key] for key in sorted(self._txns)]

    def needs_producer_id(self, transactional_id: str) -> bool:
        """Whether InitProducerId for this id would take a new producer id."""
        meta = self._txns.get(transactional_id)
        return meta is None or meta.producer_epoch >= MAX_EPOCH

    # --- requests -------------------------------------------------------------------------

    def init_producer_id(
        self,
        now_ms: int,
        transactional_id: str,
        timeout_ms: int,
        *,
        new_producer_id: int | None = None,
        expected_producer_id: int = -1,
        expected_epoch: int = -1,
    ) -> TxnOutcome[InitProducerIdResult]:
        """InitProducerId with a transactional id (``new_producer_id``: one fresh id, needed
        when ``needs_producer_id``; ``expected_*``: KIP-360's current id and epoch)."""
        if not 0 < timeout_ms <= self._max_timeout_ms:
            return TxnOutcome((), InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT))
        meta = self._txns.get(transactional_id)
        if meta is None:
            assert new_producer_id is not None, "needs_producer_id was not honoured"
            meta = TransactionMetadata(
                transactional_id,
                new_producer_id,
                0,
                timeout_ms,
                TxnState.EMPTY,
                frozenset(),
                now_ms,
            )
            return self._answer(meta, InitProducerIdResult(ErrorCode.NONE, new_producer_id, 0))
        if expected_producer_id >= 0 and (
            expected_producer_id != meta.producer_id or expected_epoch != meta.producer_epoch
        ):
            return TxnOutcome((), InitProducerIdResult(ErrorCode.PRODUCER_FENCED))
        if meta.state.is_preparing or meta.state is TxnState.PREPARE_EPOCH_FENCE:
            return TxnOutcome((), InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        if meta.state is TxnState.ONGOING:
            fenced = self._abort_with_bumped_epoch(meta, now_ms)
            return TxnOutcome(
                (_record(fenced),),
                InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS),
                (_job(fenced),),
            )
        if meta.producer_epoch >= MAX_EPOCH:
            assert new_producer_id is not None, "needs_producer_id was not honoured"
            producer_id, epoch = new_producer_id, 0
        else:
            producer_id, epoch = meta.producer_id, meta.producer_epoch + 1
        meta = meta.moved(
            now_ms,
            producer_id=producer_id,
            producer_epoch=epoch,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=frozenset(),
            start_ms=-1,
        )
        return self._answer(meta, InitProducerIdResult(ErrorCode.NONE, producer_id, epoch))

    def add_partitions(
        self,
        now_ms: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        *,
        verify_only: bool = False,
    ) -> TxnOutcome[dict[TopicPartition, ErrorCode]]:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition):
        the error of each partition. ``verify_only`` (KIP-890): only whether each is part of
        the open transaction (INVALID_TXN_STATE if not); nothing changes."""
        meta = self._txns.get(transactional_id)
        error = self._check(meta, producer_id, producer_epoch)
        if error is ErrorCode.NONE:
            assert meta is not None
            if meta.state.is_preparing or meta.state is TxnState.PREPARE_EPOCH_FENCE:
                error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is not ErrorCode.NONE or meta is None:
            return TxnOutcome((), dict.fromkeys(partitions, error))
        if verify_only:
            ongoing = meta.state is TxnState.ONGOING
            return TxnOutcome(
                (),
                {
                    tp: ErrorCode.NONE
                    if ongoing and tp in meta.partitions
                    else ErrorCode.INVALID_TXN_STATE
                    for tp in partitions
                },
            )
        answer = dict.fromkeys(partitions, ErrorCode.NONE)
        if meta.state is TxnState.ONGOING and meta.partitions.issuperset(partitions):
            return TxnOutcome((), answer)
        meta = meta.moved(
            now_ms,
            state=TxnState.ONGOING,
            partitions=meta.partitions | frozenset(partitions),
            start_ms=now_ms if meta.state.is_idle else meta.start_ms,
        )
        return self._answer(meta, answer)

    def end_txn(
        self,
        now_ms: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
    ) -> TxnOutcome[ErrorCode]:
        """EndTxn: prepares the commit or abort; the markers follow."""
        meta = self._txns.get(transactional_id)
        error = self._check(meta, producer_id, producer_epoch)
        if error is not ErrorCode.NONE or meta is None:
            return TxnOutcome((), error)
        state = meta.state
        if state is TxnState.ONGOING:
            prepared = meta.moved(
                now_ms, state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            )
            self._txns[transactional_id] = prepared
            return TxnOutcome((_record(prepared),), ErrorCode.NONE, (_job(prepared),))
        same = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if state is same or state is TxnState.PREPARE_EPOCH_FENCE:
            return TxnOutcome((), ErrorCode.CONCURRENT_TRANSACTIONS)
        if state is done:
            return TxnOutcome((), ErrorCode.NONE)
        return TxnOutcome((), ErrorCode.INVALID_TXN_STATE)

    # --- completion and time --------------------------------------------------------------

    def complete(self, now_ms: int, job: MarkerJob) -> TxnOutcome[bool]:
        """Every marker of ``job`` is written: the transaction completes (response: whether
        the id was still in that transaction)."""
        meta = self._txns.get(job.transactional_id)
        if (
            meta is None
            or not meta.state.is_preparing
            or meta.producer_id != job.producer_id
            or meta.producer_epoch != job.producer_epoch
        ):
            return TxnOutcome((), False)
        done = meta.moved(
            now_ms,
            state=TxnState.COMPLETE_COMMIT if job.commit else TxnState.COMPLETE_ABORT,
            partitions=frozenset(),
        )
        return self._answer(done, True)

    def abort_timed_out(self, now_ms: int) -> TxnOutcome[list[str]]:
        """Aborts, under a bumped epoch, each open transaction older than its timeout;
        returns their ids."""
        records = []
        jobs = []
        ids = []
        for meta in list(self._txns.values()):
            if meta.state is TxnState.ONGOING and meta.start_ms + meta.timeout_ms <= now_ms:
                aborted = self._abort_with_bumped_epoch(meta, now_ms)
                records.append(_record(aborted))
                jobs.append(_job(aborted))
                ids.append(meta.transactional_id)
        return TxnOutcome(tuple(records), ids, tuple(jobs))

    def expire_ids(self, now_ms: int, expiration_ms: int) -> TxnOutcome[list[str]]:
        """Removes idle ids unused for ``expiration_ms`` (tombstones); returns them."""
        expired = [
            meta.transactional_id
            for meta in self._txns.values()
            if meta.state.is_idle and meta.last_update_ms + expiration_ms <= now_ms
        ]
        for transactional_id in expired:
            del self._txns[transactional_id]
        return TxnOutcome(tuple((encode_key(t), None) for t in expired), expired)

    def next_timeout_ms(self) -> int | None:
        """When the oldest open transaction times out (None: none open)."""
        deadlines = [
            meta.start_ms + meta.timeout_ms
            for meta in self._txns.values()
            if meta.state is TxnState.ONGOING
        ]
        return min(deadlines) if deadlines else None

    # --- helpers --------------------------------------------------------------------------

    def _abort_with_bumped_epoch(
        self, meta: TransactionMetadata, now_ms: int
    ) -> TransactionMetadata:
        aborted = meta.moved(
            now_ms,
            producer_epoch=min(meta.producer_epoch + 1, MAX_EPOCH + 1),
            state=TxnState.PREPARE_ABORT,
        )
        self._txns[meta.transactional_id] = aborted
        return aborted

    def _answer(self, meta: TransactionMetadata, response: R) -> TxnOutcome[R]:
        self._txns[meta.transactional_id] = meta
        return TxnOutcome((_record(meta),), response)

    @staticmethod
    def _check(meta: TransactionMetadata | None, producer_id: int, epoch: int) -> ErrorCode:
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED
        return ErrorCode.NONE

"""``PartitionTransactions``: a partition's ``TransactionIndex`` kept in step with its log.

Owns when the index is loaded (on first use: a partition no transactional producer writes to
and no read_committed reader reads scans nothing), how appended batches reach it (a leader's
transactional batch by its header and assigned offset; a follower's batches and markers as
they come), its ``.txnindex`` entries (each abort appended to the file of the active
segment), and forgetting it when the log is truncated (it is rebuilt from what is left).

It also keeps the leader's transaction-verification guards (KIP-890 part 1, Kafka's
``VerificationStateEntry``): a producer with no open transaction here gets a guard before its
coordinator is asked whether this partition is in its transaction; the answer lets the batch in
only while the guard is still the registered one (or a transaction of the producer opened in
the meantime). A marker for the producer drops its guard, so a batch verified just before its
transaction was aborted is refused instead of opening a new one; the appended transactional
batch drops it too (the transaction is open from then on).

Not thread-safe: its partition calls it on the broker's event loop.
"""

from __future__ import annotations

import logging

from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError
from odradek.records.batch import BatchHeader
from odradek.records.control import ControlType, control_type, marker_coordinator_epoch
from odradek.storage.log import Log
from odradek.storage.txn_index import (
    AbortedTxn,
    TransactionIndex,
    append_aborted,
    load_transaction_index,
)

__all__ = ["PartitionTransactions"]

logger = logging.getLogger(__name__)


class PartitionTransactions:
    """See the module docstring.

    Args:
        log: the partition's log.
    """

    __slots__ = ("_guards", "_index", "_log")

    def __init__(self, log: Log) -> None:
        self._log = log
        self._index: TransactionIndex | None = None
        self._guards: dict[int, object] = {}

    def verification_guard(self, producer_id: int, high_watermark: int) -> object | None:
        """None when ``producer_id`` has a transaction open here (no verification needed);
        otherwise its guard (the one registered already, or a new one)."""
        if self.index(high_watermark).is_open(producer_id):
            return None
        return self._guards.setdefault(producer_id, object())

    def verification_holds(self, producer_id: int, guard: object, high_watermark: int) -> bool:
        """Whether a batch verified under ``guard`` may be appended now: the guard is still
        the producer's, or the producer has a transaction open here."""
        return self._guards.get(producer_id) is guard or self.index(high_watermark).is_open(
            producer_id
        )

    def index(self, high_watermark: int) -> TransactionIndex:
        """The index, loaded from the log on first use."""
        index = self._index
        if index is None:
            index = self._index = load_transaction_index(self._log, high_watermark)
        return index

    @property
    def loaded(self) -> bool:
        return self._index is not None

    def reset(self) -> None:
        """The log was truncated: the index is rebuilt from it at next use."""
        self._index = None
        self._guards.clear()

    def last_stable_offset(self, high_watermark: int) -> int:
        return self.index(high_watermark).last_stable_offset(high_watermark)

    def aborted_between(self, start: int, end: int, high_watermark: int) -> list[AbortedTxn]:
        return self.index(high_watermark).aborted_between(start, end)

    def on_leader_batch(self, header: BatchHeader, base_offset: int, high_watermark: int) -> None:
        """A leader appended a transactional data batch at ``base_offset``."""
        self._guards.pop(header.producer_id, None)
        self.index(high_watermark).on_data(header.producer_id, base_offset)

    def on_marker(
        self,
        producer_id: int,
        marker_offset: int,
        commit: bool,
        high_watermark: int,
        coordinator_epoch: int = -1,
    ) -> AbortedTxn | None:
        """A marker was appended at ``marker_offset`` (leader or follower)."""
        self._guards.pop(producer_id, None)
        index = self.index(high_watermark)
        entry = index.on_marker(producer_id, marker_offset, commit, coordinator_epoch)
        if entry is not None:
            index.forget_before(self._log.log_start_offset)
        if entry is not None:
            try:
                append_aborted(self._log.directory, self._log.segments()[-1].base_offset, entry)
            except OSError as error:  # rebuilt from the log at the next load
                logger.warning("%s: cannot write .txnindex: %s", self._log.topic_partition, error)
        return entry

    def on_follower_batch(
        self, data: ReadableBuffer, position: int, header: BatchHeader, high_watermark: int
    ) -> None:
        """A follower appended the transactional batch at ``position`` of ``data`` (data or
        marker; offsets as its leader assigned them)."""
        if not header.is_control:
            self.index(high_watermark).on_data(header.producer_id, header.base_offset)
            return
        try:
            kind = control_type(data, header, position)
        except CorruptRecordError as error:
            logger.warning(
                "%s: unreadable marker at %d: %s",
                self._log.topic_partition,
                header.base_offset,
                error,
            )
            return
        if kind in (ControlType.ABORT, ControlType.COMMIT):
            self.on_marker(
                header.producer_id,
                header.base_offset,
                kind == ControlType.COMMIT,
                high_watermark,
                marker_coordinator_epoch(data, header, position),
            )

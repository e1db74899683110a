"""One partition as this broker holds it: its log, its leader epoch, and the high watermark.

The log end offset (LEO) is where the next record goes; the high watermark (HW) is the offset
below which records are committed — held by every in-sync replica — and visible to consumers.

As leader the partition keeps each follower's state (``isr.FollowerState``: its LEO from its
fetches, when it was last caught up). ``update_follower_fetch`` records a follower's fetch,
proposes it for the ISR once it caught up, and moves HW to the smallest LEO over the ISR
(a leader alone in its ISR commits each append at once). ``maybe_shrink_isr`` (run every half
``replica.lag.time.max.ms``) proposes dropping followers that were not caught up within the
lag time. ISR changes are proposed, not made: ``on_isr_change`` sends them to the controller
(AlterPartition) and ``on_alter_partition_result`` applies its answer. One change is in
flight at a time (a refusal for a stale state keeps it so until the next LeaderAndIsr); until
it commits, HW counts the committed ISR plus any replica proposed to join
(``isr.maximal_isr``). The decisions themselves are ``isr``'s, pure.

Idempotent producers (KIP-98): the partition keeps its log's producer state
(``storage.producer_state``), loaded with it from the newest ``.snapshot`` and the batches after
it. A leader's idempotent batch is checked first (a duplicate is answered with its original
offsets and not appended; a gap, a fenced epoch or an unknown producer is refused), and every
appended batch, leader's or follower's, is recorded, so a follower holds its leader's producer
state when it takes over. A truncation reloads the state below the truncation point; moving
the log start offset keeps it (KIP-360). A snapshot is written when an idempotent append
rolled the log, and at shutdown (``write_producer_snapshot``).

The HW starts at the LEO for a single-replica partition; a replicated one starts at the HW
its log was given (the ``replication-offset-checkpoint`` at start-up), or 0, kept within
[log start offset, LEO].

Thread safety: called from the broker's event loop; the log itself is thread-safe, and the
storage thread only flushes and deletes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.broker.replication.isr import (
    FollowerState,
    IsrChange,
    can_join_isr,
    follower_fetched,
    high_watermark,
    maximal_isr,
    out_of_sync_replicas,
    reset_follower,
)
from odradek.errors import ErrorCode, KafkaError, KafkaStorageError, OffsetOutOfRangeError
from odradek.records.batch import (
    HEADER_SIZE,
    PRODUCER_ID_OFFSET,
    has_transactional_batch,
    parse_header,
    validate_batch,
)
from odradek.records.control import build_marker_batch
from odradek.storage.leader_epoch_cache import EpochEndOffset
from odradek.storage.log import AppendInfo, Log, LogReadInfo
from odradek.storage.producer_snapshots import (
    delete_snapshots_after,
    load_producer_state,
    write_snapshot,
)
from odradek.storage.producer_state import ProducerState
from odradek.storage.segment import TimestampAndOffset
from odradek.storage.txn_index import AbortedTxn
from odradek.storage.txn_state import PartitionTransactions

logger = logging.getLogger(__name__)

#: AlterPartition refusals after which the leader may propose again at once; any other
#: refusal means its state is stale and it waits for the controller's LeaderAndIsr.
_PROPOSE_AGAIN = frozenset(
    {ErrorCode.INELIGIBLE_REPLICA, ErrorCode.INVALID_REQUEST, ErrorCode.OPERATION_NOT_ATTEMPTED}
)
#: Kafka's ``producer.id.expiration.ms`` and ``producer.id.expiration.check.interval.ms``.
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000


class Partition:
    """A partition led by this broker.

    Args:
        log: the partition's log.
        broker_id: this broker, the leader.
        replicas: every replica's broker id (the assignment).
        leader_epoch: the current leader epoch, written into appended batches.
        on_high_watermark: called with the partition after its high watermark moved
            (``advance_high_watermark``): wakes delayed fetches and acks=all produces.
        on_leader_append: called with the partition after each append as leader — a
            producer's batch, a transaction marker, a coordinator's write — before its high
            watermark moves: wakes the followers' fetches long-polling on it, whatever path
            the append came by.
        on_isr_change: called with a proposed ISR change (the AlterPartition sender); without
            one (a single broker, no controller) a proposal commits at once.
        clock: the time producer-state entries expire by.
        producer_id_expiration_ms: ``producer.id.expiration.ms``.
    """

    def __init__(
        self,
        topic_partition: TopicPartition,
        log: Log,
        *,
        broker_id: int,
        replicas: list[int],
        leader_epoch: int = 0,
        on_high_watermark: Callable[[Partition], None] | None = None,
        on_leader_append: Callable[[Partition], None] | None = None,
        on_isr_change: Callable[[IsrChange], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.topic_partition = topic_partition
        self.log = log
        self._clock = clock
        self._producer_id_expiration_ms = producer_id_expiration_ms
        #: Loaded on first use (``producer_state``): a partition no idempotent producer
        #: writes to never reads its snapshot or scans its log.
        self._producer_state: ProducerState | None = None
        self._next_expiry_check_ms = clock.now_ms() + min(
            producer_id_expiration_ms, DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS
        )
        self._snapshot_segment = -1
        #: Open and aborted transactions (KIP-98), loaded on first use.
        self.transactions = PartitionTransactions(log)
        #: Whether the leader's last append failed on storage (see ``_leader_append``).
        self._storage_failed = False
        self.broker_id = broker_id
        self.replicas = list(replicas)
        #: The committed ISR (the controller's); ``pending_isr`` is a change in flight.
        self.isr = [broker_id]
        self.leader_epoch = leader_epoch
        #: The leader's broker id: this broker unless a controller made it a follower.
        self.leader_id = broker_id
        self._pending: IsrChange | None = None
        #: The partition state's version at the controller (AlterPartition's partition epoch).
        self.partition_epoch = -1
        self._followers: dict[int, FollowerState] = {}
        self._leader_epoch_start_offset = log.log_end_offset
        self._on_high_watermark = on_high_watermark
        self._on_leader_append = on_leader_append
        self._on_isr_change = on_isr_change
        #: What producers appended and consumers read, for metrics (Kafka's BytesInPerSec,
        #: MessagesInPerSec, BytesOutPerSec; follower reads are not counted).
        self.bytes_in = 0
        self.messages_in = 0
        self.bytes_out = 0
        #: Consumer fetches this broker served as a follower (KIP-392 follower fetching).
        self.follower_reads = 0
        if len(self.replicas) > 1:
            restored = min(log.high_watermark or 0, log.log_end_offset)
            self.high_watermark = max(restored, log.log_start_offset)
        else:
            self.high_watermark = log.log_end_offset
        log.update_high_watermark(self.high_watermark)

    @property
    def producer_state(self) -> ProducerState:
        """What the log holds of each idempotent producer, loaded on first use from the
        newest snapshot and the batches after it."""
        state = self._producer_state
        if state is None:
            state = self._producer_state = load_producer_state(self.log, self._clock.now_ms())
            self._snapshot_segment = self.log.segments()[-1].base_offset
        return state

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def min_insync_replicas(self) -> int:
        """The topic's ``min.insync.replicas`` (acks=all needs that many in the ISR)."""
        return self.log.config.min_insync_replicas

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def append_as_leader(self, data: bytes | bytearray) -> AppendInfo:
        """Validates and appends a producer's batch (bytes are not copied: see Log.append).
        What the request's acks asks for is the caller's (``broker.acks``).

        An idempotent batch (producer id ≥ 0) is checked against the producer state first:
        a duplicate of one of the producer's last five batches is answered with that batch's
        offsets and not appended.

        Raises:
            KafkaError: the log's validation errors (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, ...);
                for an idempotent batch also OUT_OF_ORDER_SEQUENCE_NUMBER,
                INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID, and INVALID_RECORD for several
                batches in one append.
        """
        # The producer id (int64, big-endian) is ≥ 0 when its top byte's sign bit is clear.
        if len(data) >= HEADER_SIZE and data[PRODUCER_ID_OFFSET] < 0x80:
            info = self._append_idempotent(data)
        else:
            # ``_leader_append`` and ``_maybe_advance_high_watermark``, inline (the hot path
            # of every non-idempotent produce).
            try:
                info = self.log.append(data, leader_epoch=self.leader_epoch)
            except (KafkaStorageError, OSError):
                self._storage_failed = True
                raise
            self._storage_failed = False
            self._advance_after_append(info.last_offset + 1)
        self.bytes_in += info.size_bytes
        self.messages_in += info.records_count
        return info

    def _advance_after_append(self, log_end_offset: int) -> None:
        """After every leader's append that left the log at ``log_end_offset``: the
        ``on_leader_append`` listener (followers waiting in a long poll fetch it now, not at
        ``replica.fetch.wait.max.ms``), then ``_maybe_advance_high_watermark`` with a
        shortcut for the leader alone in the ISR (its log end offset is the high
        watermark)."""
        if self._on_leader_append is not None:
            self._on_leader_append(self)
        broker_id = self.broker_id
        if self.leader_id != broker_id:
            return
        isr = self.isr
        if self._pending is None and len(isr) == 1 and isr[0] == broker_id:
            if log_end_offset > self.high_watermark:
                # ``advance_high_watermark`` inline: the offset is the log end just appended
                # (no cap to read back), ~1.2k instructions less per append (callgrind).
                self.high_watermark = log_end_offset
                self.log.update_high_watermark(log_end_offset)
                if self._on_high_watermark is not None:
                    self._on_high_watermark(self)
        else:
            self._maybe_advance_high_watermark()

    def _leader_append(self, data: bytes | bytearray) -> AppendInfo:
        """``Log.append`` for the leader, remembering whether the last one failed on storage
        (``_storage_failed``: a full or failing disk; cleared by the next append that
        succeeds)."""
        try:
            info = self.log.append(data, leader_epoch=self.leader_epoch)
        except (KafkaStorageError, OSError):
            self._storage_failed = True
            raise
        self._storage_failed = False
        return info

    def _append_idempotent(self, data: bytes | bytearray) -> AppendInfo:
        state = self._producer_state
        if state is not None and (entry := state.next_in_order(data)) is not None:
            # The producer's next batch in order, ``check`` and ``update`` with no header.
            info = self._leader_append(data)
            now_ms = self._clock.now_ms()
            state.record_next(entry, data, info.first_offset, info.max_timestamp, now_ms)
            if (
                now_ms >= self._next_expiry_check_ms
                or self.log.active_base_offset != self._snapshot_segment
            ):
                self._after_producer_append(now_ms)  # an expiry check or a snapshot due
            self._advance_after_append(info.last_offset + 1)
            return info
        header = parse_header(data)
        if header.size != len(data):
            raise KafkaError(
                "an idempotent producer's append must be one record batch",
                code=ErrorCode.INVALID_RECORD,
            )
        state = self.producer_state
        try:
            duplicate = state.check(header)
        except KafkaError as error:
            # Kafka validates before it looks at sequences: a corrupt batch is
            # CORRUPT_MESSAGE (retriable), whatever its damaged header says. The in-order
            # case needs no extra pass: the append validates it.
            validate_batch(data)
            if self._storage_failed and error.error_code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
                # The gap is the batch the disk just refused (a pipelined request sent
                # after it). Kafka would have taken the log dir offline and answered this
                # one KAFKA_STORAGE_ERROR too; OUT_OF_ORDER makes librdkafka bump the epoch
                # and resend its queue under new sequence numbers, duplicating whatever an
                # earlier, unanswered request had written (found by the fault suite).
                raise KafkaStorageError(
                    f"{self.topic_partition}: a write before this batch failed on storage; "
                    "retry in order"
                ) from None
            raise
        if duplicate is not None:
            validate_batch(data)  # a damaged retry is not answered as a success
            logger.debug(
                "%s: producer %d epoch %d sequences %d-%d already at offsets %d-%d",
                self.topic_partition,
                header.producer_id,
                header.producer_epoch,
                duplicate.first_sequence,
                duplicate.last_sequence,
                duplicate.first_offset,
                duplicate.last_offset,
            )
            return AppendInfo(
                duplicate.first_offset,
                duplicate.last_offset,
                duplicate.max_timestamp,
                -1,
                header.records_count,
                len(data),
                self.log.log_start_offset,
            )
        info = self._leader_append(data)
        now_ms = self._clock.now_ms()
        state.update(header, info.first_offset, info.max_timestamp, now_ms)
        if header.is_transactional:
            self.transactions.on_leader_batch(header, info.first_offset, self.high_watermark)
        self._after_producer_append(now_ms)
        self._advance_after_append(info.last_offset + 1)
        return info

    def _after_producer_append(self, now_ms: int) -> None:
        """Snapshots the producer state when the log rolled; expires idle producers every
        ``producer.id.expiration.check.interval.ms``."""
        if now_ms >= self._next_expiry_check_ms:
            self._next_expiry_check_ms = now_ms + min(
                self._producer_id_expiration_ms, DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS
            )
            self.expire_producers(now_ms)
        active = self.log.active_base_offset
        if active != self._snapshot_segment:
            self._snapshot_segment = active
            self.write_producer_snapshot()

    def expire_producers(self, now_ms: int) -> list[int]:
        """Forgets producers idle for ``producer.id.expiration.ms``; returns their ids."""
        expired = self.producer_state.remove_expired(now_ms, self._producer_id_expiration_ms)
        if expired:
            logger.info(
                "%s: producer ids %s expired (idle for %d ms)",
                self.topic_partition,
                expired,
                self._producer_id_expiration_ms,
            )
        return expired

    def write_producer_snapshot(self) -> None:
        """Writes the producer state as ``<log end offset>.snapshot`` (at a roll, at
        shutdown). An OSError is logged: the next load scans the log instead."""
        state = self._producer_state
        if state is None:
            return  # never loaded: the snapshot and the log hold what it would say
        state.end_offset = self.log.log_end_offset
        try:
            write_snapshot(self.log.directory, state, self.log.log_start_offset)
        except OSError as error:
            logger.warning("%s: cannot write a producer snapshot: %s", self.topic_partition, error)

    # --- transactions (KIP-98) --------------------------------------------------------------

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> AppendInfo:
        """Appends the marker ending ``producer_id``'s transaction (WriteTxnMarkers).

        Raises:
            KafkaError: INVALID_PRODUCER_EPOCH (the producer has a newer epoch here than the
                marker's), TRANSACTION_COORDINATOR_FENCED (a marker of this producer came from
                a newer coordinator epoch), NOT_LEADER_OR_FOLLOWER, or the log's append errors.
        """
        if not self.is_leader:
            raise KafkaError(
                f"{self.topic_partition}: not the leader", code=ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
        entry = self.producer_state.get(producer_id)
        if entry is not None and entry.producer_epoch > producer_epoch:
            raise KafkaError(
                f"{self.topic_partition}: marker of producer {producer_id} epoch "
                f"{producer_epoch}, older than its epoch {entry.producer_epoch} here",
                code=ErrorCode.INVALID_PRODUCER_EPOCH,
            )
        index = self.transactions.index(self.high_watermark)  # loaded before the append
        if coordinator_epoch < index.coordinator_epoch(producer_id):
            raise KafkaError(
                f"{self.topic_partition}: marker of producer {producer_id} from coordinator "
                f"epoch {coordinator_epoch}, older than {index.coordinator_epoch(producer_id)}",
                code=ErrorCode.TRANSACTION_COORDINATOR_FENCED,
            )
        now_ms = self._clock.now_ms()
        batch = build_marker_batch(
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch=coordinator_epoch,
            timestamp_ms=now_ms,
        )
        info = self._leader_append(batch)
        self.producer_state.update(parse_header(batch), info.first_offset, now_ms, now_ms)
        self.transactions.on_marker(
            producer_id, info.first_offset, commit, self.high_watermark, coordinator_epoch
        )
        self._advance_after_append(info.last_offset + 1)
        return info

    def append_transactional_as_coordinator(self, data: bytes) -> AppendInfo:
        """Appends a coordinator's transactional batch (TxnOffsetCommit's offsets in
        ``__consumer_offsets``: a producer id and epoch, no sequence) without the idempotence
        checks, as Kafka's coordinator-origin appends."""
        info = self._leader_append(data)
        self.transactions.on_leader_batch(
            parse_header(data), info.first_offset, self.high_watermark
        )
        self._advance_after_append(info.last_offset + 1)
        return info

    def verification_guard(self, producer_id: int) -> object | None:
        """KIP-890 part 1: see ``PartitionTransactions.verification_guard``."""
        return self.transactions.verification_guard(producer_id, self.high_watermark)

    def verification_holds(self, producer_id: int, guard: object) -> bool:
        return self.transactions.verification_holds(producer_id, guard, self.high_watermark)

    def active_producers(self) -> list[tuple[int, int, int, int, int]]:
        """DescribeProducers (KIP-664): (producer id, epoch, last sequence, last timestamp,
        first offset of its open transaction or -1) of each producer known here."""
        open_txns = self.transactions.index(self.high_watermark).open_transactions
        return [
            (
                entry.producer_id,
                entry.producer_epoch,
                entry.last_sequence,
                entry.batches[-1].max_timestamp if entry.batches else -1,
                open_txns.get(entry.producer_id, -1),
            )
            for entry in self.producer_state.entries()
        ]

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided, at most the high watermark."""
        return self.transactions.last_stable_offset(self.high_watermark)

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions that may have records in [start, end)."""
        return self.transactions.aborted_between(start, end, self.high_watermark)

    # --- leader state ----------------------------------------------------------------------

    def make_leader(
        self,
        leader_epoch: int,
        replicas: Sequence[int],
        isr: Sequence[int] | None,
        partition_epoch: int,
        now_ms: int,
    ) -> None:
        """Becomes (or stays) the leader with the controller's state. In a new leader epoch
        the followers' states start over (ISR members count as caught up now) and the epoch
        starts at the current LEO; in the same epoch (the controller repeating itself) they
        are kept. Any ISR change in flight is dropped either way.

        Args:
            isr: the controller's ISR (None: this broker alone, as without a controller).
            partition_epoch: the partition state's version at the controller.
        """
        new_epoch = leader_epoch != self.leader_epoch or not self.is_leader
        self.leader_epoch = leader_epoch
        self.replicas = list(replicas)
        self.leader_id = self.broker_id
        self.isr = [self.broker_id] if isr is None else list(isr)
        self.partition_epoch = partition_epoch
        self._pending = None
        if new_epoch:
            self._leader_epoch_start_offset = self.log.log_end_offset
        in_sync = set(self.isr)
        kept = {} if new_epoch else self._followers
        self._followers = {
            replica: kept.get(replica)
            or reset_follower(replica, in_sync=replica in in_sync, now_ms=now_ms)
            for replica in self.replicas
            if replica != self.broker_id
        }
        self._maybe_advance_high_watermark()

    def follower_state(self, replica_id: int) -> FollowerState | None:
        """What this leader knows of a follower (None: not a follower here)."""
        return self._followers.get(replica_id)

    @property
    def pending_isr(self) -> tuple[int, ...] | None:
        """The ISR proposed to the controller and not answered (or refused until the next
        LeaderAndIsr); None: no change in flight."""
        return None if self._pending is None else self._pending.new_isr

    def drop_pending_isr(self) -> None:
        """Forgets the change in flight (this broker stopped leading the partition)."""
        self._pending = None

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR plus replicas a pending change would add (counted for the HW)."""
        return maximal_isr(self.isr, self.pending_isr)

    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> None:
        """Records a follower's fetch at ``fetch_offset`` (its LEO): it may join the ISR,
        and the high watermark may move.

        Raises:
            KafkaError: NOT_LEADER_OR_FOLLOWER — this broker does not lead the partition,
                or ``replica_id`` is not one of its followers.
            OffsetOutOfRangeError: ``fetch_offset`` is past the leader's LEO (nothing is
                recorded: a follower cannot hold records the leader never had).
        """
        state = self._followers.get(replica_id)
        if not self.is_leader or state is None:
            raise KafkaError(
                f"{self.topic_partition}: broker {replica_id} is not a follower of leader "
                f"{self.leader_id} (replicas {self.replicas})",
                code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
            )
        if fetch_offset > self.log.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: follower {replica_id} fetches at {fetch_offset}, "
                f"past the log end offset {self.log.log_end_offset}"
            )
        moved = fetch_offset != state.log_end_offset
        state = follower_fetched(state, fetch_offset, self.log.log_end_offset, now_ms)
        self._followers[replica_id] = state
        if self._pending is None and can_join_isr(
            state, self.isr, self.high_watermark, self._leader_epoch_start_offset
        ):
            self._propose_isr((*self.isr, replica_id))
        elif not moved:
            return  # the HW depends on LEOs and the ISR: neither changed (an idle partition)
        self._maybe_advance_high_watermark()

    def maybe_shrink_isr(self, now_ms: int, max_lag_ms: int) -> tuple[int, ...]:
        """Proposes dropping the followers not caught up within ``max_lag_ms``
        (``replica.lag.time.max.ms``); returns them (none while a change is in flight)."""
        if not self.is_leader or self.pending_isr is not None:
            return ()
        out = out_of_sync_replicas(
            self._followers, self.isr, self.log.log_end_offset, now_ms, max_lag_ms
        )
        if out:
            logger.info(
                "%s: shrinking the ISR %s: replicas %s not caught up within %d ms",
                self.topic_partition,
                self.isr,
                list(out),
                max_lag_ms,
            )
            self._propose_isr(tuple(replica for replica in self.isr if replica not in out))
        return out

    def _propose_isr(self, new_isr: tuple[int, ...]) -> None:
        change = IsrChange(
            self.topic_partition.topic,
            self.topic_partition.partition,
            self.leader_epoch,
            new_isr,
            self.partition_epoch,
        )
        self._pending = change
        if self._on_isr_change is None:
            self.on_alter_partition_result(
                change, ErrorCode.NONE, self.leader_epoch, new_isr, self.partition_epoch + 1
            )
            return
        self._on_isr_change(change)

    def on_alter_partition_result(
        self,
        change: IsrChange,
        error: ErrorCode,
        leader_epoch: int,
        isr: Sequence[int],
        partition_epoch: int,
    ) -> bool:
        """Applies the controller's answer to ``change``, if it is the change in flight (an
        answer to an older one changes nothing). On success its ISR and partition epoch
        become the committed ones (the HW may move). A refusal for a reason that may pass
        (INELIGIBLE_REPLICA, INVALID_REQUEST, OPERATION_NOT_ATTEMPTED) drops the change: a
        later fetch or check may propose again. A refusal because this leader's state is
        stale (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, NOT_LEADER_OR_FOLLOWER,
        UNKNOWN_TOPIC_OR_PARTITION) keeps it in flight, so nothing more is proposed until the
        controller's next LeaderAndIsr brings the current state (Kafka does the same).
        Returns whether the ISR changed."""
        if change != self._pending or not self.is_leader:
            return False
        if error is not ErrorCode.NONE:
            retry = error in _PROPOSE_AGAIN
            logger.info(
                "%s: the controller refused ISR %s (leader epoch %d, partition epoch %d): %s; %s",
                self.topic_partition,
                list(change.new_isr),
                change.leader_epoch,
                change.partition_epoch,
                error.name,
                "may propose again" if retry else "waiting for the controller's LeaderAndIsr",
            )
            if retry:
                self._pending = None
            return False
        if leader_epoch != self.leader_epoch or partition_epoch <= self.partition_epoch:
            return False  # an answer about an older state
        self._pending = None
        self.isr = list(isr)
        self.partition_epoch = partition_epoch
        self._maybe_advance_high_watermark()
        return True

    def _maybe_advance_high_watermark(self) -> None:
        if not self.is_leader:
            return
        offset = high_watermark(
            self.broker_id, self.log.log_end_offset, self._followers, self.maximal_isr
        )
        if offset > self.high_watermark:
            self.advance_high_watermark(offset)

    def advance_high_watermark(self, offset: int) -> bool:
        """Moves the high watermark forward to ``offset`` (never back, never past the log end
        offset); tells the log (the cleaner's bound) and the listener. The one writer of
        ``high_watermark`` but ``_advance_after_append``'s inline copy. Returns whether it
        moved."""
        log_end_offset = self.log.log_end_offset
        if offset > log_end_offset:  # noqa: PLR1730 -- min() is a builtin call per append
            offset = log_end_offset
        if offset <= self.high_watermark:
            return False
        self.high_watermark = offset
        self.log.update_high_watermark(offset)
        if self._on_high_watermark is not None:
            self._on_high_watermark(self)
        return True

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = True,
        committed_only: bool = True,
        read_committed: bool = False,
    ) -> LogReadInfo:
        """Reads up to the high watermark (consumers), the last stable offset
        (``read_committed`` consumers) or the log end offset (followers).

        Raises:
            OffsetOutOfRangeError: ``fetch_offset`` outside [log start offset, LEO].
        """
        upper = self.high_watermark if committed_only else None
        if read_committed:
            upper = self.last_stable_offset
        info = self.log.read(
            fetch_offset,
            max_bytes,
            max_offset=upper,
            min_one_message=min_one_message,
        )
        if committed_only and info.records is not None:
            self.bytes_out += info.records.length
        return info

    def offset_of_max_timestamp(self) -> TimestampAndOffset | None:
        """The first record with the log's largest timestamp, or ``None`` (an empty log, or
        one whose record is at or past the high watermark)."""
        found = self.log.offset_of_max_timestamp()
        if found is None or found.offset >= self.high_watermark:
            return None
        return found

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampAndOffset | None:
        """The first record at or after the log start offset whose timestamp is at or after
        ``timestamp_ms``, or ``None`` (also for one at or past the high watermark, which a
        consumer cannot read yet)."""
        found = self.log.offset_for_timestamp(timestamp_ms)
        if found is None or found.offset >= self.high_watermark:
            return None
        return found

    # ------------------------------------------------------------------ follower

    def append_as_follower(self, data: bytes | bytearray | memoryview) -> AppendInfo:
        """Appends batches fetched from the leader as they are: offsets and leader epochs
        kept (the log records each new epoch in its leader-epoch cache).

        Raises:
            KafkaError: CORRUPT_MESSAGE, or INVALID_RECORD for offsets that go backwards.
        """
        state = self.producer_state  # loaded (if it must be) before this append
        if not self.transactions.loaded and has_transactional_batch(data):
            self.transactions.index(self.high_watermark)  # also loaded before it
        info = self.log.append(data, assign_offsets=False)
        # Producer state without checks: the leader checked (the headers were validated by
        # the append).
        position = 0
        end = len(data)
        recorded = False
        now_ms = self._clock.now_ms()
        while position < end:
            header = parse_header(data, position)
            if header.producer_id >= 0:
                state.update(header, header.base_offset, header.max_timestamp, now_ms)
                recorded = True
                if header.is_transactional:
                    self.transactions.on_follower_batch(data, position, header, self.high_watermark)
            position += header.size
        if recorded:
            self._after_producer_append(now_ms)
        return info

    def update_follower_high_watermark(self, leader_high_watermark: int) -> bool:
        """A follower's high watermark: the leader's, capped by what this replica holds
        (min(leader HW, own LEO)); forward only, through ``advance_high_watermark``."""
        return self.advance_high_watermark(min(leader_high_watermark, self.log.log_end_offset))

    def truncate_to(self, offset: int) -> bool:
        """Removes the records at or past ``offset`` (a follower reaching the divergence
        point with its leader); returns whether any went. The one place the high watermark
        moves back: never past the log end offset."""
        truncated = self.log.truncate_to(offset)
        if truncated:
            self._truncate_producer_state()
            self.transactions.reset()
        self._cap_high_watermark()
        return truncated

    def _truncate_producer_state(self) -> None:
        """The producer state below the new log end offset: reloaded from the newest snapshot
        below it when a truncated batch had changed it, otherwise kept."""
        log_end_offset = self.log.log_end_offset
        # Always: a snapshot past the new end would be read once the log grows past it.
        delete_snapshots_after(self.log.directory, log_end_offset)
        state = self._producer_state
        if state is None:
            return  # loads from what is left when first used
        if any(entry.last_offset >= log_end_offset for entry in state.entries()):
            self._producer_state = None  # reloaded below the truncation point
            self._producer_state = load_producer_state(self.log, self._clock.now_ms())
        else:
            state.end_offset = log_end_offset
        self._snapshot_segment = self.log.segments()[-1].base_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empties the log and restarts it at ``offset`` (a follower behind the leader's log
        start offset)."""
        self.log.truncate_fully_and_start_at(offset)
        self.transactions.reset()
        if self._producer_state is not None:
            self._producer_state.clear(offset)
        delete_snapshots_after(self.log.directory, -1)
        self._cap_high_watermark()
        self.advance_high_watermark(offset)  # nothing below the log start offset is left

    def _cap_high_watermark(self) -> None:
        log_end_offset = self.log.log_end_offset
        if self.high_watermark > log_end_offset:
            self.high_watermark = log_end_offset
            self.log.update_high_watermark(log_end_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> EpochEndOffset:
        """Where ``leader_epoch`` ends in this replica's log (OffsetForLeaderEpoch, KIP-101):
        the largest epoch at or below it and the start of the next one, the log end offset
        for the latest epoch, ``UNDEFINED`` (-1, -1) when unknown."""
        return self.log.end_offset_for_epoch(leader_epoch)

    def delete_records_before(self, offset: int) -> int:
        """Moves the log start offset to ``offset`` (DeleteRecords; -1 means the high
        watermark) and returns the new log start offset.

        Raises:
            OffsetOutOfRangeError: ``offset`` is past the high watermark.
        """
        target = self.high_watermark if offset == -1 else offset
        if target > self.high_watermark or target < 0:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: cannot delete records before {offset}: "
                f"the high watermark is {self.high_watermark}"
            )
        self.log.maybe_increment_log_start_offset(target)
        return self.log.log_start_offset

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic_partition}, leo={self.log_end_offset}, "
            f"hw={self.high_watermark}, epoch={self.leader_epoch})"
        )

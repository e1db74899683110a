"""One partition as this broker holds it: its log, its leader epoch, and the high watermark.

The log end offset (LEO) is where the next record goes; the high watermark (HW) is the offset
below which records are committed — held by every in-sync replica — and visible to consumers.
With one replica HW equals LEO after each append; replication moves HW by the followers'
LEOs later without reshaping produce and fetch (ARCHITECTURE.md).

Thread safety: called from the broker's event loop; the log itself is thread-safe, and the
storage thread only flushes and deletes.
"""

from __future__ import annotations

from collections.abc import Callable

from odradek._types import TopicPartition
from odradek.errors import OffsetOutOfRangeError
from odradek.storage.log import AppendInfo, Log, LogReadInfo
from odradek.storage.segment import TimestampAndOffset


class Partition:
    """A partition led by this broker.

    Args:
        log: the partition's log.
        broker_id: this broker, the leader.
        replicas: every replica's broker id (the assignment).
        leader_epoch: the current leader epoch, written into appended batches.
        on_high_watermark: called with the partition after its high watermark moved
            (``advance_high_watermark``): wakes delayed fetches and acks=all produces.
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
    ) -> None:
        self.topic_partition = topic_partition
        self.log = log
        self.broker_id = broker_id
        self.replicas = list(replicas)
        self.isr = [broker_id]
        self.leader_epoch = leader_epoch
        #: The leader's broker id: this broker unless a controller made it a follower.
        self.leader_id = broker_id
        self._on_high_watermark = on_high_watermark
        self.high_watermark = log.log_end_offset
        log.update_high_watermark(self.high_watermark)

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

        Raises:
            KafkaError: the log's validation errors (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, ...).
        """
        info = self.log.append(data, leader_epoch=self.leader_epoch)
        self._maybe_advance_high_watermark()
        return info

    def _maybe_advance_high_watermark(self) -> None:
        # One replica: everything appended is committed. Replication replaces this rule with
        # the minimum LEO over the ISR.
        if self.isr == [self.broker_id]:
            self.advance_high_watermark(self.log.log_end_offset)

    def advance_high_watermark(self, offset: int) -> bool:
        """Moves the high watermark forward to ``offset`` (never back, never past the log end
        offset); tells the log (the cleaner's bound) and the listener. The one writer of
        ``high_watermark``. Returns whether it moved."""
        offset = min(offset, self.log.log_end_offset)
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
    ) -> LogReadInfo:
        """Reads up to the high watermark (consumers) or the log end offset (followers).

        Raises:
            OffsetOutOfRangeError: ``fetch_offset`` outside [log start offset, LEO].
        """
        return self.log.read(
            fetch_offset,
            max_bytes,
            max_offset=self.high_watermark if committed_only else None,
            min_one_message=min_one_message,
        )

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampAndOffset | None:
        """The first record at or after the log start offset whose timestamp is at or after
        ``timestamp_ms``, or ``None`` (also for one at or past the high watermark, which a
        consumer cannot read yet)."""
        found = self.log.offset_for_timestamp(timestamp_ms)
        if found is None or found.offset >= self.high_watermark:
            return None
        return found

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

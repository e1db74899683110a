"""``metrics.lag``: lag in offsets and seconds from the record at the committed offset — the
batch's base timestamp, a record's own timestamp inside a (compressed) batch, LogAppendTime's
max timestamp — cached per (partition, offset), and left out when unreadable."""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek._types import TopicPartition
from odradek.broker.metrics.lag import LagReader, LeaderPosition, remote_pairs, timestamp_in
from odradek.errors import OffsetOutOfRangeError
from odradek.records.batch import CompressionType, TimestampType
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

TP = TopicPartition("t", 0)
NOW = 1_700_000_100_000


@dataclass
class Slice:
    data: bytes

    def read(self) -> bytes:
        return self.data


@dataclass
class Read:
    records: Slice | None


@dataclass
class FakePartition:
    """A log of whole batches; ``read`` returns the batch holding the offset onwards."""

    batches: list[bytes]
    high_watermark: int
    log_start_offset: int = 0
    is_leader: bool = True
    reads: list[int] = field(default_factory=list)

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = True,
        committed_only: bool = True,
    ) -> Read:
        self.reads.append(fetch_offset)
        if fetch_offset < self.log_start_offset:
            raise OffsetOutOfRangeError("below the log start")
        for index, batch in enumerate(self.batches):
            base = sum(_count(b) for b in self.batches[:index])
            if base <= fetch_offset < base + _count(batch):
                return Read(Slice(b"".join(self.batches[index:])))
        return Read(None)


def _count(batch: bytes) -> int:
    return int.from_bytes(batch[57:61], "big")


def batch(base_offset: int, timestamps: list[int], **options: object) -> bytes:
    records = [SimpleRecord(ts, b"k", b"v") for ts in timestamps]
    return build_batch(records, base_offset=base_offset, **options)  # type: ignore[arg-type]


def test_seconds_come_from_the_record_at_the_committed_offset() -> None:
    partition = FakePartition(
        [
            batch(0, [NOW - 60_000, NOW - 59_000]),
            batch(2, [NOW - 30_000, NOW - 20_000, NOW - 10_000], compression=CompressionType.GZIP),
        ],
        high_watermark=5,
    )
    reader = LagReader()

    def lag_at(offset: int) -> tuple[int, float | None]:
        [entry] = reader.lags({"g": {TP: offset}}, {TP: partition}, NOW)
        return entry.lag_offsets, entry.lag_seconds

    assert lag_at(0) == (5, 60.0)  # a batch's first record: its base timestamp
    assert lag_at(3) == (2, 20.0)  # inside a compressed batch: the record's own
    assert lag_at(5) == (0, 0.0)  # caught up: nothing read
    assert lag_at(7) == (0, 0.0)  # past the high watermark counts as caught up
    reads = len(partition.reads)
    assert lag_at(3) == (2, 20.0)
    assert len(partition.reads) == reads + 1  # the cache kept only the last scrape's entries
    assert lag_at(3) == (2, 20.0)
    assert len(partition.reads) == reads + 1  # ... so the same offset again is not read


def test_log_append_time_below_log_start_and_unreadable() -> None:
    appended = batch(0, [1, 2, 3], timestamp_type=TimestampType.LOG_APPEND_TIME)
    partition = FakePartition([appended], high_watermark=3)
    [entry] = LagReader().lags({"g": {TP: 1}}, {TP: partition}, NOW)
    assert entry.lag_seconds == (NOW - 3) / 1000  # LogAppendTime: the batch's max timestamp

    trimmed = FakePartition([batch(0, [NOW - 1_000] * 4)], high_watermark=4, log_start_offset=2)
    [entry] = LagReader().lags({"g": {TP: 0}}, {TP: trimmed}, NOW)
    assert (entry.lag_offsets, entry.lag_seconds) == (4, 1.0)  # read at the log start
    assert trimmed.reads == [2]

    broken = FakePartition([b"\x00" * 70], high_watermark=1)
    [entry] = LagReader().lags({"g": {TP: 0}}, {TP: broken}, NOW)
    assert (entry.lag_offsets, entry.lag_seconds) == (1, None)


def test_partitions_led_elsewhere_come_from_their_leaders_positions() -> None:
    follower = FakePartition([batch(0, [NOW])], high_watermark=1, is_leader=False)
    other = TopicPartition("elsewhere", 0)
    committed = {"g": {TP: 0, other: 4}, "h": {other: 9}}
    # Without positions a partition led elsewhere (a follower here, or not hosted) is left out.
    assert LagReader().lags(committed, {TP: follower}, NOW) == ()
    assert remote_pairs(committed, {TP: follower}) == {(TP, 0), (other, 4), (other, 9)}
    led = FakePartition([batch(0, [NOW])], high_watermark=1)
    assert remote_pairs(committed, {TP: led}) == {(other, 4), (other, 9)}

    remote = {
        (TP, 0): LeaderPosition(high_watermark=3, timestamp_ms=NOW - 2_500),
        (other, 4): LeaderPosition(high_watermark=10, timestamp_ms=None),
        (other, 9): LeaderPosition(high_watermark=9, timestamp_ms=None),
    }
    lags = LagReader().lags(committed, {TP: follower}, NOW, remote)
    assert [
        (e.group_id, e.topic, e.high_watermark, e.lag_offsets, e.lag_seconds) for e in lags
    ] == [
        ("g", "elsewhere", 10, 6, None),  # below the high watermark, record not read: unknown
        ("g", "t", 3, 3, 2.5),  # the leader's high watermark, not the follower's 1
        ("h", "elsewhere", 9, 0, 0.0),  # caught up
    ]
    assert follower.reads == []  # a follower's log is never read for lag
    # A pair the leaders did not answer for is left out, not guessed.
    partial = {(TP, 0): remote[TP, 0]}
    assert [(e.group_id, e.topic) for e in LagReader().lags(committed, {}, NOW, partial)] == [
        ("g", "t")
    ]


def test_timestamp_in_a_fetch_answer() -> None:
    data = batch(5, [100, 200, 300]) + batch(8, [400])
    assert timestamp_in(data, 5) == 100
    assert timestamp_in(data, 7) == 300
    assert timestamp_in(data, 8) == 400
    assert timestamp_in(data, 9) is None  # not there
    assert timestamp_in(data + data[:20], 8) == 400  # a partial batch after the one needed
    assert timestamp_in(b"\x00" * 70, 0) is None  # garbage

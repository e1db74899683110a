"""``client.simple_consumer``: fetch by offset against a live embedded broker (decoded keys,
values, headers, timestamps and timestamp types; offsets inside compressed batches; partial
batches at the end of a fetch; a message larger than max_bytes; OFFSET_OUT_OF_RANGE), multifetch
with per-partition outcomes, offsets_before (earliest, latest, by time), and the pure decoder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.simple_consumer import (
    EARLIEST,
    LATEST,
    FetchRequest,
    SimpleConsumer,
    decode_messages,
)
from odradek.errors import (
    ConfigError,
    CorruptRecordError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from odradek.records.batch import CompressionType, TimestampType
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

from .conftest import Produce

BASE_MS = 1_700_000_000_000


@pytest.fixture
def consumer(broker: Broker) -> Iterator[SimpleConsumer]:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics(
            [
                NewTopic("t", 2, 1),
                NewTopic("appended", 1, 1, {"message.timestamp.type": "LogAppendTime"}),
            ]
        ).all()
    client = SimpleConsumer(broker.bootstrap_servers)
    yield client
    client.close()


def batch_of(count: int, *, start: int = 0, size: int = 10) -> list[SimpleRecord]:
    return [
        SimpleRecord(
            BASE_MS + start + i,
            b"k%d" % (start + i),
            bytes([65 + (start + i) % 26]) * size,
            [("n", b"%d" % (start + i)), ("empty", None)],
        )
        for i in range(count)
    ]


def test_fetch_decodes_records(consumer: SimpleConsumer, produce: Produce) -> None:
    produce("t", 0, batch_of(3))
    produce("t", 0, batch_of(2, start=3))
    messages = consumer.fetch("t", 0, 0)
    assert [m.offset for m in messages] == [0, 1, 2, 3, 4]
    first = messages[0]
    assert (first.topic, first.partition) == ("t", 0)
    assert first.key == b"k0"
    assert first.value == b"A" * 10
    assert first.headers == (("n", b"0"), ("empty", None))
    assert first.timestamp == BASE_MS
    assert first.timestamp_type is TimestampType.CREATE_TIME
    assert messages[4].timestamp == BASE_MS + 4
    assert messages[4].next_offset == 5
    assert consumer.fetch("t", 0, 5) == []  # the log end: nothing, at once
    assert consumer.fetch("t", 1, 0) == []


def test_fetch_from_inside_a_compressed_batch(consumer: SimpleConsumer, produce: Produce) -> None:
    for codec in (
        CompressionType.GZIP,
        CompressionType.SNAPPY,
        CompressionType.LZ4,
        CompressionType.ZSTD,
    ):
        produce("t", 1, batch_of(4), compression=codec)
    messages = consumer.fetch("t", 1, 6)
    assert [m.offset for m in messages] == list(range(6, 16))
    assert [m.key for m in messages[:2]] == [b"k2", b"k3"]


def test_log_append_time(consumer: SimpleConsumer, produce: Produce) -> None:
    produce("appended", 0, batch_of(2))
    messages = consumer.fetch("appended", 0, 0)
    assert {m.timestamp_type for m in messages} == {TimestampType.LOG_APPEND_TIME}
    assert messages[0].timestamp == messages[1].timestamp != BASE_MS


def test_partial_batch_at_the_end_is_fetched_whole_next_time(
    consumer: SimpleConsumer, produce: Produce
) -> None:
    for start in range(0, 30, 10):
        produce("t", 0, batch_of(10, start=start, size=100))
    whole = len(build_batch(batch_of(10, size=100)))
    # Room for one and a half batches: the second is cut off and left for the next fetch.
    first = consumer.fetch("t", 0, 0, max_bytes=whole + whole // 2)
    assert [m.offset for m in first] == list(range(10))
    rest: list[int] = []
    offset = first[-1].next_offset
    while offset < 30:
        messages = consumer.fetch("t", 0, offset, max_bytes=whole + whole // 2)
        assert messages, "a fetch made no progress"
        rest.extend(m.offset for m in messages)
        offset = messages[-1].next_offset
    assert rest == list(range(10, 30))


def test_message_larger_than_max_bytes_is_delivered(
    consumer: SimpleConsumer, produce: Produce
) -> None:
    produce("t", 0, batch_of(1, size=100_000))
    produce("t", 0, batch_of(1, start=1))
    messages = consumer.fetch("t", 0, 0, max_bytes=1_000)
    assert [m.offset for m in messages] == [0]
    assert messages[0].value is not None
    assert len(messages[0].value) == 100_000


def test_offset_out_of_range(consumer: SimpleConsumer, produce: Produce) -> None:
    produce("t", 0, batch_of(3))
    with pytest.raises(OffsetOutOfRangeError, match=r"t-0 at offset 10.*high watermark 3"):
        consumer.fetch("t", 0, 10)
    with pytest.raises(OffsetOutOfRangeError):
        consumer.fetch("t", 0, -5)
    # The caller recovers by asking where the log starts.
    assert [m.offset for m in consumer.fetch("t", 0, consumer.earliest_offset("t", 0))] == [0, 1, 2]


def test_unknown_topic_and_partition(consumer: SimpleConsumer) -> None:
    with pytest.raises(UnknownTopicOrPartitionError, match="ghost-0"):
        consumer.fetch("ghost", 0, 0)
    with pytest.raises(UnknownTopicOrPartitionError, match="t-9"):
        consumer.fetch("t", 9, 0)
    with pytest.raises(UnknownTopicOrPartitionError):
        consumer.offsets_before("ghost", 0, LATEST)


def test_multifetch(consumer: SimpleConsumer, produce: Produce) -> None:
    produce("t", 0, batch_of(5))
    produce("t", 1, batch_of(2))
    results = consumer.multifetch(
        [
            FetchRequest("t", 0, 3),
            FetchRequest("t", 1, 0),
            FetchRequest("t", 0, 0, max_bytes=100),  # the same partition again
            FetchRequest("t", 0, 50),
            FetchRequest("ghost", 0, 0),
        ]
    )
    assert [m.offset for m in results[0].raise_for_error()] == [3, 4]
    assert [m.offset for m in results[1].raise_for_error()] == [0, 1]
    assert [m.offset for m in results[2].raise_for_error()] == [0, 1, 2, 3, 4]
    assert results[0].high_watermark == 5
    assert results[1].log_start_offset == 0
    assert isinstance(results[3].error, OffsetOutOfRangeError)
    assert isinstance(results[4].error, UnknownTopicOrPartitionError)
    with pytest.raises(OffsetOutOfRangeError):
        results[3].raise_for_error()
    assert consumer.multifetch([]) == []


def test_offsets_before(consumer: SimpleConsumer, produce: Produce, broker: Broker) -> None:
    assert consumer.offsets_before("t", 0, EARLIEST) == [0]
    assert consumer.offsets_before("t", 0, LATEST) == [0]
    produce("t", 0, batch_of(5))  # timestamps BASE_MS .. BASE_MS + 4
    assert consumer.offsets_before("t", 0, LATEST) == [5]
    assert consumer.latest_offset("t", 0) == 5
    assert consumer.offsets_before("t", 0, BASE_MS + 2) == [2]
    assert consumer.offsets_before("t", 0, BASE_MS + 99) == []
    assert consumer.offsets_before("t", 0, LATEST, max_offsets=0) == []
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.delete_records({TopicPartition("t", 0): 3}).all()
    assert consumer.earliest_offset("t", 0) == 3
    with pytest.raises(OffsetOutOfRangeError):
        consumer.fetch("t", 0, 1)


def test_configuration(broker: Broker) -> None:
    with SimpleConsumer(
        {"bootstrap.servers": broker.bootstrap_servers}, max_partition_fetch_bytes=10
    ) as consumer:
        assert consumer.config.get_int("max.partition.fetch.bytes") == 10
        assert consumer.config.get_int("fetch.max.wait.ms") == 0
    with pytest.raises(ConfigError, match=r"'group\.id'"):
        SimpleConsumer(broker.bootstrap_servers, group_id="g")


# ---------------------------------------------------------------------- the pure decoder


def test_decoder_drops_a_partial_batch_and_skips_control_batches() -> None:
    data = build_batch(batch_of(2))
    control = build_batch(
        [SimpleRecord(BASE_MS, b"\x00\x00\x00\x00", b"")], base_offset=2, control=True
    )
    tail = build_batch(batch_of(3, start=3), base_offset=3)
    stream = data + control + tail
    assert [m.offset for m in decode_messages("t", 0, stream, 0)] == [0, 1, 3, 4, 5]
    assert [m.offset for m in decode_messages("t", 0, stream[:-1], 0)] == [0, 1]
    assert [m.offset for m in decode_messages("t", 0, stream, 4)] == [4, 5]
    assert decode_messages("t", 0, stream[:11], 0) == []
    assert decode_messages("t", 0, b"", 0) == []


def test_decoder_checks_crcs() -> None:
    data = bytearray(build_batch(batch_of(2)))
    data[data.index(b"AAAA")] = ord("Z")
    with pytest.raises(CorruptRecordError):
        decode_messages("t", 0, bytes(data), 0)
    # Without the check the (corrupted) value is returned as it is.
    unchecked = decode_messages("t", 0, bytes(data), 0, check_crcs=False)
    assert unchecked[0].value == b"Z" + b"A" * 9

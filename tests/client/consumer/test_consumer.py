"""``Consumer`` without a group against a live embedded broker: assign, positions, seek,
auto.offset.reset, pause/resume, deserializers, max.poll.records, a message larger than the
fetch size, partial batches at the end of a fetch, a compressed batch read from its middle,
control-free decoding details (timestamps, headers, sizes), iteration and close."""

from __future__ import annotations

import struct
import threading
import time

import pytest
from tests.client.conftest import Produce
from tests.client.consumer.conftest import MakeConsumer, poll_until

import odradek
from odradek import Consumer, TopicPartition
from odradek.client.consumer import NoOffsetForPartitionError
from odradek.errors import ConfigError, OffsetOutOfRangeError
from odradek.records.batch import CompressionType, TimestampType
from odradek.records.record import SimpleRecord

BASE_MS = 1_700_000_000_000
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def records(count: int, *, start: int = 0, size: int = 10) -> list[SimpleRecord]:
    return [
        SimpleRecord(
            BASE_MS + start + i,
            b"k%d" % (start + i),
            bytes([65 + (start + i) % 26]) * size,
            [("n", b"%d" % (start + i)), ("empty", None)],
        )
        for i in range(count)
    ]


@pytest.fixture(autouse=True)
def topic(create_topic) -> None:  # type: ignore[no-untyped-def]
    create_topic("t", 2)


def test_assign_reads_every_field(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(5))
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([T0])
    assert consumer.assignment() == {T0}
    got = poll_until(consumer, 5)
    assert [r.offset for r in got] == [0, 1, 2, 3, 4]
    first = got[0]
    assert (first.topic, first.partition, first.key, first.value) == ("t", 0, b"k0", b"A" * 10)
    assert first.timestamp == BASE_MS
    assert first.timestamp_type is TimestampType.CREATE_TIME
    assert first.headers == (("n", b"0"), ("empty", None))
    assert (first.serialized_key_size, first.serialized_value_size) == (2, 10)
    assert first.serialized_header_size == len("n") + 1 + len("empty")
    assert consumer.position(T0) == 5


def test_latest_is_the_default_reset(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(3))
    consumer = make_consumer()
    consumer.assign([T0])
    assert consumer.position(T0) == 3
    produce("t", 0, records(2, start=3))
    assert [r.offset for r in poll_until(consumer, 2)] == [3, 4]


def test_seek_and_seek_to_beginning_and_end(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(10))
    produce("t", 1, records(4))
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([T0, T1])
    consumer.seek(T0, 7)
    got = poll_until(consumer, 7)
    assert sorted(r.offset for r in got if r.partition == 0) == [7, 8, 9]
    consumer.seek_to_beginning([T0])
    assert consumer.position(T0) == 0
    consumer.seek_to_end()
    assert (consumer.position(T0), consumer.position(T1)) == (10, 4)
    assert consumer.poll(300) == []
    consumer.seek(T1, 2)
    assert [r.offset for r in poll_until(consumer, 2)] == [2, 3]
    with pytest.raises(RuntimeError):
        consumer.seek(TopicPartition("t", 9), 0)


def test_reset_none_raises_until_sought(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(3))
    consumer = make_consumer(auto_offset_reset="none")
    consumer.assign([T0])
    with pytest.raises(NoOffsetForPartitionError):
        consumer.poll(200)
    with pytest.raises(NoOffsetForPartitionError):
        consumer.poll(200)
    consumer.seek(T0, 1)
    assert [r.offset for r in poll_until(consumer, 2)] == [1, 2]
    consumer.seek(T0, 50)
    with pytest.raises(OffsetOutOfRangeError):
        poll_until(consumer, 1)


def test_out_of_range_resets_by_policy(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(3))
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([T0])
    consumer.seek(T0, 99)
    assert [r.offset for r in poll_until(consumer, 3)] == [0, 1, 2]


def test_pause_and_resume(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(3))
    produce("t", 1, records(3))
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([T0, T1])
    consumer.pause(T0)
    assert consumer.paused() == {T0}
    got = poll_until(consumer, 3)
    assert {r.partition for r in got} == {1}
    assert consumer.poll(300) == []
    consumer.resume(T0)
    assert consumer.paused() == set()
    assert {r.partition for r in poll_until(consumer, 3)} == {0}


def test_deserializer_error_holds_the_position(
    make_consumer: MakeConsumer, produce: Produce
) -> None:
    """Records are decoded on the fetcher thread, deserialized on the caller's: a failing
    deserializer raises from poll, again on the next poll, and a seek past the record moves on."""
    produce("t", 0, [SimpleRecord(BASE_MS, None, v) for v in (b"a", b"bad", b"c")])
    threads: set[threading.Thread] = set()

    class Strict:
        def deserialize(self, topic: str, data: bytes | None) -> object:
            threads.add(threading.current_thread())
            if data == b"bad":
                raise ValueError("bad value")
            return data

    consumer = make_consumer(auto_offset_reset="earliest", value_deserializer=Strict())
    consumer.assign([T0])
    first = consumer.poll(5_000, max_records=1)
    assert [r.value for r in first] == [b"a"]
    for _ in range(2):
        with pytest.raises(ValueError, match="bad value"):
            poll_until(consumer, 1)
        assert consumer.position(T0) == 1
    consumer.seek(T0, 2)
    assert [r.value for r in poll_until(consumer, 1)] == [b"c"]
    assert threads == {threading.current_thread()}


def test_deserializers(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce(
        "t",
        0,
        [
            SimpleRecord(BASE_MS, struct.pack(">i", -7), b'{"a":1}'),
            SimpleRecord(BASE_MS, None, None),
        ],
    )

    class Upper:
        def deserialize(self, topic: str, data: bytes | None) -> object:
            return None if data is None else (topic, data.upper())

    for key_d, value_d, expected in [
        ("int32", "json", [(-7, {"a": 1}), (None, None)]),
        ("bytes", "str", [(struct.pack(">i", -7), '{"a":1}'), (None, None)]),
        (Upper(), lambda data: data, [(("t", struct.pack(">i", -7)), b'{"a":1}'), (None, None)]),
    ]:
        consumer = make_consumer(
            auto_offset_reset="earliest", key_deserializer=key_d, value_deserializer=value_d
        )
        consumer.assign([T0])
        assert [(r.key, r.value) for r in poll_until(consumer, 2)] == expected
    produce("t", 1, [SimpleRecord(BASE_MS, struct.pack(">q", 2**40), b"")])
    consumer = make_consumer(auto_offset_reset="earliest", key_deserializer="int64")
    consumer.assign([T1])
    assert poll_until(consumer, 1)[0].key == 2**40
    with pytest.raises(ConfigError, match=r"value\.deserializer"):
        make_consumer(value_deserializer="no.such.Deserializer")


def test_max_poll_records(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(25))
    consumer = make_consumer(auto_offset_reset="earliest", max_poll_records=10)
    consumer.assign([T0])
    sizes = []
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 25 and time.monotonic() < deadline:
        batch = consumer.poll(500)
        if batch:
            sizes.append(len(batch))
            got.extend(batch)
    assert max(sizes) <= 10
    assert [r.offset for r in got] == list(range(25))


def test_message_larger_than_the_fetch_size(make_consumer: MakeConsumer, produce: Produce) -> None:
    produce("t", 0, records(1, size=50_000))
    produce("t", 0, records(2, start=1))
    consumer = make_consumer(
        auto_offset_reset="earliest", max_partition_fetch_bytes=1_000, fetch_max_bytes=1_000
    )
    consumer.assign([T0])
    got = poll_until(consumer, 3)
    assert len(got[0].value) == 50_000
    assert [r.offset for r in got] == [0, 1, 2]


def test_partial_batches_at_the_end_of_a_fetch(
    make_consumer: MakeConsumer, produce: Produce
) -> None:
    for start in range(0, 40, 4):
        produce("t", 0, records(4, start=start, size=100))
    # Each fetch holds about two and a half batches: the broker cuts the third one off.
    consumer = make_consumer(auto_offset_reset="earliest", max_partition_fetch_bytes=1_200)
    consumer.assign([T0])
    assert [r.offset for r in poll_until(consumer, 40)] == list(range(40))


@pytest.mark.parametrize("codec", list(CompressionType))
def test_compressed_batch_read_from_its_middle(
    make_consumer: MakeConsumer, produce: Produce, codec: CompressionType
) -> None:
    produce("t", 0, records(10), compression=codec)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([T0])
    consumer.seek(T0, 6)
    got = poll_until(consumer, 4)
    assert [r.offset for r in got] == [6, 7, 8, 9]
    assert got[0].key == b"k6"


def test_iteration_stops_after_consumer_timeout(
    make_consumer: MakeConsumer, produce: Produce
) -> None:
    produce("t", 0, records(4))
    consumer = make_consumer(auto_offset_reset="earliest", consumer_timeout_ms=500)
    consumer.assign([T0])
    assert [r.offset for r in consumer] == [0, 1, 2, 3]


def test_close_is_idempotent_and_final(make_consumer: MakeConsumer) -> None:
    consumer = make_consumer()
    consumer.assign([T0])
    consumer.close()
    consumer.close()
    with pytest.raises(RuntimeError):
        consumer.poll(0)


def test_errors_without_group_or_assignment(make_consumer: MakeConsumer) -> None:
    consumer = make_consumer()
    with pytest.raises(RuntimeError):
        consumer.poll(0)
    with pytest.raises(ConfigError):
        consumer.subscribe(["t"])
    with pytest.raises(ConfigError, match="unknown configuration"):
        make_consumer(no_such_setting=1)


def test_exported_from_the_package_root() -> None:
    assert odradek.Consumer is Consumer
    assert odradek.TopicPartition is TopicPartition

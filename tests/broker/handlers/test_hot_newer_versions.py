"""Produce, Fetch, ListOffsets and InitProducerId at the versions Kafka 4 serves, without
sockets (tests/broker/fakes.py): KIP-467 per-record errors, KIP-951 leader discovery, Fetch by
topic id (KIP-516) with diverging epochs, the newer ListOffsets specs, and the epoch-bump
form of InitProducerId for a producer without a transactional id."""

from __future__ import annotations

import base64
import datetime
import importlib
import uuid
from typing import Any

import pytest
from kio.serial import entity_reader
from kio.static.primitive import i32Timedelta
from tests.broker.fakes import FakePartition, FakeTopics, context, request

from odradek._types import TopicPartition
from odradek.broker.handlers import fetch, init_producer_id, list_offsets, produce
from odradek.errors import ErrorCode, InvalidRecordError
from odradek.protocol import FetchResponseFrame, RecordsSlot, response_class
from odradek.records.codec import SimpleRecord, build_batch

TP = TopicPartition("t", 0)
T_ID = uuid.UUID("6b1c6f1e-52c4-4a1e-9a53-3c0c5b9f0a11")


class TopicsWithIds(FakeTopics):
    """Fake topics whose ids are stored as the metadata store keeps them (base64)."""

    def __init__(self, ids: dict[str, uuid.UUID]) -> None:
        super().__init__(ids)
        self.ids = ids

    def topic_id(self, topic: str) -> str | None:
        known = self.ids.get(topic) if topic in self.names else None
        return None if known is None else base64.urlsafe_b64encode(known.bytes).decode()[:22]


def schema(api: str, version: int) -> Any:
    return importlib.import_module(f"kio.schema.{api}.v{version}.request")


def read_response(api_key: int, version: int, frame: bytes) -> Any:
    response_type: Any = response_class(api_key, version)
    _, header_size = entity_reader(response_type.__header_schema__)(frame[4:], 0)
    response, _ = entity_reader(response_type)(frame[4:], header_size)
    return response


def batch(base_offset: int = 0, keys: tuple[bytes | None, ...] = (b"k",)) -> bytes:
    return build_batch([SimpleRecord(1_000, key, b"v") for key in keys], base_offset=base_offset)


# ----------------------------------------------------------------- Produce


def produce_request(version: int, records: bytes, topic: str = "t") -> Any:
    m = schema("produce", version)
    return request(
        m.ProduceRequest(
            transactional_id=None,
            acks=1,
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
            topic_data=(
                m.TopicProduceData(
                    name=topic,
                    partition_data=(m.PartitionProduceData(index=0, records=records),),
                ),
            ),
        )
    )


@pytest.mark.parametrize("version", [8, 9, 10, 11, 12])
def test_produce_names_the_keyless_records_of_a_refused_batch(version: int) -> None:
    partition = FakePartition(TP)
    partition.fail_with = InvalidRecordError(
        "t-0: a compacted topic cannot accept a record without a key",
        record_errors=((1, "no key"), (3, "no key")),
    )
    frame = produce.handle(context(partition), produce_request(version, batch()))
    assert isinstance(frame, bytes)
    (answer,) = read_response(0, version, frame).responses[0].partition_responses
    assert int(answer.error_code) == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
        (1, "no key"),
        (3, "no key"),
    ]
    assert answer.error_message is not None
    assert "without a key" in answer.error_message


def test_produce_v7_has_no_record_errors_but_still_fails_the_partition() -> None:
    partition = FakePartition(TP)
    partition.fail_with = InvalidRecordError("x", record_errors=((0, "no key"),))
    frame = produce.handle(context(partition), produce_request(7, batch()))
    assert isinstance(frame, bytes)
    (answer,) = read_response(0, 7, frame).responses[0].partition_responses
    assert int(answer.error_code) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("version", [9, 10, 12])
def test_produce_to_a_follower_on_a_single_broker_names_no_leader(version: int) -> None:
    # Without a metadata cache (a single broker) nothing is known: the tags stay unwritten.
    partition = FakePartition(TP, is_leader=False)
    frame = produce.handle(context(partition), produce_request(version, batch()))
    assert isinstance(frame, bytes)
    response = read_response(0, version, frame)
    (answer,) = response.responses[0].partition_responses
    assert int(answer.error_code) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    if version >= 10:
        assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (-1, -1)
        assert response.node_endpoints == ()


# ----------------------------------------------------------------- Fetch


def fetch_request(
    version: int,
    offsets: dict[uuid.UUID, int],
    *,
    last_fetched_epoch: int = -1,
    max_wait_ms: int = 0,
) -> Any:
    m = schema("fetch", version)
    topics = tuple(
        m.FetchTopic(
            topic_id=topic_id,
            partitions=(
                m.FetchPartition(
                    partition=0,
                    fetch_offset=offset,
                    last_fetched_epoch=last_fetched_epoch,
                    partition_max_bytes=1 << 20,
                ),
            ),
        )
        for topic_id, offset in offsets.items()
    )
    fields: dict[str, Any] = {
        "max_wait": i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
        "min_bytes": 1,
        "topics": topics,
        "forgotten_topics_data": (),
    }
    if version < 15:
        fields["replica_id"] = -1
    return request(m.FetchRequest(**fields))


def fetched(version: int, frame: Any) -> Any:
    assert isinstance(frame, FetchResponseFrame)
    wire = b"".join(
        part.records.read() if isinstance(part, RecordsSlot) else part for part in frame.parts
    )
    return read_response(1, version, wire)


def leader_with_epochs() -> FakePartition:
    partition = FakePartition(TP, leader_epoch=5)
    for offset in range(4):
        partition.append_as_leader(batch(offset))
    partition.epochs = {3: 0, 5: 2}  # epoch 3 wrote offsets 0-1, epoch 5 from offset 2 on
    return partition


@pytest.mark.parametrize("version", [13, 15, 16, 17, 18])
def test_fetch_by_topic_id(version: int) -> None:
    partition = leader_with_epochs()
    ctx = context(partition, topics=TopicsWithIds({"t": T_ID}))
    unknown = uuid.uuid4()
    response = fetched(version, fetch.handle(ctx, fetch_request(version, {T_ID: 1, unknown: 0})))
    by_id = {topic.topic_id: topic.partitions for topic in response.responses}
    (known,) = by_id[T_ID]
    assert int(known.error_code) == ErrorCode.NONE
    assert bytes(known.records) == batch(1) + batch(2) + batch(3)
    (missing,) = by_id[unknown]
    assert int(missing.error_code) == ErrorCode.UNKNOWN_TOPIC_ID


@pytest.mark.parametrize("version", [12, 13, 17])
def test_fetch_answers_a_diverging_epoch_instead_of_records(version: int) -> None:
    partition = leader_with_epochs()
    ctx = context(partition, topics=TopicsWithIds({"t": T_ID}))

    def ask(offset: int, epoch: int, min_bytes: int = 1) -> Any:
        if version == 12:
            m = schema("fetch", 12)
            body = m.FetchRequest(
                replica_id=-1,
                max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
                min_bytes=min_bytes,
                topics=(
                    m.FetchTopic(
                        topic="t",
                        partitions=(
                            m.FetchPartition(
                                partition=0,
                                fetch_offset=offset,
                                last_fetched_epoch=epoch,
                                partition_max_bytes=1 << 20,
                            ),
                        ),
                    ),
                ),
                forgotten_topics_data=(),
            )
            frame = fetch.handle(ctx, request(body))
        else:
            frame = fetch.handle(
                ctx, fetch_request(version, {T_ID: offset}, last_fetched_epoch=epoch)
            )
        (answer,) = fetched(version, frame).responses[0].partitions
        return answer

    # A fetcher that wrote offsets 0-2 in epoch 4, which the leader never had: epoch 3 ends at 2.
    diverged = ask(3, 4, min_bytes=1 << 20)  # would wait: a divergence is answered at once
    assert int(diverged.error_code) == ErrorCode.NONE
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (3, 2)
    assert not diverged.records
    # Its log agrees with the leader's: records as usual, no diverging epoch.
    agreed = ask(2, 3)
    assert (agreed.diverging_epoch.epoch, agreed.diverging_epoch.end_offset) == (-1, -1)
    assert bytes(agreed.records) == batch(2) + batch(3)


# ----------------------------------------------------------------- ListOffsets


def list_offsets_request(version: int, timestamps: list[int]) -> Any:
    m = schema("list_offsets", version)
    fields: dict[str, Any] = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": (
            m.ListOffsetsTopic(
                name="t",
                partitions=tuple(
                    m.ListOffsetsPartition(partition_index=0, timestamp=timestamp)
                    for timestamp in timestamps
                ),
            ),
        ),
    }
    if version >= 10:
        fields["timeout"] = i32Timedelta.parse(datetime.timedelta(seconds=1))
    return request(m.ListOffsetsRequest(**fields))


def test_list_offsets_newer_specs() -> None:
    partition = FakePartition(TP)
    for offset, timestamp in enumerate((100, 300, 200)):
        partition.append_as_leader(
            build_batch([SimpleRecord(timestamp, b"k", b"v")], base_offset=offset)
        )
    partition.delete_records_before(1)
    ctx = context(partition)
    specs = [-1, -2, -3, -4, -5, -6, -7]
    for version in (7, 8, 9, 10, 11):
        response: Any = list_offsets.handle(ctx, list_offsets_request(version, specs))
        answers = [
            (int(p.error_code), p.offset, p.timestamp) for p in response.topics[0].partitions
        ]
        invalid = (ErrorCode.INVALID_REQUEST, -1, -1)
        assert answers == [
            (ErrorCode.NONE, 3, -1),  # latest: the high watermark
            (ErrorCode.NONE, 1, -1),  # earliest: the log start offset
            (ErrorCode.NONE, 1, 300),  # max timestamp: offset 1's 300
            (ErrorCode.NONE, 1, -1) if version >= 8 else invalid,  # earliest local
            (ErrorCode.NONE, -1, -1) if version >= 9 else invalid,  # latest tiered: none
            (ErrorCode.NONE, -1, -1) if version >= 11 else invalid,  # pending upload: none
            invalid,  # no spec
        ], version


def test_list_offsets_max_timestamp_of_an_empty_log() -> None:
    response: Any = list_offsets.handle(context(FakePartition(TP)), list_offsets_request(7, [-3]))
    (answer,) = response.topics[0].partitions
    assert (int(answer.error_code), answer.offset, answer.timestamp) == (ErrorCode.NONE, -1, -1)


# ----------------------------------------------------------------- InitProducerId


def init_request(version: int, producer_id: int, producer_epoch: int) -> Any:
    m = schema("init_producer_id", version)
    return request(
        m.InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
    )


@pytest.mark.parametrize("version", [3, 4, 5])
def test_init_producer_id_epoch_bump_without_transactional_id(version: int) -> None:
    ctx = context()
    first: Any = init_producer_id.handle(ctx, init_request(version, -1, -1))
    assert int(first.error_code) == ErrorCode.NONE
    assert first.producer_id >= 0
    # Asking to bump the epoch: as Kafka does for a producer without a transactional id, a
    # new producer id with epoch 0.
    bumped: Any = init_producer_id.handle(ctx, init_request(version, first.producer_id, 0))
    assert int(bumped.error_code) == ErrorCode.NONE
    assert bumped.producer_id != first.producer_id
    assert bumped.producer_epoch == 0
    for half in ((first.producer_id, -1), (-1, 3)):
        refused: Any = init_producer_id.handle(ctx, init_request(version, *half))
        assert int(refused.error_code) == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", [13, 18])
def test_fetch_of_a_null_topic_id_is_unknown_topic_id(version: int) -> None:
    """A null id (the fuzzer's malformed request: the handler raised on it) is answered as
    the zero id, UNKNOWN_TOPIC_ID, like any id no topic has."""
    ctx = context(leader_with_epochs(), topics=TopicsWithIds({"t": T_ID}))
    response = fetched(version, fetch.handle(ctx, fetch_request(version, {None: 0})))
    [topic] = response.responses
    assert topic.topic_id is None  # the zero id, as kio reads it
    [answer] = topic.partitions
    assert int(answer.error_code) == ErrorCode.UNKNOWN_TOPIC_ID

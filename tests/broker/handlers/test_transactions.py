"""The transaction APIs on the wire against an embedded broker (raw frames, no client's retry
logic): InitProducerId with a transactional id and its timeout checks, AddPartitionsToTxn in
both forms (v3 per transaction, v4+ batched with verify_only), EndTxn, DescribeTransactions,
ListTransactions, DescribeProducers, WriteTxnMarkers, and the abort of a transaction whose
``transaction.timeout.ms`` passed (the last stable offset moves past it)."""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from tests.broker._wire import Wire, wait_for

from odradek import Broker
from odradek._types import TopicPartition
from odradek.broker.handlers._topic_metadata import topic_id_of
from odradek.broker.txn.verification import TransactionVerifier
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.records.codec import SimpleRecord, build_batch

TOPIC = "txn-wire"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(
        config={
            "num.partitions": "1",
            "transaction.state.log.num.partitions": "2",
            "transaction.max.timeout.ms": "60000",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
        }
    ) as running:
        setup = Wire(running.port, timeout_s=30.0)
        try:
            setup.create_topics({TOPIC: 1})
        finally:
            setup.close()
        yield running


@pytest.fixture
def wire(broker: Broker) -> Iterator[Wire]:
    connection = Wire(broker.port, timeout_s=30.0)
    yield connection
    connection.close()


def init(wire: Wire, tid: str, timeout_ms: int = 30_000) -> dict[str, Any]:
    def answer() -> dict[str, Any] | None:
        found = wire.request(ApiKey.FIND_COORDINATOR, 1, {"key": tid, "key_type": 1})
        if found["error_code"]:
            return None
        reply = wire.request(
            ApiKey.INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": tid,
                "transaction_timeout": timeout_ms,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        retriable = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS)
        return None if reply["error_code"] in retriable else reply

    result: dict[str, Any] = wait_for(answer, f"InitProducerId of {tid}")
    return result


def add_partitions(wire: Wire, tid: str, pid: int, epoch: int) -> int:
    reply = wire.request(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        3,
        {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}],
        },
    )
    return int(
        reply["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"]
    )


def txn_batch(pid: int, epoch: int, sequence: int, value: bytes = b"v") -> bytes:
    """One transactional batch of one record from producer ``pid`` at ``epoch``."""
    return build_batch(
        [SimpleRecord(1, None, value)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=True,
    )


def produce_txn(wire: Wire, tid: str | None, pid: int, epoch: int, sequence: int) -> int:
    batch = txn_batch(pid, epoch, sequence)
    reply = wire.request(
        ApiKey.PRODUCE,
        7,
        {
            "transactional_id": tid,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    return int(reply["responses"][0]["partition_responses"][0]["error_code"])


def end_txn(wire: Wire, tid: str, pid: int, epoch: int, *, committed: bool) -> int:
    """EndTxn v3: commits or aborts ``tid``'s transaction; returns the error code."""
    ended = wire.request(
        ApiKey.END_TXN,
        3,
        {
            "transactional_id": tid,
            "producer_id": pid,
            "producer_epoch": epoch,
            "committed": committed,
        },
    )
    return int(ended["error_code"])


def last_stable_offset(wire: Wire) -> int:
    reply = wire.request(
        ApiKey.LIST_OFFSETS,
        2,
        {
            "replica_id": -1,
            "isolation_level": 1,
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    return int(reply["topics"][0]["partitions"][0]["offset"])


def describe(wire: Wire, tid: str) -> dict[str, Any]:
    reply = wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid]})
    state: dict[str, Any] = reply["transaction_states"][0]
    return state


def describe_error_of_unknown(wire: Wire, tid: str) -> int:
    """The error of an unknown id, read from the raw answer: its start time is -1 (Kafka's
    "none"), which kio's decoder refuses to turn into a datetime. v0 is flexible: correlation
    id, tagged fields, throttle time, compact array length, then the first error code."""
    wire.send(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid]})
    (size,) = struct.unpack(">i", wire._read(4))
    body = wire._read(size)
    (code,) = struct.unpack_from(">h", body, 4 + 1 + 4 + 1)
    return int(code)


def test_a_timeout_above_the_maximum_is_refused(wire: Wire) -> None:
    reply = init(wire, "too-long", timeout_ms=60_001)
    assert reply["error_code"] == ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_a_transaction_on_the_wire_and_its_descriptions(wire: Wire) -> None:
    first = init(wire, "wire-1")
    assert first["error_code"] == ErrorCode.NONE
    pid, epoch = first["producer_id"], first["producer_epoch"]
    second = init(wire, "wire-1")
    assert (second["producer_id"], second["producer_epoch"]) == (pid, epoch + 1)
    epoch += 1
    assert add_partitions(wire, "wire-1", pid, epoch - 1) == ErrorCode.PRODUCER_FENCED
    assert add_partitions(wire, "wire-1", pid, epoch) == ErrorCode.NONE
    start = last_stable_offset(wire)
    assert produce_txn(wire, "wire-1", pid, epoch, 0) == ErrorCode.NONE
    assert last_stable_offset(wire) == start  # held back: the transaction is open

    state = describe(wire, "wire-1")
    assert (state["error_code"], state["transaction_state"]) == (ErrorCode.NONE, "Ongoing")
    assert state["topics"] == [{"topic": TOPIC, "partitions": [0]}]
    assert describe_error_of_unknown(wire, "nobody") == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    listed = wire.request(
        ApiKey.LIST_TRANSACTIONS,
        1,
        {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [], "duration_filter": -1},
    )
    assert listed["unknown_state_filters"] == ["Bogus"]
    assert [t["transactional_id"] for t in listed["transaction_states"]] == ["wire-1"]
    producers = wire.request(
        ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": TOPIC, "partition_indexes": [0]}]}
    )
    (active,) = producers["topics"][0]["partitions"][0]["active_producers"]
    assert (active["producer_id"], active["current_txn_start_offset"]) == (pid, start)

    # v4+: a broker's verification, several transactions in one request.
    verified = wire.request(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        4,
        {
            "transactions": [
                {
                    "transactional_id": "wire-1",
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "verify_only": True,
                    "topics": [
                        {"name": TOPIC, "partitions": [0]},
                        {"name": "other", "partitions": [0]},
                    ],
                }
            ]
        },
    )
    results = verified["results_by_transaction"][0]["topic_results"]
    codes = {r["name"]: r["results_by_partition"][0]["partition_error_code"] for r in results}
    assert codes == {
        TOPIC: ErrorCode.OPERATION_NOT_ATTEMPTED,
        "other": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }

    assert end_txn(wire, "wire-1", pid, epoch, committed=True) == ErrorCode.NONE
    wait_for(lambda: last_stable_offset(wire) > start + 1, "the commit marker")
    wait_for(lambda: describe(wire, "wire-1")["transaction_state"] == "CompleteCommit", "complete")


def test_an_expired_transaction_is_aborted_by_the_coordinator(broker: Broker, wire: Wire) -> None:
    # Long enough for three round trips on a loaded machine, short enough to wait out.
    result = init(wire, "expiring", timeout_ms=2000)
    pid, epoch = result["producer_id"], result["producer_epoch"]
    assert add_partitions(wire, "expiring", pid, epoch) == ErrorCode.NONE
    start = last_stable_offset(wire)
    assert produce_txn(wire, "expiring", pid, epoch, 0) == ErrorCode.NONE
    assert last_stable_offset(wire) == start
    wait_for(lambda: last_stable_offset(wire) > start + 1, "the abort of the expired transaction")
    # The marker is on the partition before the coordinator logs CompleteAbort (PrepareAbort,
    # markers, then CompleteAbort, as in Kafka): wait for the last step too.
    wait_for(
        lambda: describe(wire, "expiring")["transaction_state"] == "CompleteAbort",
        "the coordinator's CompleteAbort",
    )
    state = describe(wire, "expiring")
    assert state["producer_epoch"] == epoch + 1  # fenced: the producer must start over
    topics = broker.app.topics
    assert topics is not None
    partition = topics.replicas.get(TopicPartition(TOPIC, 0))
    assert partition is not None
    assert [
        (a.producer_id, a.first_offset) for a in partition.aborted_transactions(0, 1 << 40)
    ] == [(pid, start)]


def test_write_txn_markers_of_a_partition_not_here(wire: Wire) -> None:
    reply = wire.request(
        ApiKey.WRITE_TXN_MARKERS,
        1,
        {
            "markers": [
                {
                    "producer_id": 5,
                    "producer_epoch": 0,
                    "transaction_result": True,
                    "topics": [{"name": "missing", "partition_indexes": [3]}],
                    "coordinator_epoch": 0,
                }
            ]
        },
    )
    entry = reply["markers"][0]["topics"][0]["partitions"][0]
    assert (entry["partition_index"], entry["error_code"]) == (
        3,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    )


def high_watermark(wire: Wire) -> int:
    reply = wire.request(
        ApiKey.LIST_OFFSETS,
        2,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    return int(reply["topics"][0]["partitions"][0]["offset"])


def open_transaction_of(wire: Wire, pid: int) -> int | None:
    """The first offset of ``pid``'s open transaction on the partition (None: not known)."""
    producers = wire.request(
        ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": TOPIC, "partition_indexes": [0]}]}
    )
    for active in producers["topics"][0]["partitions"][0]["active_producers"]:
        if active["producer_id"] == pid:
            return int(active["current_txn_start_offset"])
    return None


def test_a_transactional_produce_without_add_partitions_is_refused(wire: Wire) -> None:
    """KIP-890 part 1: the leader asks the coordinator, which has no such partition in the
    transaction; nothing is appended and no transaction opens."""
    init(wire, "never-added")
    result = init(wire, "never-added")
    pid, epoch = result["producer_id"], result["producer_epoch"]
    assert epoch >= 1
    end = high_watermark(wire)
    assert produce_txn(wire, "never-added", pid, epoch, 0) == ErrorCode.INVALID_TXN_STATE
    # Without a transactional id nothing can vouch for the batch either.
    assert produce_txn(wire, None, pid, epoch, 0) == ErrorCode.INVALID_TXN_STATE
    # An older epoch is told it is fenced (the coordinator's PRODUCER_FENCED, as Produce
    # carries it).
    assert produce_txn(wire, "never-added", pid, epoch - 1, 0) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert (high_watermark(wire), last_stable_offset(wire)) == (end, end)
    assert open_transaction_of(wire, pid) is None


def test_a_late_batch_after_its_abort_opens_no_hanging_transaction(wire: Wire) -> None:
    result = init(wire, "late")
    pid, epoch = result["producer_id"], result["producer_epoch"]
    assert add_partitions(wire, "late", pid, epoch) == ErrorCode.NONE
    start = last_stable_offset(wire)
    assert produce_txn(wire, "late", pid, epoch, 0) == ErrorCode.NONE
    assert open_transaction_of(wire, pid) == start
    assert end_txn(wire, "late", pid, epoch, committed=False) == ErrorCode.NONE
    wait_for(lambda: describe(wire, "late")["transaction_state"] == "CompleteAbort", "the abort")
    end = high_watermark(wire)
    assert last_stable_offset(wire) == end
    # The batch a slow network delivered after the abort: before KIP-890 it opened a
    # transaction no coordinator knew, holding read_committed readers at ``end`` forever.
    assert produce_txn(wire, "late", pid, epoch, 1) == ErrorCode.INVALID_TXN_STATE
    assert (high_watermark(wire), last_stable_offset(wire)) == (end, end)
    assert open_transaction_of(wire, pid) == -1
    # The next transaction of the same producer goes through again.
    assert add_partitions(wire, "late", pid, epoch) == ErrorCode.NONE
    assert produce_txn(wire, "late", pid, epoch, 1) == ErrorCode.NONE
    assert open_transaction_of(wire, pid) == end


def test_the_verifier_asks_a_remote_coordinator_in_one_batched_request(
    broker: Broker, wire: Wire
) -> None:
    """The path a leader takes when another broker coordinates the id: AddPartitionsToTxn v4
    ``verify_only`` over an inter-broker connection, the questions that arrive together in
    one request; an unreachable coordinator is a retriable answer."""
    result = init(wire, "remote")
    pid, epoch = result["producer_id"], result["producer_epoch"]
    assert add_partitions(wire, "remote", pid, epoch) == ErrorCode.NONE
    tp = TopicPartition(TOPIC, 0)

    async def ask() -> tuple[
        list[dict[TopicPartition, ErrorCode]], int, dict[TopicPartition, ErrorCode]
    ]:
        verifier = TransactionVerifier(99, lambda _: (0, "127.0.0.1", broker.port), None)
        closed = TransactionVerifier(99, lambda _: (0, "127.0.0.1", free_port()), None)
        try:
            answers = await asyncio.gather(
                verifier.verify("remote", pid, epoch, [tp]),
                verifier.verify("remote", pid, epoch, [tp]),
                verifier.verify("remote", pid, epoch + 1, [tp]),
                verifier.verify("nobody", pid, 0, [tp]),
            )
            unreachable = await closed.verify("remote", pid, epoch, [tp])
            return list(answers), verifier.requests_sent, unreachable
        finally:
            await verifier.stop()
            await closed.stop()

    answers, requests, unreachable = asyncio.run(ask())
    assert answers == [
        {tp: ErrorCode.NONE},
        {tp: ErrorCode.NONE},
        {tp: ErrorCode.NOT_ENOUGH_REPLICAS},  # another epoch in the same request: retry
        {tp: ErrorCode.INVALID_TXN_STATE},
    ]
    assert requests == 1
    assert unreachable == {tp: ErrorCode.NOT_ENOUGH_REPLICAS}


def produce_txn_by_id(
    wire: Wire, topic_ids: list[uuid.UUID], tid: str, pid: int, epoch: int, sequence: int
) -> dict[uuid.UUID, int]:
    """A transactional Produce v13 (KIP-516: topics by id) of one batch to partition 0 of each
    id; returns each answered id's error code."""
    batch = txn_batch(pid, epoch, sequence, b"v13")
    reply = wire.request(
        ApiKey.PRODUCE,
        13,
        {
            "transactional_id": tid,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [
                {"topic_id": topic_id, "partition_data": [{"index": 0, "records": batch}]}
                for topic_id in topic_ids
            ],
        },
    )
    return {
        topic["topic_id"]: int(topic["partition_responses"][0]["error_code"])
        for topic in reply["responses"]
    }


def test_a_transactional_produce_by_topic_id_is_verified(broker: Broker, wire: Wire) -> None:
    """Produce v13 names topics by id: KIP-890's verification resolves them like the append
    does — a batch outside the transaction is refused, one inside is appended — and an id no
    topic has answers UNKNOWN_TOPIC_ID beside them."""
    ctx = broker.app.ctx
    assert ctx is not None
    topic_id = topic_id_of(ctx, TOPIC)
    unknown = uuid.uuid4()
    result = init(wire, "by-id")
    pid, epoch = result["producer_id"], result["producer_epoch"]
    end = high_watermark(wire)
    refused = produce_txn_by_id(wire, [topic_id, unknown], "by-id", pid, epoch, 0)
    assert refused == {topic_id: ErrorCode.INVALID_TXN_STATE, unknown: ErrorCode.UNKNOWN_TOPIC_ID}
    assert (high_watermark(wire), open_transaction_of(wire, pid)) == (end, None)
    assert add_partitions(wire, "by-id", pid, epoch) == ErrorCode.NONE
    start = high_watermark(wire)  # where its batch goes (others may hold the LSO lower)
    appended = produce_txn_by_id(wire, [unknown, topic_id], "by-id", pid, epoch, 0)
    assert appended == {unknown: ErrorCode.UNKNOWN_TOPIC_ID, topic_id: ErrorCode.NONE}
    assert open_transaction_of(wire, pid) == start
    assert end_txn(wire, "by-id", pid, epoch, committed=True) == ErrorCode.NONE

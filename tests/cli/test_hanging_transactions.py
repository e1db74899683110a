"""``odradek transactions find-hanging|abort`` and ``odradek producers describe`` against an
embedded broker. Hanging transactions are made with raw transactional Produce requests that
no coordinator knows of (the broker takes them: ``transaction.partition.verification.enable``
is off, as a broker before KIP-890 part 1): they hold a read_committed reader at their
first offset. ``find-hanging`` lists them — and not a real transaction its coordinator has
as Ongoing, even with records as old — ``abort`` (by start offset, and by producer id and
epochs) ends them, after which the read_committed reader gets past them. Bad input is one
line without a traceback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from tests._blocking_connection import BlockingConnection

from odradek import Broker, Producer
from odradek.cli.main import main
from odradek.client import SimpleConsumer
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.protocol.api_keys import ApiKey
from odradek.records.codec import SimpleRecord, build_batch

TOPIC = "hung"
HOUR_MS = 3_600_000


@pytest.fixture
def broker() -> Iterator[Broker]:
    # Kafka's own tests of these tools turn the produce path's verification (KIP-890 part 1)
    # off to leave a hanging transaction behind: with it on the raw batches are refused.
    with Broker(config={"transaction.partition.verification.enable": "false"}) as started:
        with AdminClient({"bootstrap.servers": started.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(TOPIC, 3, 1)]).all()
        yield started


def odradek(
    capsys: pytest.CaptureFixture[str], broker: Broker, *args: str
) -> tuple[int, list[str], str]:
    status = main([*args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def plain(broker: Broker, partition: int, *values: bytes) -> None:
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0}) as producer:
        for value in values:
            producer.send(TOPIC, value, partition=partition).result(30)


def hang(broker: Broker, partition: int, timestamp_ms: int) -> tuple[int, int]:
    """A transactional batch of two records from a fresh producer id, with no coordinator
    behind it; returns (producer id, epoch)."""
    with BlockingConnection(broker.bootstrap_servers) as wire:
        init = wire.request(
            ApiKey.INIT_PRODUCER_ID, 0, {"transactional_id": None, "transaction_timeout": 60_000}
        )
        assert init["error_code"] == 0
        producer_id, epoch = int(init["producer_id"]), int(init["producer_epoch"])
        records = build_batch(
            [SimpleRecord(timestamp_ms, None, b"hung%d" % i) for i in range(2)],
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=0,
            transactional=True,
        )
        response = wire.request(
            ApiKey.PRODUCE,
            7,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 5_000,
                "topic_data": [
                    {"name": TOPIC, "partition_data": [{"index": partition, "records": records}]}
                ],
            },
        )
        [answer] = response["responses"][0]["partition_responses"]
        assert answer["error_code"] == 0
    return producer_id, epoch


def committed_values(broker: Broker, partition: int) -> list[bytes]:
    consumer = SimpleConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "isolation.level": "read_committed"}
    )
    try:
        return [m.value or b"" for m in consumer.fetch(TOPIC, partition, 0)]
    finally:
        consumer.close()


def test_find_and_abort_hanging_transactions(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    two_hours_ago = int(time.time() * 1000) - 2 * HOUR_MS
    plain(broker, 0, b"p0", b"p1")
    hung_id, hung_epoch = hang(broker, 0, two_hours_ago)  # offsets 2-3
    plain(broker, 0, b"p4", b"p5")
    other_id, other_epoch = hang(broker, 1, two_hours_ago)  # offsets 0-1
    plain(broker, 1, b"q2")
    hang(broker, 2, int(time.time() * 1000))  # too recent to hang yet
    # A real transaction, as old by its records, that its coordinator has as Ongoing.
    txn = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "real"})
    try:
        txn.init_transactions()
        txn.begin_transaction()
        txn.send(TOPIC, b"r", partition=2, timestamp_ms=two_hours_ago).result(30)

        assert committed_values(broker, 0) == [b"p0", b"p1"]  # stuck at the hanging one
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            [broker_id] = [b.node_id for b in admin.describe_cluster().brokers]

        status, out, err = odradek(capsys, broker, "transactions", "find-hanging",
                                   "--broker-id", str(broker_id))  # fmt: skip
        assert status == 0, err
        header, *rows = [line.split() for line in out]
        assert header == [
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
        ]
        assert [row[:3] + row[5:7] for row in rows] == [
            [TOPIC, "0", str(hung_id), "2", str(two_hours_ago)],
            [TOPIC, "1", str(other_id), "0", str(two_hours_ago)],
        ]
        assert all(row[-1] in ("119", "120") for row in rows)

        # With a three-hour timeout nothing is old enough.
        status, out, _ = odradek(capsys, broker, "transactions", "find-hanging", "--broker-id",
                                 str(broker_id), "--max-transaction-timeout", "180",
                                 "--output", "json")  # fmt: skip
        assert (status, json.loads("\n".join(out))) == (0, [])

        status, out, err = odradek(capsys, broker, "transactions", "abort", "--topic", TOPIC,
                                   "--partition", "0", "--start-offset", "2")  # fmt: skip
        assert status == 0, err
        assert out == [
            f"Aborted the transaction of producer {hung_id} (epoch {hung_epoch}, coordinator "
            f"epoch 0) on {TOPIC}-0."
        ]
        assert committed_values(broker, 0) == [b"p0", b"p1", b"p4", b"p5"]

        status, out, err = odradek(capsys, broker, "transactions", "abort", "--topic", TOPIC,
                                   "--partition", "1", "--producer-id", str(other_id),
                                   "--producer-epoch", str(other_epoch),
                                   "--coordinator-epoch", "0")  # fmt: skip
        assert status == 0, err
        assert committed_values(broker, 1) == [b"q2"]

        status, out, err = odradek(capsys, broker, "producers", "describe", "--topic", TOPIC,
                                   "--partition", "0", "--output", "json")  # fmt: skip
        assert status == 0, err
        # The plain records' producer is idempotent by default: listed too, with no transaction.
        [after] = [p for p in json.loads("\n".join(out)) if p["producer_id"] == hung_id]
        assert after["current_txn_start_offset"] is None

        status, out, _ = odradek(capsys, broker, "transactions", "find-hanging",
                                 "--broker-id", str(broker_id), "--output", "json")  # fmt: skip
        assert (status, json.loads("\n".join(out))) == (0, [])
        txn.commit_transaction(30)
    finally:
        txn.close()


def test_producers_describe_is_describe_producers(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    producer_id, _ = hang(broker, 1, int(time.time() * 1000))
    status, alias, _ = odradek(capsys, broker, "producers", "describe", "--topic", TOPIC,
                               "--partition", "1")  # fmt: skip
    assert status == 0
    status, original, _ = odradek(capsys, broker, "transactions", "describe-producers",
                                  "--topic", TOPIC, "--partition", "1")  # fmt: skip
    assert status == 0
    assert alias[0].split()[0] == "ProducerId"
    assert alias[1].split()[0] == str(producer_id)
    assert alias[1].split()[-1] == "0"  # the open transaction's first offset
    assert [line.split()[:3] for line in alias] == [line.split()[:3] for line in original]


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (
            ["transactions", "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "7"],
            1,
            f"no open transaction on {TOPIC}-0 starts at offset 7",
        ),
        (
            ["transactions", "abort", "--topic", TOPIC, "--partition", "0"],
            2,
            "give --start-offset, or all of --producer-id",
        ),
        (
            [
                "transactions",
                "abort",
                "--topic",
                TOPIC,
                "--partition",
                "0",
                "--start-offset",
                "0",
                "--producer-id",
                "5",
            ],
            2,
            "not both",
        ),
        (
            [
                "transactions",
                "abort",
                "--topic",
                "nope",
                "--partition",
                "0",
                "--start-offset",
                "0",
            ],
            1,
            "UNKNOWN_TOPIC_OR_PARTITION",
        ),
        (
            [
                "transactions",
                "abort",
                "--topic",
                "nope",
                "--partition",
                "0",
                "--producer-id",
                "5",
                "--producer-epoch",
                "0",
                "--coordinator-epoch",
                "0",
            ],
            1,
            "UNKNOWN_TOPIC_OR_PARTITION",
        ),
        (["transactions", "abort", "--topic", " ", "--partition", "0"], 2, "must not be empty"),
        (["transactions", "find-hanging"], 2, "--broker-id"),
        (["transactions", "find-hanging", "--broker-id", "99"], 1, "broker 99 is not in"),
        (
            ["transactions", "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0"],
            2,
            "--max-transaction-timeout",
        ),
        (["producers", "describe", "--topic", "nope", "--partition", "0"], 1, "UNKNOWN_TOPIC"),
    ],
)
def test_bad_input_is_one_line(
    broker: Broker,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    status: int,
    message: str,
) -> None:
    got, _, err = odradek(capsys, broker, *args)
    line = one_line(err)
    assert got == status, line
    assert line.startswith("odradek: ") or line.startswith("Error: "), line
    assert message in line

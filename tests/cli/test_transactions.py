"""``odradek transactions list|describe|describe-producers`` against an embedded broker with a
real transactional producer: an open transaction is listed as Ongoing with its partition and
shown by the partition's producers with its first offset; after the commit the id is
CompleteCommit and the producer has no open transaction; filters; JSON; bad input is one line
without a traceback (exit 2 for usage, 1 for the broker's answer)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from odradek import Broker, Producer
from odradek.cli.main import main
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

TOPIC, TXN_ID = "ledger", "ledger-writer"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker() as started:
        with AdminClient({"bootstrap.servers": started.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(TOPIC, 2, 1)]).all()
        yield started


@pytest.fixture
def producer(broker: Broker) -> Iterator[Producer]:
    client = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": TXN_ID})
    client.init_transactions()
    yield client
    client.close()


def odradek(
    capsys: pytest.CaptureFixture[str], broker: Broker, *args: str
) -> tuple[int, list[str], str]:
    status = main(["transactions", *args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def rows(lines: list[str]) -> list[list[str]]:
    return [line.split() for line in lines]


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_open_then_committed_transaction(
    broker: Broker, producer: Producer, capsys: pytest.CaptureFixture[str]
) -> None:
    producer.begin_transaction()
    producer.send(TOPIC, b"a", partition=1).result(30)
    producer.send(TOPIC, b"b", partition=1).result(30)

    status, out, _ = odradek(capsys, broker, "list")
    assert status == 0
    header, *listed = rows(out)
    assert header == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    [(txn_id, coordinator, producer_id, state)] = listed
    assert (txn_id, state) == (TXN_ID, "Ongoing")

    status, out, _ = odradek(capsys, broker, "describe", "--transactional-id", TXN_ID)
    assert status == 0
    described = dict(zip(*rows(out), strict=True))
    assert described["CoordinatorId"] == coordinator
    assert described["ProducerId"] == producer_id
    assert described["TransactionState"] == "Ongoing"
    assert described["TopicPartitions"] == f"{TOPIC}-1"
    assert described["CurrentTransactionStartTimeMs"] != "None"

    status, out, _ = odradek(
        capsys, broker, "describe-producers", "--topic", TOPIC, "--partition", "1"
    )
    assert status == 0
    header, *producers = rows(out)
    assert header[0] == "ProducerId"
    assert header[-1] == "CurrentTransactionStartOffset"
    [mine] = producers
    assert mine[0] == producer_id
    assert mine[header.index("LastSequence")] == "1"  # two records: sequences 0 and 1
    assert mine[-1] == "0"  # the transaction's first offset

    producer.commit_transaction()
    # EndTxn is answered once PrepareCommit is logged; CompleteCommit follows the markers.
    deadline = time.monotonic() + 30
    while True:
        status, out, _ = odradek(
            capsys, broker, "describe", "--transactional-id", TXN_ID, "--output", "json"
        )
        assert status == 0
        document = json.loads("\n".join(out))
        if document["state"] != "PrepareCommit" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert document["state"] == "CompleteCommit"
    assert document["producer_id"] == int(producer_id)
    assert document["producer_epoch"] == int(described["ProducerEpoch"])
    status, out, _ = odradek(
        capsys,
        broker,
        "describe-producers",
        "--topic",
        TOPIC,
        "--partition",
        "1",
        "--output",
        "json",
    )
    assert status == 0
    [after] = json.loads("\n".join(out))
    assert after["producer_id"] == int(producer_id)
    assert after["current_txn_start_offset"] is None


def test_an_id_with_no_transaction_yet_is_empty(
    broker: Broker, producer: Producer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its coordinator answers the start time -1, as Kafka's does."""
    status, out, err = odradek(
        capsys, broker, "describe", "--transactional-id", TXN_ID, "--output", "json"
    )
    assert status == 0, err
    document = json.loads("\n".join(out))
    assert document["state"] == "Empty"
    assert document["start_time_ms"] is None
    assert document["partitions"] == []


def test_list_filters(
    broker: Broker, producer: Producer, capsys: pytest.CaptureFixture[str]
) -> None:
    producer.begin_transaction()
    producer.send(TOPIC, b"a", partition=0).result(30)
    status, out, _ = odradek(capsys, broker, "list", "--output", "json")
    [listed] = json.loads("\n".join(out))
    producer_id = listed["producer_id"]
    assert (status, listed["state"]) == (0, "Ongoing")
    status, out, _ = odradek(capsys, broker, "list", "--state", "Ongoing", "--state", "Empty")
    assert (status, len(out)) == (0, 2)
    status, out, _ = odradek(capsys, broker, "list", "--state", "CompleteAbort")
    assert (status, len(out)) == (0, 1)  # the header only
    status, out, _ = odradek(capsys, broker, "list", "--producer-id", str(producer_id + 1))
    assert (status, len(out)) == (0, 1)
    status, out, _ = odradek(capsys, broker, "list", "--producer-id", str(producer_id))
    assert (status, len(out)) == (0, 2)
    producer.abort_transaction()


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["describe", "--transactional-id", "nobody"], 1, "TRANSACTIONAL_ID_NOT_FOUND"),
        (["describe-producers", "--topic", "missing", "--partition", "0"], 1, "UNKNOWN_TOPIC"),
        (["describe-producers", "--topic", TOPIC, "--partition", "7"], 1, "UNKNOWN_TOPIC"),
        (["describe-producers", "--topic", TOPIC, "--partition", "-1"], 2, "--partition"),
        (["describe-producers", "--topic", " ", "--partition", "0"], 2, "--topic"),
        (["describe"], 2, "--transactional-id"),
        (["list", "--state", "Sleeping"], 2, "unknown transaction state: Sleeping"),
        (["list", "--producer-id", "x"], 2, "--producer-id"),
    ],
)
def test_bad_input_is_one_line(
    broker: Broker,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    status: int,
    message: str,
) -> None:
    got, out, err = odradek(capsys, broker, *args)
    assert got == status
    assert message in one_line(err)
    assert out == []

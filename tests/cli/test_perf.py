"""``odradek perf produce|consume`` against an embedded broker: the records arrive and are read
back, progress lines and the summary have Kafka's shape, the throughput cap holds, and bad input
is one line without a traceback."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.cli.main import main
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic, OffsetSpec

LINE = re.compile(
    r"\d+ records (sent|consumed), [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\."
)


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(config={"auto.create.topics.enable": "false"}) as started:
        admin = AdminClient({"bootstrap.servers": started.bootstrap_servers})
        try:
            admin.create_topics([NewTopic("perf", 2, 1)]).all()
        finally:
            admin.close()
        yield started


def run(
    capsys: pytest.CaptureFixture[str], broker: Broker, *args: str
) -> tuple[int, list[str], str]:
    status = main(["perf", *args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out.splitlines(), captured.err


def log_end(broker: Broker) -> int:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        ends = admin.list_offsets(
            {TopicPartition("perf", p): OffsetSpec.latest() for p in (0, 1)}
        ).all()
    finally:
        admin.close()
    return sum(info.offset for info in ends.values())


def test_produce_then_consume(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys,
        broker,
        "produce",
        "--topic",
        "perf",
        "--num-records",
        "5000",
        "--record-size",
        "200",
    )
    assert (status, err) == (0, "")
    assert LINE.fullmatch(out[-1])
    assert out[-1].startswith("5000 records sent, ")
    assert log_end(broker) == 5000

    status, out, err = run(
        capsys, broker, "consume", "--topic", "perf", "--messages", "5000", "--output", "json"
    )
    assert (status, err) == (0, "")
    summary = json.loads("\n".join(out))
    assert summary["records"] == 5000
    assert summary["bytes"] == 5000 * 200
    assert summary["latency_ms"]["50th"] >= 0

    status, out, err = run(
        capsys, broker, "consume", "--topic", "perf", "--messages", "6000", "--timeout-ms", "3000"
    )
    assert status == 1
    assert out[-1].startswith("5000 records consumed, ")
    assert err == "odradek: consumed 5000 of 6000 records: none for 3000 ms\n"


def test_throughput_cap_and_progress_lines(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(
        capsys,
        broker,
        "produce",
        "--topic",
        "perf",
        "--num-records",
        "1000",
        "--record-size",
        "10",
        "--throughput",
        "2000",
        "--reporting-interval-ms",
        "100",
        "--output",
        "json",
    )
    assert status == 0
    summary = json.loads("\n".join(out))
    assert summary["records"] == 1000
    # Pacing can only make it slower than the cap, never faster.
    assert summary["records_per_second"] <= 2000 * 1.05
    progress = err.splitlines()
    assert progress
    assert all(LINE.fullmatch(line) or line.startswith("0 records sent") for line in progress)


@pytest.mark.parametrize(
    "args",
    [
        ["produce", "--topic", "perf", "--num-records", "0", "--record-size", "1"],
        ["produce", "--topic", "perf", "--num-records", "1", "--record-size", "-1"],
        [
            "produce",
            "--topic",
            "perf",
            "--num-records",
            "1",
            "--record-size",
            "1",
            "--throughput",
            "0",
        ],
        [
            "produce",
            "--topic",
            "perf",
            "--num-records",
            "1",
            "--record-size",
            "1",
            "--producer-property",
            "acks",
        ],
        ["produce", "--num-records", "1", "--record-size", "1"],
        ["consume", "--topic", "perf"],
        ["consume", "--topic", "perf", "--messages", "1", "--consumer-property", "=1"],
    ],
)
def test_mistakes_are_one_line_exit_2(
    broker: Broker, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    status, out, err = run(capsys, broker, *args)
    assert (status, out) == (2, [])
    [line] = err.splitlines()
    assert line.startswith("odradek: ")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["produce", "--topic", "nope", "--num-records", "1", "--record-size", "1"],
            "topic 'nope'",
        ),
        (
            [
                "produce",
                "--topic",
                "perf",
                "--num-records",
                "1",
                "--record-size",
                "1",
                "--producer-property",
                "acks=maybe",
            ],
            "producer settings",
        ),
        (["consume", "--topic", "nope", "--messages", "1"], "topic 'nope'"),
        (
            [
                "consume",
                "--topic",
                "perf",
                "--messages",
                "1",
                "--consumer-property",
                "fetch.min.bytes=lots",
            ],
            "consumer settings",
        ),
    ],
)
def test_refusals_are_one_line_exit_1(
    broker: Broker, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    status, out, err = run(capsys, broker, *args)
    assert (status, out) == (1, [])
    [line] = err.splitlines()
    assert line.startswith("odradek: ")
    assert says in line

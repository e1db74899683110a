"""``odradek log-dirs describe`` against an embedded broker: kafka-log-dirs.sh's JSON with the
sizes of the segment files on disk, ``--topic-list`` / ``--broker-list`` narrowing it, and
mistakes as one line without a traceback."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek.cli.main import main
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

from .conftest import produce


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(config={"num.partitions": "2"}) as started:
        yield started


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["log-dirs", "describe", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def on_disk(log_dir: str, partition: str) -> int:
    return sum(f.stat().st_size for f in Path(log_dir, partition).glob("*.log"))


def test_json_of_every_partition_and_of_listed_topics(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic("alpha", 2, 1), NewTopic("beta", 2, 1)]).all()
    produce(broker.bootstrap_servers, "alpha", [b"a" * 300, b"b" * 300])
    produce(broker.bootstrap_servers, "beta", [b"c"], partition=1)
    log_dir = os.path.abspath(broker.data_dir)

    status, out, err = run(capsys, "--bootstrap-server", broker.bootstrap_servers)

    assert (status, err) == (0, "")
    assert json.loads(out) == {
        "version": 1,
        "brokers": [
            {
                "broker": 0,
                "logDirs": [
                    {
                        "logDir": log_dir,
                        "error": None,
                        "partitions": [
                            {
                                "partition": name,
                                "size": on_disk(log_dir, name),
                                "offsetLag": 0,
                                "isFuture": False,
                            }
                            for name in ("alpha-0", "alpha-1", "beta-0", "beta-1")
                        ],
                    }
                ],
            }
        ],
    }
    assert on_disk(log_dir, "alpha-0") > 600

    status, out, _ = run(
        capsys,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--broker-list",
        "0",
        "--topic-list",
        "beta",
    )
    assert status == 0
    (only,) = json.loads(out)["brokers"][0]["logDirs"]
    assert [p["partition"] for p in only["partitions"]] == ["beta-0", "beta-1"]


def test_mistakes_are_one_line(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "--bootstrap-server", broker.bootstrap_servers, "--broker-list", "0,x"
    )
    assert (status, out) == (2, "")
    assert "broker ids" in one_line(err)

    status, out, err = run(
        capsys, "--bootstrap-server", broker.bootstrap_servers, "--broker-list", "0,9"
    )
    assert (status, out) == (2, "")
    assert "9" in one_line(err)

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    status, out, err = run(capsys, "--bootstrap-server", f"127.0.0.1:{port}")
    assert (status, out) == (1, "")
    assert "NETWORK_EXCEPTION" in one_line(err)

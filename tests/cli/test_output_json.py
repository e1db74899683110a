"""``--output json`` on ``topics list|describe``, ``acls list``, ``quotas describe``,
``cluster describe`` and ``users scram describe --output table`` against an embedded broker
(authorizer on; the CLI's ``User:ANONYMOUS`` is a super user)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek.cli.main import main


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    config = {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
    }
    with Broker(config=config) as started:
        yield started


def run(capsys: pytest.CaptureFixture[str], broker: Broker, *args: str) -> str:
    capsys.readouterr()
    status = main([*args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    assert (status, captured.err) == (0, "")
    return captured.out


def test_topics_list_and_describe(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, broker, "topics", "create", "--topic", "js", "--partitions", "2",
        "--config", "retention.ms=60000")  # fmt: skip
    assert "js" in json.loads(run(capsys, broker, "topics", "list", "--output", "json"))
    document = json.loads(
        run(capsys, broker, "topics", "describe", "--topic", "js", "--output", "json")
    )
    assert document == [
        {
            "topic": "js",
            "internal": False,
            "partition_count": 2,
            "replication_factor": 1,
            "configs": {"retention.ms": "60000"},
            "partitions": [
                {"partition": 0, "leader": 0, "replicas": [0], "isr": [0]},
                {"partition": 1, "leader": 0, "replicas": [0], "isr": [0]},
            ],
        }
    ]
    under = run(capsys, broker, "topics", "describe", "--topic", "js",
                "--under-replicated-partitions", "--output", "json")  # fmt: skip
    assert json.loads(under) == []


def test_cluster_describe(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(run(capsys, broker, "cluster", "describe", "--output", "json"))
    assert document["controller"] == 0
    assert document["brokers"] == [
        {"id": 0, "host": "127.0.0.1", "port": broker.port, "rack": None}
    ]
    assert (document["under_replicated_partitions"], document["offline_partitions"]) == (0, 0)
    assert isinstance(document["cluster_id"], str)


def test_acls_list(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, broker, "acls", "add", "--allow-principal", "User:alice",
        "--operation", "Read", "--topic", "js")  # fmt: skip
    document = json.loads(run(capsys, broker, "acls", "list", "--topic", "js", "--output", "json"))
    assert document == [
        {
            "resource_type": "TOPIC",
            "name": "js",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "READ",
            "permission_type": "ALLOW",
        }
    ]


def test_quotas_describe(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, broker, "quotas", "alter", "--user", "alice",
        "--add-config", "producer_byte_rate=1024")  # fmt: skip
    document = json.loads(run(capsys, broker, "quotas", "describe", "--output", "json"))
    assert document == [{"entity": {"user": "alice"}, "configs": {"producer_byte_rate": 1024.0}}]


def test_users_scram_describe_table(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, broker, "users", "scram", "set", "--user", "carol",
        "--mechanism", "SCRAM-SHA-256", "--password", "pw")  # fmt: skip
    assert json.loads(run(capsys, broker, "users", "scram", "describe")) == {
        "carol": {"SCRAM-SHA-256": 4096}
    }
    table = run(capsys, broker, "users", "scram", "describe", "--output", "table")
    assert [line.split() for line in table.splitlines()] == [
        ["USER", "MECHANISM", "ITERATIONS"],
        ["carol", "SCRAM-SHA-256", "4096"],
    ]

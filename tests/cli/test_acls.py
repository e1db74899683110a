"""``odradek acls`` end to end against an embedded broker with the authorizer on (the CLI's
connections are ``User:ANONYMOUS``, a super user here): add, list (Kafka's output), remove,
and one line for bad input."""

from __future__ import annotations

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


def odradek(capsys: pytest.CaptureFixture[str], broker: Broker, *args: str) -> tuple[int, str, str]:
    status = main(["acls", *args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_add_list_remove(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = odradek(
        capsys,
        broker,
        "add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        "orders",
        "--group",
        "billing",
    )
    assert status == 0
    assert (
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`" in out
    )
    status, _, _ = odradek(
        capsys,
        broker,
        "add",
        "--deny-principal",
        "User:bob",
        "--deny-host",
        "10.0.0.9",
        "--topic",
        "pay-",
        "--resource-pattern-type",
        "prefixed",
    )
    assert status == 0
    status, out, _ = odradek(capsys, broker, "list")
    assert status == 0
    assert out.count("Current ACLs for resource") == 3
    assert "(principal=User:bob, host=10.0.0.9, operation=ALL, permissionType=DENY)" in out
    status, out, _ = odradek(capsys, broker, "list", "--topic", "orders")
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("(")]
    assert lines == [
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
        "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)",
    ]
    status, out, _ = odradek(
        capsys,
        broker,
        "remove",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--topic",
        "orders",
    )
    assert status == 0
    assert "operation=READ" in out
    status, out, _ = odradek(capsys, broker, "list", "--principal", "User:alice")
    assert out.count("operation=READ") == 1  # on the group, which was not named
    assert out.count("operation=DESCRIBE") == 2
    status, out, _ = odradek(
        capsys, broker, "remove", "--topic", "pay-", "--resource-pattern-type", "prefixed"
    )
    assert "User:bob" in out
    assert "User:bob" not in odradek(capsys, broker, "list")[1]


def test_producer_and_consumer_shortcuts(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = odradek(
        capsys,
        broker,
        "add",
        "--allow-principal",
        "User:carol",
        "--producer",
        "--idempotent",
        "--consumer",
        "--topic",
        "events",
        "--group",
        "readers",
    )
    assert status == 0
    status, out, _ = odradek(capsys, broker, "list", "--principal", "User:carol")
    operations = sorted(
        line.split("operation=")[1].split(",")[0]
        for line in out.splitlines()
        if "(principal" in line
    )
    # Topic: WRITE, DESCRIBE, CREATE, READ; group: READ; cluster: IDEMPOTENT_WRITE.
    assert operations == ["CREATE", "DESCRIBE", "IDEMPOTENT_WRITE", "READ", "READ", "WRITE"]
    assert "resourceType=CLUSTER" in out
    odradek(
        capsys,
        broker,
        "remove",
        "--allow-principal",
        "User:carol",
        "--topic",
        "events",
        "--group",
        "readers",
        "--cluster",
    )
    assert "carol" not in odradek(capsys, broker, "list")[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "--allow-principal", "alice", "--topic", "t"), "Type:name"),
        (("add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"), "Fly"),
        (("add", "--allow-principal", "User:a"), "name a resource"),
        (("add", "--topic", "t"), "name a principal"),
        (("list", "--topic", "t", "--resource-pattern-type", "glob"), "glob"),
        (("add", "--allow-principal", "User:a", "--consumer", "--topic", "t"), "--group"),
    ],
)
def test_bad_input_is_one_line(
    broker: Broker, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    status, out, err = odradek(capsys, broker, *args)
    assert status == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_a_broker_without_an_authorizer_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    with Broker() as plain:
        status, _, err = odradek(capsys, plain, "list")
    assert status == 1
    assert "SECURITY_DISABLED" in err
    assert len(err.strip().splitlines()) == 1

"""``odradek quotas`` end to end against an embedded broker: alter (set, remove, defaults),
describe (all, by entity) in Kafka's words, what the store holds, and one line for bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek.cli.main import main


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as started:
        yield started


def odradek(capsys: pytest.CaptureFixture[str], broker: Broker, *args: str) -> tuple[int, str, str]:
    status = main(["quotas", *args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_alter_and_describe(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = odradek(
        capsys,
        broker,
        "alter",
        "--user",
        "alice",
        "--client-id",
        "app",
        "--add-config",
        "producer_byte_rate=1048576,consumer_byte_rate=2097152",
    )
    assert status == 0
    assert out == "Completed updating config for user-principal 'alice', client-id 'app'.\n"
    assert (
        odradek(
            capsys,
            broker,
            "alter",
            "--client-id-default",
            "--add-config",
            "producer_byte_rate=1000",
        )[0]
        == 0
    )
    status, out, _ = odradek(capsys, broker, "describe")
    assert status == 0
    assert out.splitlines() == [
        "Quota configs for the default client-id are producer_byte_rate=1000.0",
        "Quota configs for user-principal 'alice', client-id 'app' are "
        "consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0",
    ]
    store = broker.app.store
    assert store is not None
    stored = json.loads(store.get("/config/users/alice/clients/app")[0])
    assert stored["config"] == {
        "consumer_byte_rate": "2097152.0",
        "producer_byte_rate": "1048576.0",
    }
    status, out, _ = odradek(
        capsys,
        broker,
        "alter",
        "--user",
        "alice",
        "--client-id",
        "app",
        "--delete-config",
        "consumer_byte_rate",
    )
    assert status == 0
    status, out, _ = odradek(capsys, broker, "describe", "--user", "alice")
    assert out.splitlines() == [
        "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1048576.0"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("alter", "--user", "a", "--add-config", "bytes=1"), "unknown quota"),
        (("alter", "--user", "a", "--add-config", "producer_byte_rate=fast"), "key=number"),
        (("alter", "--user", "a", "--add-config", "producer_byte_rate=0"), "positive"),
        (("alter", "--add-config", "producer_byte_rate=1"), "name an entity"),
        (("alter", "--user", "a"), "nothing to do"),
        (("describe", "--user", "a", "--user-default"), "not both"),
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

"""``odradek api-versions``, ``offsets get``, ``records delete`` and ``configs describe|alter``
end to end against an embedded broker: their output, their JSON, and bad input as one line
without a traceback (exit 2 for a mistake on the command line, 1 for the broker's refusal)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek.cli.main import main
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.protocol import ApiKey

from .conftest import produce

TOPIC = "orders"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker() as started:
        admin = AdminClient({"bootstrap.servers": started.bootstrap_servers})
        try:
            admin.create_topics([NewTopic(TOPIC, 2, 1)]).all()
        finally:
            admin.close()
        # 1_700_000_000_000 is the records' timestamp (see conftest.produce).
        produce(started.bootstrap_servers, TOPIC, [b"a%d" % i for i in range(5)], partition=0)
        produce(started.bootstrap_servers, TOPIC, [b"b%d" % i for i in range(3)], partition=1)
        yield started


def run(
    capsys: pytest.CaptureFixture[str], broker: Broker, *args: str
) -> tuple[int, list[str], str]:
    status = main([*args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out.splitlines(), captured.err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("odradek: ")
    return lines[0]


def test_api_versions(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, broker, "api-versions")
    assert (status, err) == (0, "")
    assert out[0] == f"127.0.0.1:{broker.port} (id: 0 rack: null) -> ("
    assert out[-1] == ")"
    produce_line = next(line for line in out if line.startswith("\tProduce(0): "))
    assert produce_line.endswith("[usable: 11],") or "[usable: " in produce_line
    status, out, _ = run(capsys, broker, "api-versions", "--output", "json")
    [report] = json.loads("\n".join(out))
    keys = {api["key"]: api for api in report["apis"]}
    assert ApiKey.FETCH in keys
    assert keys[ApiKey.API_VERSIONS]["min"] == 0
    assert all(
        api["usable"] is None or api["min"] <= api["usable"] <= api["max"] for api in keys.values()
    )


def test_offsets_get(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, broker, "offsets", "get", "--topic", TOPIC) == (
        0,
        [f"{TOPIC}:0:5", f"{TOPIC}:1:3"],
        "",
    )
    assert run(capsys, broker, "offsets", "get", "--topic", f"{TOPIC}:1", "--time", "earliest")[
        1
    ] == [f"{TOPIC}:1:0"]
    # At the records' time: the first offset; after it: none (no line, as Kafka's tool).
    _, out, _ = run(
        capsys, broker, "offsets", "get", "--topic", f"{TOPIC}:0", "--time", "1700000000000"
    )
    assert out == [f"{TOPIC}:0:0"]
    _, out, _ = run(
        capsys, broker, "offsets", "get", "--topic", f"{TOPIC}:0", "--time", "1800000000000"
    )
    assert out == []
    _, out, _ = run(capsys, broker, "offsets", "get", "--topic", TOPIC, "--output", "json")
    assert [(e["partition"], e["offset"]) for e in json.loads("\n".join(out))] == [(0, 5), (1, 3)]


def test_records_delete(broker: Broker, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, err = run(
        capsys, broker, "records", "delete", "--topic", TOPIC, "--partition", "0", "--offset", "2"
    )
    assert (status, err) == (0, "")
    assert out == ["Records delete operation completed:", f"partition: {TOPIC}-0\tlow_watermark: 2"]
    plan = tmp_path / "offsets.json"
    plan.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": TOPIC, "partition": 1, "offset": -1},
                    {"topic": "nope", "partition": 0, "offset": 1},
                ],
                "version": 1,
            }
        )
    )
    status, out, err = run(capsys, broker, "records", "delete", "--offset-json-file", str(plan))
    assert status == 1
    assert out[1] == f"partition: {TOPIC}-1\tlow_watermark: 3"
    assert out[2] == "partition: nope-0\terror: UNKNOWN_TOPIC_OR_PARTITION"
    assert one_line(err) == "odradek: 1 of 2 partitions failed"
    assert run(capsys, broker, "offsets", "get", "--topic", TOPIC, "--time", "earliest")[1] == [
        f"{TOPIC}:0:2",
        f"{TOPIC}:1:3",
    ]


def test_configs_describe_and_alter(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    entity = ("--entity-type", "topics", "--entity-name", TOPIC)
    assert run(capsys, broker, "configs", "describe", *entity) == (
        0,
        [f"Dynamic configs for topic {TOPIC} are:"],
        "",
    )
    status, out, err = run(
        capsys,
        broker,
        "configs",
        "alter",
        *entity,
        "--add-config",
        "retention.ms=1000,cleanup.policy=[compact,delete]",
    )
    assert (status, out, err) == (0, [f"Completed updating config for topic {TOPIC}."], "")
    status, out, _ = run(capsys, broker, "configs", "describe", *entity)
    assert out == [
        f"Dynamic configs for topic {TOPIC} are:",
        "  cleanup.policy=compact,delete sensitive=false source=DYNAMIC_TOPIC_CONFIG",
        "  retention.ms=1000 sensitive=false source=DYNAMIC_TOPIC_CONFIG",
    ]
    run(capsys, broker, "configs", "alter", *entity, "--delete-config", "retention.ms")
    _, out, _ = run(capsys, broker, "configs", "describe", *entity, "--output", "json")
    [document] = json.loads("\n".join(out))
    assert [c["name"] for c in document["configs"]] == ["cleanup.policy"]
    _, out, _ = run(capsys, broker, "configs", "describe", *entity, "--all")
    assert any(line.startswith("  segment.bytes=") for line in out)
    _, out, _ = run(
        capsys,
        broker,
        "configs",
        "describe",
        "--entity-type",
        "brokers",
        "--entity-name",
        "0",
        "--all",
    )
    assert out[0] == "All configs for broker 0 are:"
    assert "  broker.id=0 sensitive=false source=STATIC_BROKER_CONFIG" in out or any(
        line.startswith("  broker.id=0 ") for line in out
    )


def test_broker_refusals_are_one_line_exit_1(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(
        capsys,
        broker,
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        TOPIC,
        "--add-config",
        "retention.ms=soon",
    )
    assert (status, out) == (1, [])
    assert "INVALID_CONFIG" in one_line(err)
    status, out, err = run(capsys, broker, "offsets", "get", "--topic", "nope")
    assert (status, out) == (1, [])
    assert "UNKNOWN_TOPIC_OR_PARTITION" in one_line(err)


@pytest.mark.parametrize(
    "args",
    [
        ["api-versions", "--output", "xml"],
        ["offsets", "get"],
        ["offsets", "get", "--topic", TOPIC, "--time", "yesterday"],
        ["offsets", "get", "--topic", f"{TOPIC}:x"],
        ["records", "delete", "--topic", TOPIC],
        ["records", "delete", "--topic", TOPIC, "--partition", "-1", "--offset", "1"],
        ["records", "delete", "--offset-json-file", "/nonexistent.json"],
        ["configs", "describe"],
        ["configs", "describe", "--entity-type", "groups"],
        ["configs", "describe", "--entity-type", "brokers", "--entity-name", "zero"],
        ["configs", "describe", "--entity-type", "topics", "--entity-default"],
        ["configs", "alter", "--entity-type", "topics", "--entity-name", TOPIC],
        ["configs", "alter", "--entity-type", "topics", "--add-config", "a=1"],
        [
            "configs",
            "alter",
            "--entity-type",
            "topics",
            "--entity-name",
            TOPIC,
            "--add-config",
            "novalue",
        ],
        [
            "configs",
            "alter",
            "--entity-type",
            "topics",
            "--entity-name",
            TOPIC,
            "--add-config",
            "a=1",
            "--delete-config",
            "a",
        ],
        [
            "configs",
            "alter",
            "--entity-type",
            "users",
            "--entity-name",
            "u",
            "--add-config",
            "producer_byte_rate=fast",
        ],
    ],
)
def test_mistakes_are_one_line_exit_2(
    broker: Broker, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    status, out, err = run(capsys, broker, *args)
    assert (status, out) == (2, [])
    one_line(err)


@pytest.mark.parametrize(
    "content",
    ["not json", "{}", '{"partitions": []}', '{"partitions": [{"topic": "t", "partition": 0}]}'],
)
def test_a_bad_offset_file_is_one_line_exit_2(
    broker: Broker, capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(content)
    status, out, err = run(capsys, broker, "records", "delete", "--offset-json-file", str(plan))
    assert (status, out) == (2, [])
    assert "--offset-json-file" in one_line(err)


def test_client_and_user_quotas(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    """Through DescribeClientQuotas / AlterClientQuotas where the broker serves them; one line
    saying it does not where it does not."""
    assert broker.app.ctx is not None
    served = ApiKey.DESCRIBE_CLIENT_QUOTAS in broker.app.ctx.supported_versions
    user = ("--entity-type", "users", "--entity-name", "alice")
    status, out, err = run(
        capsys, broker, "configs", "alter", *user, "--add-config", "producer_byte_rate=1024"
    )
    if not served:
        assert (status, out) == (1, [])
        assert one_line(err) == (
            "odradek: the broker does not serve AlterClientQuotas (client and user quotas)"
        )
        status, out, err = run(capsys, broker, "configs", "describe", *user)
        assert (status, out) == (1, [])
        assert "does not serve DescribeClientQuotas" in one_line(err)
        return
    assert (status, out, err) == (0, ["Completed updating config for user alice."], "")
    status, out, err = run(capsys, broker, "configs", "describe", *user)
    assert (status, out, err) == (
        0,
        ["Quota configs for user=alice are producer_byte_rate=1024"],
        "",
    )

"""``odradek topics`` end to end against an ``odradek serve`` process: create, list, describe,
alter and delete; broker errors as one line with Kafka's error name (exit 1); CLI mistakes as
one line without a traceback (exit 2, or 1 for an unreachable broker)."""

from __future__ import annotations

import socket

import click
import pytest

from odradek.cli.main import main
from odradek.cli.topics import parse_configs

from .conftest import Served, ServeFactory, fetch_values, produce, run_odradek


def odradek(
    capsys: pytest.CaptureFixture[str], served: Served, *args: str
) -> tuple[int, list[str], str]:
    status = main(["topics", *args, "--bootstrap-server", served.bootstrap])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_create_list_describe_alter_delete(
    serve: ServeFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve()
    status, out, err = odradek(
        capsys,
        served,
        "create",
        "--topic",
        "orders",
        "--partitions",
        "2",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=86400000",
        "--config",
        "cleanup.policy=compact",
    )
    assert (status, out, err) == (0, ["Created topic orders."], "")
    assert odradek(capsys, served, "create", "--topic", "audit")[:2] == (
        0,
        ["Created topic audit."],
    )

    assert odradek(capsys, served, "list") == (0, ["audit", "orders"], "")

    status, out, err = odradek(capsys, served, "describe", "--topic", "orders")
    assert (status, err) == (0, "")
    assert out == [
        "Topic: orders\tPartitionCount: 2\tReplicationFactor: 1\t"
        "Configs: cleanup.policy=compact,retention.ms=86400000",
        "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
        "\tTopic: orders\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
    ]
    status, out, _ = odradek(capsys, served, "describe")
    assert status == 0
    assert [line.split("\t")[0] for line in out if not line.startswith("\t")] == [
        "Topic: audit",
        "Topic: orders",
    ]
    assert out[0].endswith("Configs: ")  # nothing overridden

    assert produce(served.bootstrap, "orders", [b"kept"], partition=1) == 0
    status, out, err = odradek(
        capsys,
        served,
        "alter",
        "--topic",
        "orders",
        "--add-config",
        "segment.bytes=1048576,cleanup.policy=[compact,delete]",
        "--delete-config",
        "retention.ms",
        "--partitions",
        "3",
    )
    assert (status, err) == (0, "")
    assert out == ["Updated the configs of topic orders.", "Topic orders now has 3 partitions."]
    status, out, _ = odradek(capsys, served, "describe", "--topic", "orders")
    assert out[0] == (
        "Topic: orders\tPartitionCount: 3\tReplicationFactor: 1\t"
        "Configs: cleanup.policy=compact,delete,segment.bytes=1048576"
    )
    assert len(out) == 4
    assert fetch_values(served.bootstrap, "orders", partition=1) == [b"kept"]
    assert produce(served.bootstrap, "orders", [b"new"], partition=2) == 0

    assert odradek(capsys, served, "delete", "--topic", "audit") == (
        0,
        ["Deleted topic audit."],
        "",
    )
    assert odradek(capsys, served, "list") == (0, ["orders"], "")


def test_broker_errors_are_one_line_with_the_kafka_error_name(
    serve: ServeFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve()
    assert odradek(capsys, served, "create", "--topic", "t", "--partitions", "2")[0] == 0

    cases = [
        (["create", "--topic", "t"], "odradek: TOPIC_ALREADY_EXISTS: "),
        (["create", "--topic", "u", "--config", "no.such.config=1"], "odradek: INVALID_CONFIG: "),
        (["create", "--topic", "bad/name"], "odradek: INVALID_TOPIC_EXCEPTION: "),
        (["describe", "--topic", "missing"], "odradek: UNKNOWN_TOPIC_OR_PARTITION: "),
        (["alter", "--topic", "t", "--partitions", "1"], "odradek: INVALID_PARTITIONS: "),
        (["alter", "--topic", "t", "--add-config", "retention.ms=x"], "odradek: INVALID_CONFIG: "),
        (
            ["alter", "--topic", "missing", "--add-config", "retention.ms=1"],
            "odradek: UNKNOWN_TOPIC_OR_PARTITION: ",
        ),
        (["delete", "--topic", "missing"], "odradek: UNKNOWN_TOPIC_OR_PARTITION: "),
    ]
    for args, start in cases:
        status, out, err = odradek(capsys, served, *args)
        assert status == 1, args
        assert out == [], args
        assert one_line(err).startswith(start), (args, err)

    # Nothing changed, and the "if" flags turn the expected errors into success.
    assert odradek(capsys, served, "list") == (0, ["t"], "")
    assert odradek(capsys, served, "create", "--topic", "t", "--if-not-exists") == (0, [], "")
    assert odradek(capsys, served, "delete", "--topic", "gone", "--if-exists") == (0, [], "")
    assert odradek(capsys, served, "describe", "--topic", "gone", "--if-exists") == (0, [], "")


def test_the_odradek_executable_manages_topics(serve: ServeFactory) -> None:
    served = serve()
    bootstrap = ["--bootstrap-server", served.bootstrap]
    created = run_odradek("topics", "create", "--topic", "exe", "--partitions", "3", *bootstrap)
    assert (created.returncode, created.stdout, created.stderr) == (0, "Created topic exe.\n", "")
    described = run_odradek("topics", "describe", "--topic", "exe", *bootstrap)
    assert described.returncode == 0
    assert described.stdout.startswith("Topic: exe\tPartitionCount: 3\tReplicationFactor: 1\t")
    failed = run_odradek("topics", "create", "--topic", "exe", *bootstrap)
    assert failed.returncode == 1
    assert one_line(failed.stderr).startswith("odradek: TOPIC_ALREADY_EXISTS: ")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["topics", "list", "--bogus"], 2, "No such option"),
        (["topics", "frobnicate"], 2, "No such command"),
        (["topics", "create", "--bootstrap-server", "127.0.0.1:1"], 2, "Missing option '--topic'"),
        (["topics", "list", "--bootstrap-server", "nohost"], 2, "expected HOST:PORT"),
        (["topics", "list", "--bootstrap-server", "127.0.0.1:99999"], 2, "expected HOST:PORT"),
        (["topics", "create", "--topic", "t", "--partitions", "0"], 2, "--partitions"),
        (["topics", "create", "--topic", "t", "--config", "novalue"], 2, "expected K=V"),
        (["topics", "alter", "--topic", "t"], 2, "nothing to alter"),
        (["serve", "--override", "broken"], 2, "expected NAME=VALUE"),
        (["topics", "list", "--bootstrap-server", "PORT"], 1, "NETWORK_EXCEPTION: cannot connect"),
    ],
)
def test_cli_mistakes_are_one_line_without_a_traceback(
    args: list[str], status: int, message: str
) -> None:
    args = [arg.replace("PORT", f"127.0.0.1:{closed_port()}") for arg in args]
    result = run_odradek(*args)
    assert result.returncode == status
    assert result.stdout == ""
    line = one_line(result.stderr)
    assert line.startswith("odradek: ")
    assert message in line


def test_add_config_entries_split_on_commas_and_keep_bracketed_lists() -> None:
    assert parse_configs(["a=1,b=2", "c=x,y", "d=[p,q]", "a=3"], "--add-config", commas=True) == {
        "a": "3",
        "b": "2",
        "c": "x,y",
        "d": "p,q",
    }
    assert parse_configs(["e=1,2"], "--config", commas=False) == {"e": "1,2"}
    with pytest.raises(click.BadParameter, match="expected K=V, got 'x'"):
        parse_configs(["x,a=1"], "--add-config", commas=True)


def test_kafka_topic_configs_without_effect_are_accepted(
    serve: ServeFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve()
    status, out, err = odradek(
        capsys, served, "create", "--topic", "jitter", "--config", "segment.jitter.ms=100"
    )
    assert (status, out, err) == (0, ["Created topic jitter."], "")
    status, out, err = odradek(capsys, served, "describe", "--topic", "jitter")
    assert (status, err) == (0, "")
    assert out[0].endswith("Configs: segment.jitter.ms=100")
    status, _out, err = odradek(
        capsys, served, "create", "--topic", "typo", "--config", "segment.jiter.ms=100"
    )
    assert status == 1
    assert one_line(err).startswith("odradek: INVALID_CONFIG: ")

"""``odradek leader-election`` and ``odradek cluster describe`` without a cluster: every
mistake on the command line is one line and exit 2 (no traceback, no broker contacted); an
unreachable broker is one line and exit 1; and the lines printed for each kind of outcome
(the cluster tests in tests/cluster/test_cli_cluster.py cannot yet produce a successful
election: followers do not replicate)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from odradek.cli.leader_election import outcome_lines
from odradek.cli.main import main
from odradek.client import TopicPartition
from odradek.client.admin_types import AdminResult, ElectionType
from odradek.errors import ErrorCode, KafkaError, error_for_code


def _one_line(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return status, lines[0]


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


BOOTSTRAP = ("--bootstrap-server", "127.0.0.1:1")  # never reached: parsing fails first
ELECT = ("leader-election", *BOOTSTRAP, "--election-type", "PREFERRED")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (ELECT, "give exactly one of"),
        ((*ELECT, "--all-topic-partitions", "--topic", "t", "--partition", "0"), "(got "),
        ((*ELECT, "--topic", "t"), "--topic and --partition go together"),
        ((*ELECT, "--partition", "0"), "--topic and --partition go together"),
        ((*ELECT, "--topic", "t", "--partition", "-1"), "'--partition'"),
        ((*ELECT, "--topic", "", "--partition", "0"), "must not be empty"),
        (
            ("leader-election", *BOOTSTRAP, "--election-type", "dirty", "--all-topic-partitions"),
            "'--election-type'",
        ),
        (("leader-election", *BOOTSTRAP, "--all-topic-partitions"), "--election-type"),
        (
            ("leader-election", "--bootstrap-server", "nohost", "--election-type", "preferred"),
            "'--bootstrap-server'",
        ),
        (("cluster", "describe", "--bootstrap-server", "h:notaport"), "'--bootstrap-server'"),
    ],
)
def test_command_line_mistakes_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    status, line = _one_line(capsys, *args)
    assert status == 2
    assert line.startswith("odradek: ")
    assert says in line


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read"),
        ("{not json", "is not JSON"),
        (json.dumps([{"topic": "t", "partition": 0}]), 'expected {"partitions"'),
        (json.dumps({"partitions": [{"topic": "t"}]}), "partitions[0] needs"),
        (json.dumps({"partitions": [{"topic": "t", "partition": "0"}]}), "partitions[0] needs"),
        (json.dumps({"partitions": [{"topic": "t", "partition": True}]}), "partitions[0] needs"),
        (json.dumps({"partitions": [{"topic": "", "partition": 0}]}), "partitions[0] needs"),
        (json.dumps({"partitions": []}), "no partitions listed"),
        (
            json.dumps({"partitions": [{"topic": "t", "partition": 1}] * 2}),
            "t-1 is listed twice",
        ),
    ],
)
def test_a_bad_json_file_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, says: str
) -> None:
    path = tmp_path / "partitions.json"
    if content is not None:
        path.write_text(content)
    status, line = _one_line(capsys, *ELECT, "--path-to-json-file", str(path))
    assert status == 2
    assert "'--path-to-json-file'" in line
    assert says in line


@pytest.mark.parametrize(
    "args",
    [
        ("cluster", "describe"),
        ("leader-election", "--election-type", "unclean", "--all-topic-partitions"),
    ],
)
def test_an_unreachable_broker_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    status, line = _one_line(capsys, *args, "--bootstrap-server", f"127.0.0.1:{_unused_port()}")
    assert status == 1
    assert line.startswith("odradek: NETWORK_EXCEPTION")


def test_outcome_lines_sort_and_group_partitions_as_kafkas_tool_does() -> None:
    def tp(topic: str, partition: int) -> TopicPartition:
        return TopicPartition(topic, partition)

    def error(code: ErrorCode, item: TopicPartition, detail: str) -> KafkaError:
        return error_for_code(int(code), f"{item}: {detail}")

    order = [tp("b", 0), tp("a", 1), tp("a", 0), tp("c", 3), tp("c", 2), tp("d", 0)]
    errors = {
        tp("c", 3): error(ErrorCode.ELECTION_NOT_NEEDED, tp("c", 3), "ELECTION_NOT_NEEDED"),
        tp("c", 2): error(
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, tp("c", 2), "replica 1 is not in the ISR"
        ),
        tp("d", 0): error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, tp("d", 0), "no partition d-0"),
    }
    values = {item: None for item in order if item not in errors}
    lines, failed = outcome_lines(ElectionType.UNCLEAN, AdminResult(order, values, errors))
    assert failed == 2
    assert lines == [
        "Successfully completed leader election (UNCLEAN) for partitions a-0, a-1, b-0",
        "Valid replica already elected for partitions c-3",
        "Error completing leader election (UNCLEAN) for partition: c-2: "
        "PREFERRED_LEADER_NOT_AVAILABLE: replica 1 is not in the ISR",
        "Error completing leader election (UNCLEAN) for partition: d-0: "
        "UNKNOWN_TOPIC_OR_PARTITION: no partition d-0",
    ]
    nothing, none_failed = outcome_lines(ElectionType.PREFERRED, AdminResult([], {}, {}))
    assert (nothing, none_failed) == ([], 0)

"""``odradek reassign-partitions`` without a cluster: every command-line and file mistake is
one line and exit 2 (no traceback, no broker contacted), an unreachable broker one line and
exit 1, and the lines ``--generate`` and ``--verify`` print (the cluster round trip is in
tests/cluster/test_reassignment.py)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from odradek.cli.main import main
from odradek.cli.reassign_partitions import generate_lines, verify_lines
from odradek.client import TopicPartition

BOOTSTRAP = ("--bootstrap-server", "127.0.0.1:1")  # never reached: parsing fails first
REASSIGN = ("reassign-partitions", *BOOTSTRAP)
ENTRY = {"topic": "t", "partition": 0, "replicas": [1]}


def _one_line(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return status, lines[0]


def _file(tmp_path: Path, name: str, content: object) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_command_line_mistakes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    topics = _file(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "t"}]})
    cases = [
        ([], "give exactly one of --generate, --execute, --cancel, --verify"),
        (["--generate", "--verify"], "(got --generate, --verify)"),
        (["--generate", "--broker-list", "1"], "--generate needs --topics-to-move-json-file"),
        (["--generate", "--topics-to-move-json-file", topics], "and --broker-list"),
        (["--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,x"],
         "expected comma-separated broker ids"),
        (["--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,1"],
         "listed twice"),
        (["--generate", "--topics-to-move-json-file", str(tmp_path / "none"), "--broker-list", "1"],
         "cannot read"),
        (["--execute"], "--execute needs --reassignment-json-file"),
        (["--verify", "--reassignment-json-file", str(tmp_path / "none")], "cannot read"),
        (["--execute", "--reassignment-json-file", _file(tmp_path, "bad.json", "{")], "not JSON"),
        (["--execute", "--reassignment-json-file",
          _file(tmp_path, "dup.json", {"partitions": [ENTRY] * 2})],
         "t-0 is listed twice"),
        (["--execute", "--reassignment-json-file",
          _file(tmp_path, "null.json", {"partitions": [{**ENTRY, "replicas": None}]})],
         "t-0 has no replicas"),
        (["--generate", "--topics-to-move-json-file", _file(tmp_path, "t.json", {"topics": []}),
          "--broker-list", "1"], "no topics listed"),
        (["--generate", "--topics-to-move-json-file", _file(tmp_path, "u.json", {"topics": [{}]}),
          "--broker-list", "1"], "topics[0] needs a topic"),
    ]  # fmt: skip
    for args, fragment in cases:
        status, line = _one_line(capsys, *REASSIGN, *args)
        assert status == 2, args
        assert line.startswith("odradek: "), line
        assert fragment in line, (args, line)


def test_an_unreachable_broker_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    plan = _file(
        tmp_path, "plan.json", {"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]}
    )
    status, line = _one_line(
        capsys, "reassign-partitions", "--bootstrap-server", f"127.0.0.1:{port}",
        "--verify", "--reassignment-json-file", plan,
    )  # fmt: skip
    assert status == 1
    assert line.startswith("odradek: NETWORK_EXCEPTION")


def test_generate_prints_both_assignments_as_kafka_json() -> None:
    lines = generate_lines({TopicPartition("t", 0): (0, 1)}, {TopicPartition("t", 0): (2, 0)})
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [0, 1], "log_dirs": ["any", "any"]}
        ],
    }
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    assert json.loads(lines[4])["partitions"][0]["replicas"] == [2, 0]


def test_verify_lines() -> None:
    targets = {TopicPartition("t", p): (1, 2) for p in range(3)}
    ongoing = {TopicPartition("t", 1): object()}
    current = {
        TopicPartition("t", 0): (1, 2),
        TopicPartition("t", 1): (1, 2, 0),
        TopicPartition("t", 2): (2, 1),
    }
    assert verify_lines(targets, ongoing, current) == [
        "Reassignment of partition t-0 is completed.",
        "Reassignment of partition t-1 is still in progress.",
        "There is no active reassignment of partition t-2, but replica set is [2,1] rather "
        "than [1,2].",
    ]

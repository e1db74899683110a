"""AlterReplicaLogDirs against a live broker with two ``log.dirs``: nothing is moved, and each
partition is answered clearly — NONE where the replica already is, POLICY_VIOLATION for a
move to the other directory, LOG_DIR_NOT_FOUND for a directory the broker does not have,
REPLICA_NOT_AVAILABLE for a partition it does not hold."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.broker._wire import Wire

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, list[str]]]:
    root = tmp_path_factory.mktemp("alterdirs")
    dirs = [str(root / "d1"), str(root / "d2")]
    with Broker(config={"log.dirs": ",".join(dirs)}) as running:
        yield running, dirs


def _home(dirs: list[str], topic: str, partition: int) -> str:
    [home] = [d for d in dirs if Path(d, f"{topic}-{partition}").is_dir()]
    return home


def _alter(
    wire: Wire, version: int, moves: list[tuple[str, dict[str, list[int]]]]
) -> dict[Any, int]:
    body = wire.request(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        version,
        {
            "dirs": [
                {
                    "path": path,
                    "topics": [{"name": t, "partitions": parts} for t, parts in topics.items()],
                }
                for path, topics in moves
            ]
        },
    )
    return {
        (result["topic_name"], p["partition_index"]): int(p["error_code"])
        for result in body["results"]
        for p in result["partitions"]
    }


@pytest.mark.parametrize("version", [1, 2])
def test_each_partition_gets_a_clear_answer_and_nothing_moves(
    broker: tuple[Broker, list[str]], version: int
) -> None:
    running, dirs = broker
    wire = Wire(running.port)
    try:
        topic = f"placed-v{version}"
        assert wire.create_topics({topic: 4}) == {topic: 0}
        homes = {p: _home(dirs, topic, p) for p in range(4)}
        other = {p: next(d for d in dirs if d != home) for p, home in homes.items()}
        answers = _alter(
            wire,
            version,
            [
                (homes[0], {topic: [0]}),
                (other[1], {topic: [1]}),
                (str(Path(dirs[0]).parent / "elsewhere"), {topic: [2]}),
                (dirs[0], {"unheld": [0]}),
            ],
        )
    finally:
        wire.close()
    assert answers == {
        (topic, 0): ErrorCode.NONE,
        (topic, 1): ErrorCode.POLICY_VIOLATION,
        (topic, 2): ErrorCode.LOG_DIR_NOT_FOUND,
        ("unheld", 0): ErrorCode.REPLICA_NOT_AVAILABLE,
    }
    assert {p: _home(dirs, topic, p) for p in range(4)} == homes  # nothing moved
    # A path given with a trailing separator names the same directory.
    wire = Wire(running.port)
    try:
        again = _alter(wire, version, [(homes[3] + os.sep, {topic: [3]})])
    finally:
        wire.close()
    assert again == {(topic, 3): ErrorCode.NONE}

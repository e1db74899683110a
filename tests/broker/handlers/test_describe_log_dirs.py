"""DescribeLogDirs: without sockets (fakes: which partitions each version answers, and which
fields), and against a live broker through kafka-python's admin client (sizes are the bytes of
the segment files on disk, every ``log.dirs`` directory is answered)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from tests.broker.fakes import FakePartition, context, request

from odradek import Broker
from odradek._types import TopicPartition
from odradek.broker.handlers import describe_log_dirs
from odradek.errors import ErrorCode
from odradek.records.codec import SimpleRecord, build_batch

from .conftest import RawClient, schema

VERSIONS = (1, 2, 3, 4)


def describe_request(version: int, topics: dict[str, list[int]] | None) -> Any:
    m = schema("describe_log_dirs", version)
    return m.DescribeLogDirsRequest(
        topics=None
        if topics is None
        else tuple(
            m.DescribableLogDirTopic(topic=name, partitions=tuple(parts))
            for name, parts in topics.items()
        )
    )


def logs_of(response: Any) -> dict[str, dict[tuple[str, int], tuple[int, int, bool]]]:
    """log dir → (topic, partition) → (size, offset lag, is future)."""
    return {
        result.log_dir: {
            (topic.name, int(p.partition_index)): (
                int(p.partition_size),
                int(p.offset_lag),
                p.is_future_key,
            )
            for topic in result.topics
            for p in topic.partitions
        }
        for result in response.results
    }


def partitions() -> tuple[FakePartition, ...]:
    a0, a1, b0 = (
        FakePartition(TopicPartition("a", 0)),
        FakePartition(TopicPartition("a", 1)),
        FakePartition(TopicPartition("b", 0)),
    )
    a0.append_as_leader(build_batch([SimpleRecord(1, None, b"x" * 10)]))
    a0.append_as_leader(build_batch([SimpleRecord(2, None, b"y" * 30)]))
    b0.append_as_leader(build_batch([SimpleRecord(3, None, b"z")]))
    return a0, a1, b0


@pytest.mark.parametrize("version", VERSIONS)
def test_null_topics_describe_every_partition(version: int) -> None:
    a0, a1, b0 = partitions()
    response = describe_log_dirs.handle(
        context(a0, a1, b0), request(describe_request(version, None))
    )

    a0_size = sum(len(data) for _offset, data in a0.batches)
    logs = logs_of(response)
    assert set(logs) == {"/fake/log"}
    assert logs["/fake/log"][("a", 0)] == (a0_size, 0, False)
    assert a0_size > 100  # two batches, not a default
    assert logs["/fake/log"][("a", 1)] == (0, 0, False)
    assert set(logs["/fake/log"]) == {("a", 0), ("a", 1), ("b", 0)}
    (result,) = response.results
    assert result.error_code == ErrorCode.NONE
    if version >= 3:
        assert response.error_code == ErrorCode.NONE
    if version >= 4:
        assert (result.total_bytes, result.usable_bytes) == (1000, 500)
    else:
        assert not hasattr(result, "total_bytes")


@pytest.mark.parametrize("version", VERSIONS)
def test_listed_partitions_only_and_unknown_ones_left_out(version: int) -> None:
    response = describe_log_dirs.handle(
        context(*partitions()),
        request(describe_request(version, {"a": [1, 7], "b": [0], "nope": [0]})),
    )

    assert set(logs_of(response)["/fake/log"]) == {("a", 1), ("b", 0)}
    (result,) = response.results
    assert [t.name for t in result.topics] == ["a", "b"]


def test_an_empty_topic_list_describes_the_dirs_without_logs() -> None:
    response = describe_log_dirs.handle(context(*partitions()), request(describe_request(4, {})))

    assert logs_of(response) == {"/fake/log": {}}


# ----------------------------------------------------------------- live broker


def disk_size(log_dirs: list[str], topic: str, partition: int) -> int:
    """The bytes of the partition's segment files (``*.log``) in whichever dir holds it."""
    for directory in log_dirs:
        path = Path(directory, f"{topic}-{partition}")
        if path.is_dir():
            return sum(f.stat().st_size for f in path.glob("*.log"))
    raise AssertionError(f"no log of {topic}-{partition} in {log_dirs}")


@pytest.fixture(scope="module")
def two_dir_broker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("logdirs")
    dirs = [str(root / "d1"), str(root / "d2")]
    config = {"log.dirs": ",".join(dirs), "num.partitions": "3"}
    with Broker(config=config) as running:
        yield running, dirs


def test_admin_client_sizes_match_the_bytes_on_disk(two_dir_broker: Any) -> None:
    broker, dirs = two_dir_broker
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="logdirs")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        for i in range(20):
            producer.send("sized", value=b"v" * (100 + i), partition=i % 3)
        producer.send("other", value=b"w", partition=0)
        producer.flush()

        everything = admin.describe_log_dirs()
        only_sized = admin.describe_log_dirs(topic_partitions={"sized": [0, 2]})
    finally:
        producer.close()
        admin.close()

    (broker_everything,) = everything
    assert broker_everything["broker"] == 0
    by_dir = {d["log_dir"]: d for d in broker_everything["log_dirs"]}
    assert set(by_dir) == {os.path.abspath(d) for d in dirs}
    found: dict[tuple[str, int], int] = {}
    for log_dir in by_dir.values():
        assert log_dir["error_code"] == 0
        assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        for topic in log_dir["topics"]:
            for p in topic["partitions"]:
                assert (p["offset_lag"], p["is_future_key"]) == (0, False)
                found[(topic["name"], p["partition_index"])] = p["partition_size"]
    expected = {(t, p): disk_size(dirs, t, p) for t, p in found}
    assert found == expected
    assert {("sized", 0), ("sized", 1), ("sized", 2), ("other", 0)} <= set(found)
    assert found[("sized", 0)] > 7 * 100  # 7 records of 100+ bytes

    (answer,) = only_sized
    listed = {
        (topic["name"], p["partition_index"])
        for log_dir in answer["log_dirs"]
        for topic in log_dir["topics"]
        for p in topic["partitions"]
    }
    assert listed == {("sized", 0), ("sized", 2)}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_on_the_wire(two_dir_broker: Any, version: int) -> None:
    broker, dirs = two_dir_broker
    raw = RawClient(broker.host, broker.port)
    try:
        response = raw.send(describe_request(version, {"no-such-topic": [0]}))
    finally:
        raw.close()

    assert logs_of(response) == {os.path.abspath(d): {} for d in dirs}
    if version >= 4:
        assert all(r.total_bytes > 0 for r in response.results)

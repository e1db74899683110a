"""kcat (Debian's, on librdkafka 2.0.2) against the embedded broker: metadata (-L, which
auto-creates the topic: kcat has no admin commands), produce with every codec (-P), read back
from the beginning (-C, all partitions assigned, no group), query offsets (-Q: earliest,
latest, by timestamp) and start a read at a timestamp (-o s@).

kcat cannot set a record's timestamp, and its -H headers apply to every record of one run, so
records go out in blocks, one kcat run per block of equal headers and partition; timestamps
are checked against the wall-clock window of the produce runs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import pytest

from odradek import Broker

from .conftest import (
    CODECS,
    DEFAULT_PARTITIONS,
    Consumed,
    Produced,
    expected_offset_for_time,
    stored_codecs,
    verify_round_trip,
)

pytestmark = pytest.mark.interop

TIMEOUT_S = 20.0
KEY_DELIMITER = "\t"

#: (headers, partition or None for the partitioner, number of records) per kcat run.
BLOCKS: tuple[tuple[tuple[tuple[str, bytes], ...], int | None, int], ...] = (
    ((("trace", b"block-0"),), None, 12),
    ((("dup", b"first"), ("dup", b"second"), ("empty", b"")), 1, 8),
    ((), None, 10),
    ((("seq", b"block-3"),), 0, 6),
    ((("a", b"1"), ("b", b"2")), None, 4),
)


@pytest.fixture(scope="module", autouse=True)
def _kcat_installed() -> None:
    if shutil.which("kcat") is None:
        pytest.fail("kcat is missing: run scripts/bootstrap")


def kcat(broker: Broker, *args: str, stdin: bytes | None = None) -> str:
    """Runs kcat against ``broker`` and returns its standard output (fails on a non-zero
    exit, with kcat's standard error in the message)."""
    result = subprocess.run(
        ["kcat", "-b", broker.bootstrap_servers, *args],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, (args, result.stderr.decode(errors="replace"))
    return result.stdout.decode()


def make_blocks(tag: str) -> list[list[Produced]]:
    blocks = []
    seq = 0
    for headers, partition, count in BLOCKS:
        block = []
        for _ in range(count):
            block.append(
                Produced(
                    seq=seq,
                    key=f"key-{seq % 5}".encode() if seq % 2 == 0 else None,
                    value=f"{tag}|{seq:05d}|".encode() + b"x" * (64 + seq * 7 % 50),
                    headers=headers,
                    timestamp_ms=-1,
                    partition=partition,
                )
            )
            seq += 1
        blocks.append(block)
    return blocks


def create_topic(broker: Broker, topic: str) -> int:
    """Auto-creates ``topic`` through kcat's Metadata request and returns its partitions."""
    listing = json.loads(kcat(broker, "-L", "-J", "-t", topic))
    assert [b["name"] for b in listing["brokers"]] == [broker.bootstrap_servers]
    [described] = listing["topics"]
    assert described["topic"] == topic
    assert "error" not in described, described
    partitions = sorted(p["partition"] for p in described["partitions"])
    assert partitions == list(range(DEFAULT_PARTITIONS))
    return len(partitions)


def produce(broker: Broker, topic: str, block: Sequence[Produced], codec: str) -> None:
    [headers] = {record.headers for record in block}
    [partition] = {record.partition for record in block}
    args = ["-P", "-t", topic, "-K", KEY_DELIMITER, "-X", f"compression.codec={codec}"]
    args += ["-X", "linger.ms=20", "-X", "acks=all"]
    if partition is not None:  # else librdkafka's default (consistent_random) partitioner
        args += ["-p", str(partition)]
    for name, value in headers:
        args += ["-H", f"{name}={value.decode()}"]
    lines = [
        (record.key + KEY_DELIMITER.encode() if record.key is not None else b"") + record.value
        for record in block
    ]
    kcat(broker, *args, stdin=b"\n".join(lines) + b"\n")


def to_consumed(line: str) -> Consumed:
    message: dict[str, Any] = json.loads(line)
    assert message["tstype"] == "create", message
    flat = message.get("headers") or []
    headers = tuple((flat[index], flat[index + 1].encode()) for index in range(0, len(flat), 2))
    key = message["key"]
    return Consumed(
        partition=message["partition"],
        offset=message["offset"],
        key=None if key is None else key.encode(),
        value=message["payload"].encode(),
        headers=headers,
        timestamp_ms=message["ts"],
    )


def consume(broker: Broker, topic: str, *args: str) -> list[Consumed]:
    output = kcat(broker, "-C", "-t", topic, "-e", "-J", *args)
    return [to_consumed(line) for line in output.splitlines() if line.strip()]


def query(broker: Broker, topic: str, partitions: int, timestamp_ms: int) -> dict[int, int]:
    """``-Q``: the offset for ``timestamp_ms`` (or -1 latest, -2 earliest) per partition."""
    args = []
    for index in range(partitions):
        args += ["-t", f"{topic}:{index}:{timestamp_ms}"]
    answer = json.loads(kcat(broker, "-Q", "-J", *args))[topic]
    result = {}
    for index in range(partitions):
        entry = answer[str(index)]
        assert entry["partition"] == index
        assert "error" not in entry, entry
        result[index] = entry["offset"]
    return result


def check_offsets(
    broker: Broker, topic: str, partitions: int, by_partition: dict[int, list[Consumed]]
) -> None:
    assert query(broker, topic, partitions, -2) == dict.fromkeys(range(partitions), 0)
    assert query(broker, topic, partitions, -1) == {
        index: len(by_partition.get(index, [])) for index in range(partitions)
    }
    records = sorted(
        (record for records in by_partition.values() for record in records),
        key=lambda record: record.timestamp_ms,
    )
    probes = [records[0].timestamp_ms, records[len(records) // 2].timestamp_ms]
    probes += [records[-1].timestamp_ms, records[-1].timestamp_ms + 1]
    for timestamp_ms in probes:
        expected = {}
        for index in range(partitions):
            offset = expected_offset_for_time(by_partition.get(index, []), timestamp_ms)
            expected[index] = -1 if offset is None else offset  # librdkafka: OFFSET_END
        assert query(broker, topic, partitions, timestamp_ms) == expected, timestamp_ms

    # A read that starts at a timestamp (-o s@) begins at the offset ListOffsets gives.
    partition, records_in = max(by_partition.items(), key=lambda item: len(item[1]))
    middle = records_in[len(records_in) // 2]
    start = expected_offset_for_time(records_in, middle.timestamp_ms)
    tail = consume(broker, topic, "-p", str(partition), "-o", f"s@{middle.timestamp_ms}")
    assert [record.offset for record in tail] == list(range(start or 0, len(records_in)))


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(broker: Broker, codec: str) -> None:
    topic = f"kcat-{codec}"
    partitions = create_topic(broker, topic)
    blocks = make_blocks(topic)
    started_ms = int(time.time() * 1000)
    for block in blocks:
        produce(broker, topic, block, codec)
    finished_ms = int(time.time() * 1000)
    records = [record for block in blocks for record in block]
    consumed = consume(broker, topic, "-o", "beginning")
    by_partition = verify_round_trip(
        records, consumed, partitions=partitions, timestamps=(started_ms, finished_ms)
    )
    assert stored_codecs(broker, topic) == {codec}
    check_offsets(broker, topic, partitions, by_partition)

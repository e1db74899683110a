"""kafkajs 2.2.4 (Node.js) against the embedded broker: admin create/delete, produce with each
codec kafkajs has (none and gzip built in, snappy through kafkajs-snappy; LZ4 and zstd need
native add-ons built at install time, which a fresh machine cannot fetch), read back by explicit
partition, ``fetchTopicOffsets`` and ``fetchTopicOffsetsByTimestamp``.

Each step is a node script in ``js/`` that reads one JSON object on stdin and prints one on
stdout; keys, values and header values travel base64-encoded.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

import pytest

from odradek import Broker

from .conftest import (
    BASE_TIMESTAMP_MS,
    INTEROP_DIR,
    PARTITIONS,
    Consumed,
    Produced,
    expected_offset_for_time,
    make_records,
    node_env,
    stored_codecs,
    verify_round_trip,
)

pytestmark = pytest.mark.interop

JS_DIR = INTEROP_DIR / "js"
TIMEOUT_S = 30.0
KAFKAJS_CODECS = ("none", "gzip", "snappy")


@pytest.fixture(scope="module", autouse=True)
def _kafkajs_installed() -> None:
    if shutil.which("node") is None or not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("node or kafkajs is missing: run scripts/bootstrap")


def node(script: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Runs ``js/<script>`` with ``payload`` on stdin and returns its JSON output."""
    result = subprocess.run(
        ["node", str(JS_DIR / script)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=JS_DIR,
        env=node_env(),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, (script, result.stderr.decode(errors="replace"))
    output: dict[str, Any] = json.loads(result.stdout)
    return output


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def header_value(text: str | None) -> bytes:
    assert text is not None, "kafkajs read a null header value"
    return base64.b64decode(text)


def create_topic(broker: Broker, topic: str) -> int:
    answer = node(
        "create_topic.js",
        {"brokers": broker.bootstrap_servers, "topic": topic, "partitions": PARTITIONS},
    )
    assert answer["created"] is True
    assert sorted(p["partition"] for p in answer["partitions"]) == list(range(PARTITIONS))
    return PARTITIONS


def produce(broker: Broker, topic: str, records: Sequence[Produced], codec: str) -> None:
    answer = node(
        "produce.js",
        {
            "brokers": broker.bootstrap_servers,
            "topic": topic,
            "codec": codec,
            "records": [
                {
                    "key": b64(record.key),
                    "value": b64(record.value),
                    "headers": [[name, b64(value)] for name, value in record.headers],
                    "timestamp": record.timestamp_ms,
                    "partition": record.partition,
                }
                for record in records
            ],
        },
    )
    assert answer["metadata"], answer
    assert all(entry["errorCode"] == 0 for entry in answer["metadata"]), answer


def consume_all(broker: Broker, topic: str, partitions: int) -> list[Consumed]:
    answer = node(
        "fetch.js",
        {"brokers": broker.bootstrap_servers, "topic": topic, "partitions": partitions},
    )
    consumed = [
        Consumed(
            partition=record["partition"],
            offset=record["offset"],
            key=unb64(record["key"]),
            value=unb64(record["value"]),
            headers=tuple((name, header_value(value)) for name, value in record["headers"]),
            timestamp_ms=record["timestamp"],
        )
        for record in answer["records"]
    ]
    counts: dict[int, int] = {}
    for record in consumed:
        counts[record.partition] = counts.get(record.partition, 0) + 1
    assert {int(p): hw for p, hw in answer["highWatermarks"].items()} == {
        index: counts.get(index, 0) for index in range(partitions)
    }
    return consumed


def check_offsets(
    broker: Broker, topic: str, partitions: int, by_partition: dict[int, list[Consumed]]
) -> None:
    probes = [BASE_TIMESTAMP_MS + 1000 * seq for seq in (0, 7, 20, 39, 1000)]
    answer = node(
        "offsets.js",
        {"brokers": broker.bootstrap_servers, "topic": topic, "timestamps": probes},
    )
    latest = {index: len(by_partition.get(index, [])) for index in range(partitions)}
    assert sorted((o["partition"], o["low"], o["high"]) for o in answer["offsets"]) == [
        (index, 0, latest[index]) for index in range(partitions)
    ]
    for timestamp_ms in probes:
        got = {o["partition"]: o["offset"] for o in answer["byTimestamp"][str(timestamp_ms)]}
        expected = {}
        for index in range(partitions):
            offset = expected_offset_for_time(by_partition.get(index, []), timestamp_ms)
            # kafkajs answers the latest offset where the broker found no record (-1).
            expected[index] = latest[index] if offset is None else offset
        assert got == expected, timestamp_ms


def delete_topic(broker: Broker, topic: str) -> None:
    answer = node("delete_topic.js", {"brokers": broker.bootstrap_servers, "topic": topic})
    assert topic not in answer["topics"]


@pytest.mark.parametrize("codec", KAFKAJS_CODECS)
def test_round_trip(broker: Broker, codec: str) -> None:
    topic = f"kafkajs-{codec}"
    partitions = create_topic(broker, topic)
    records = make_records(topic, partitions)
    produce(broker, topic, records, codec)
    consumed = consume_all(broker, topic, partitions)
    by_partition = verify_round_trip(records, consumed, partitions=partitions)
    assert stored_codecs(broker, topic) == {codec}
    check_offsets(broker, topic, partitions, by_partition)
    delete_topic(broker, topic)

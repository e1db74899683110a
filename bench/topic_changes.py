"""Topic creation and deletion against other clients: how long an ``odradek serve`` child takes
to create, then delete, a topic of ``--partitions`` partitions, and the latency of another
client's probes (one Produce of one record, then a Metadata of every topic) meanwhile, as
ratios to the same probes on the idle broker measured first in the same run.

    python bench/topic_changes.py --partitions 2000

A broker whose event loop were held by the change would answer about one probe during it, with
a latency as long as the change; the goal is probe latencies of the same order as idle ones.
"""

from __future__ import annotations

import argparse
import socket
import struct
import tempfile
import threading
import time
from typing import Any

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.testing.serve import start_serve, stop_serve

PROBE_TOPIC = "probe"
LARGE_TOPIC = "large"


class Connection:
    """One blocking connection: a request, then its response."""

    def __init__(self, bootstrap: str, timeout_s: float) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.correlation_id = 0

    def send(self, api_key: int, version: int, fields: dict[str, Any]) -> int:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, "bench", fields))
        return self.correlation_id

    def receive(self, api_key: int, version: int) -> dict[str, Any]:
        (size,) = struct.unpack(">i", self._read(4))
        return decode_response(api_key, version, self._read(size))[1]

    def request(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        self.send(api_key, version, fields)
        return self.receive(api_key, version)

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)


def create_request(topic: str, partitions: int) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": topic,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 3_600_000,
        "validate_only": False,
    }


def probe(connection: Connection, number: int) -> float:
    """One probe round; returns its seconds."""
    batch = build_batch([SimpleRecord(1_700_000_000_000 + number, None, b"probe")])
    started = time.perf_counter()
    produced = connection.request(
        ApiKey.PRODUCE,
        3,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 30_000,
            "topic_data": [
                {"name": PROBE_TOPIC, "partition_data": [{"index": 0, "records": batch}]}
            ],
        },
    )
    connection.request(ApiKey.METADATA, 4, {"topics": None, "allow_auto_topic_creation": False})
    elapsed = time.perf_counter() - started
    [topic] = produced["responses"]
    if topic["partition_responses"][0]["error_code"] != 0:
        raise RuntimeError(f"probe produce failed: {topic}")
    return elapsed


def during(
    admin: Connection, api_key: int, version: int, fields: dict[str, Any], prober: Connection
) -> tuple[float, list[float], dict[str, Any]]:
    """Sends an admin request and probes until its response; returns its seconds, the probe
    latencies and the response."""
    answered = threading.Event()
    response: list[dict[str, Any]] = []

    def wait() -> None:
        try:
            response.append(admin.receive(api_key, version))
        finally:
            answered.set()

    started = time.perf_counter()
    admin.send(api_key, version, fields)
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    latencies: list[float] = []
    while not answered.is_set():
        latencies.append(probe(prober, len(latencies)))
    thread.join()
    return time.perf_counter() - started, latencies, response[0]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def report(name: str, seconds: float, latencies: list[float], idle: list[float]) -> None:
    idle_p50, idle_p99 = percentile(idle, 0.5), percentile(idle, 0.99)
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    print(
        f"{name:<8} {seconds:8.1f} s  {len(latencies):7d} probes answered meanwhile  "
        f"p50 {p50 * 1e3:7.1f} ms ({p50 / idle_p50:5.1f}x idle)  "
        f"p99 {p99 * 1e3:7.1f} ms ({p99 / idle_p99:5.1f}x idle)  "
        f"max {max(latencies, default=0) * 1e3:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--idle-probes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="odradek-bench-") as data_dir:
        overrides = {"max.partitions.per.request": str(max(10_000, args.partitions))}
        process, bootstrap = start_serve(data_dir, overrides)
        try:
            admin = Connection(bootstrap, timeout_s=3600)
            prober = Connection(bootstrap, timeout_s=60)
            admin.request(ApiKey.CREATE_TOPICS, 3, create_request(PROBE_TOPIC, 1))
            idle = [probe(prober, n) for n in range(args.idle_probes)]
            print(
                f"{args.partitions} partitions; idle probe p50 "
                f"{percentile(idle, 0.5) * 1e3:.2f} ms, p99 {percentile(idle, 0.99) * 1e3:.2f} ms"
            )
            seconds, latencies, response = during(
                admin,
                ApiKey.CREATE_TOPICS,
                3,
                create_request(LARGE_TOPIC, args.partitions),
                prober,
            )
            [result] = response["topics"]
            report(f"create ({result['error_code']})", seconds, latencies, idle)
            listed = [probe(prober, n) for n in range(20)]
            print(f"probe with the topic listed: p50 {percentile(listed, 0.5) * 1e3:.1f} ms")
            seconds, latencies, response = during(
                admin,
                ApiKey.DELETE_TOPICS,
                1,
                {"topic_names": [LARGE_TOPIC], "timeout": 3_600_000},
                prober,
            )
            [result] = response["responses"]
            report(f"delete ({result['error_code']})", seconds, latencies, idle)
        finally:
            stop_serve(process)


if __name__ == "__main__":
    main()

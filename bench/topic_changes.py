"""Topic creation and deletion against other clients: how long an ``odradek serve`` child takes
to create, then delete, a topic of ``--partitions`` partitions, and the latency of another
client's probes (one Produce of one record, then a Metadata of every topic) meanwhile, as
ratios to the same probes on the idle broker measured first in the same run.

    python bench/topic_changes.py --partitions 2000
    python bench/topic_changes.py --partitions 2000 --leader-and-isr

``--leader-and-isr`` measures instead the LeaderAndIsr a controller sends a broker for
``--partitions`` new partitions (a broker of a one-broker cluster on a ZooKeeper started here,
sent the request as from its controller, at its controller epoch), then the StopReplica that
deletes them (as for a topic deletion), probing with a Metadata request of every topic only.

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

from odradek.controller.topics import ClusterMetadata
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.inter_broker import (
    LEADER_AND_ISR,
    LEADER_AND_ISR_VERSION,
    STOP_REPLICA,
    STOP_REPLICA_VERSION,
)
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.testing.cluster import Cluster
from odradek.testing.serve import start_serve, stop_serve
from odradek.testing.zookeeper import ZooKeeperEnsemble

PROBE_TOPIC = "probe"
LARGE_TOPIC = "large"
#: A broker id no broker has (``--leader-and-isr``).
PHANTOM_BROKER = 99


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


def metadata_probe(connection: Connection, _number: int) -> float:
    """One Metadata request of every topic; returns its seconds."""
    started = time.perf_counter()
    connection.request(ApiKey.METADATA, 4, {"topics": None, "allow_auto_topic_creation": False})
    return time.perf_counter() - started


def leader_and_isr_request(
    controller_id: int, controller_epoch: int, broker_id: int, partitions: int
) -> dict[str, Any]:
    """A LeaderAndIsr making ``broker_id`` the leader of ``partitions`` new partitions."""
    states = [
        {
            "topic_name": LARGE_TOPIC,
            "partition_index": index,
            "controller_epoch": controller_epoch,
            "leader": broker_id,
            "leader_epoch": 0,
            "isr": [broker_id],
            "zk_version": 0,
            "replicas": [broker_id],
            "is_new": True,
        }
        for index in range(partitions)
    ]
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "ungrouped_partition_states": states,
        "live_leaders": [],
    }


def leader_and_isr_run(partitions: int, idle_probes: int) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="odradek-bench-") as base,
        ZooKeeperEnsemble(f"{base}/zookeeper", 1) as ensemble,
        Cluster(1, f"{ensemble.connect_string}/bench-lai", f"{base}/cluster") as cluster,
    ):
        cluster.wait_until(lambda: cluster.controller_epoch() is not None)
        epoch = cluster.controller_epoch()
        controller = cluster.controller_id()
        assert epoch is not None
        assert controller is not None
        admin = Connection(cluster.bootstrap_servers, timeout_s=3600)
        prober = Connection(cluster.bootstrap_servers, timeout_s=60)
        admin.request(ApiKey.CREATE_TOPICS, 3, create_request(PROBE_TOPIC, 1))
        idle = [metadata_probe(prober, n) for n in range(idle_probes)]
        print(
            f"{partitions} partitions; idle Metadata p50 "
            f"{percentile(idle, 0.5) * 1e3:.2f} ms, p99 {percentile(idle, 0.99) * 1e3:.2f} ms"
        )
        # The topic as the controller would have stored it before its LeaderAndIsr (the
        # broker reads its configs), on a broker that never registers: the controller itself
        # tells broker 0 nothing of it.
        ClusterMetadata(cluster.store).create_topic(
            LARGE_TOPIC, {index: [PHANTOM_BROKER] for index in range(partitions)}
        )
        time.sleep(1)  # the controller's own handling of the new topic passes
        request = leader_and_isr_request(controller, epoch, 0, partitions)
        try:
            seconds, latencies, response = during(
                admin, LEADER_AND_ISR, LEADER_AND_ISR_VERSION, request, prober, metadata_probe
            )
        except (IndexError, ConnectionError):
            log = cluster.brokers[0].stderr_path.read_text().splitlines()
            raise SystemExit("\n".join(["no answer; the broker's log:", *log[-15:]])) from None
        errors = {p["error_code"] for p in response["partition_errors"]}
        report(f"LAI {sorted(errors)}", seconds, latencies, idle)
        # Then the StopReplica of a deletion: the same partitions, their logs deleted.
        stop = {
            "controller_id": controller,
            "controller_epoch": epoch,
            "delete_partitions": True,
            "ungrouped_partitions": [
                {"topic_name": LARGE_TOPIC, "partition_index": index} for index in range(partitions)
            ],
        }
        seconds, latencies, response = during(
            admin, STOP_REPLICA, STOP_REPLICA_VERSION, stop, prober, metadata_probe
        )
        errors = {p["error_code"] for p in response["partition_errors"]}
        report(f"SR {sorted(errors)}", seconds, latencies, idle)


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
    admin: Connection,
    api_key: int,
    version: int,
    fields: dict[str, Any],
    prober: Connection,
    probing: Any = None,
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
    probing = probing or probe
    while not answered.is_set():
        latencies.append(probing(prober, len(latencies)))
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
    parser.add_argument("--leader-and-isr", action="store_true")
    args = parser.parse_args()
    if args.leader_and_isr:
        leader_and_isr_run(args.partitions, args.idle_probes)
        return
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

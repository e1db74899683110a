"""Replication's cost on a 3-broker cluster: confluent-kafka throughput and end-to-end latency.

Issue 14's acceptance bench. One ZooKeeper and ``Cluster(3)`` (real ``odradek serve``
processes) on this machine; measured in the same run, each against its baseline:

- produce throughput of ``--records-small`` 100 B records and ``--records-large`` 1 KB
  records: RF 3 / acks=all / ``min.insync.replicas`` 2 against RF 1 / acks=1 (Kreps's 2014
  benchmark: 421,823 vs 821,557 rec/s on separate machines; the goal here is ≥ 0.5×);
- end-to-end latency (send → a consumer's poll, one process, ``perf_counter_ns`` in the value)
  p50/p99 at ``--rate`` records/s for ``--latency-seconds``, acks=all on RF 3 against acks=1 on
  RF 1 (the goal: p99 ≤ 10 ms with acks=all). The clock starts once the consumer has read a
  warm-up record from every partition: its start-up (connections, metadata, first fetches) is
  not replication's latency.

Before any run, ``__consumer_offsets`` is made to exist and be fully replicated (the first
consumer with a ``group.id`` makes the brokers create its 50 partitions: log creations and
leader elections that would otherwise fall inside whichever run came first).

Each pair of runs also prints the CPU (user + system) the three brokers used per delivered
record: on a machine shared with other work, the figure that wall-clock rates hide; then the
same split by process (each broker, and ``client``: this process, the producer's librdkafka
threads included), and the page cache's own price in the same run: the wall and CPU time of
writing the RF 3 run's bytes three times over (one copy per replica) with ``os.write`` in the
log's pattern, without a broker — the floor the three replicas' writes share on one machine.

Every run is bounded (``--run-seconds``: the producer stops sending and librdkafka's
``message.timeout.ms`` expires what is not acknowledged by then) and reports its delivered,
failed (by error name) and unacknowledged counts, so a cluster that does not replicate yet
(acks=all then times out or answers NOT_ENOUGH_REPLICAS) still gives a report.

Each pair (baseline, then replicated) runs ``--repeat`` times, alternating, and the medians
are reported with the machine's load averages: other work on a shared machine moves single
runs by 2x.

``--profile [small,large,latency]``: where the time goes on the RF 3 partition's leader and one
follower during the first replicated run of each named workload (all three when none is
named; a throughput run's profile stops when the run does) — py-spy (``py-spy record
--format raw``, the top functions by own samples) when a ``py-spy`` executable is found beside
this interpreter or on PATH; otherwise the brokers run under cProfile for their whole life and
the top functions by own time are printed after they stop.

    .venv/bin/python bench/cluster_perf.py [--records-small 500000] [--records-large 200000]
        [--partitions 3] [--rate 10000] [--latency-seconds 5] [--run-seconds 30]
        [--repeat 3] [--profile [small,large,latency]] [--work-dir /dev/shm]
        [--broker-setting KEY=VALUE ...] [--workloads small,large,latency] [--trace]

``--trace``: the brokers run with ``bench/_replication_probe.py``'s timing probes, and each
replicated latency run prints where its records' time went on the leaders: append → read for
a follower → each follower's report → high watermark, the garbage collector's pauses and the
event loops' late wake-ups (with the loop's CPU in them: little means the broker waited for a
CPU). Its topics then take ``message.timestamp.type=LogAppendTime``, so each latency run
also splits its records' time at the leader's append (send → append, append → poll: medians
over all records and over the slowest 1 %). The figures of a traced run include the probes'
cost.

``--work-dir``: where the brokers' logs go. The three brokers share one disk here, so RF 3
writes three times the bytes of RF 1 through one page cache and write-back; on tmpfs that
cost (which separate machines would not share) is left out of the ratio.

Three brokers, ZooKeeper and the clients share the machine's cores: figures are ratios
against the baseline of the same run, and the machine may be shared with other work.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_END, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from _process_stats import (
    broker_pids,
    brokers_cpu_s,
    cpu_by_process,
    cpu_split,
    raw_write_baseline,
    run_queue,
)
from odradek.client import AdminClient, NewTopic
from odradek.storage.file_records import WRITE_PIECE_BYTES
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

BASELINE = ("bench-rf1", "1")
REPLICATED = ("bench-rf3", "all")
_STAMP_BYTES = 8
#: A record's bytes in a batch beyond its value (length, attributes, deltas, key, headers),
#: plus its share of the 61-byte batch header: ~10 B for 1 KB values in large batches.
_RECORD_OVERHEAD = 10


@dataclass
class Throughput:
    sent: int = 0
    delivered: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    unacknowledged: int = 0
    seconds: float = 0.0

    @property
    def records_per_s(self) -> float:
        return self.delivered / self.seconds if self.seconds else 0.0

    def describe(self, size: int) -> str:
        failures = ", ".join(f"{name} {count}" for name, count in sorted(self.errors.items()))
        return (
            f"{self.records_per_s:>11,.0f} rec/s {self.records_per_s * size / 1e6:7.1f} MB/s"
            f"  delivered {self.delivered:,}/{self.sent:,}"
            f"  failed {sum(self.errors.values()):,}{f' ({failures})' if failures else ''}"
            f"  unacknowledged {self.unacknowledged:,}"
        )


def producer(bootstrap: str, acks: str, budget_s: float, **extra: Any) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "enable.idempotence": False,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "message.timeout.ms": max(1_000, int(budget_s * 1000)),
            "request.timeout.ms": 5_000,
            **extra,
        }
    )


def throughput(
    bootstrap: str, topic: str, acks: str, size: int, records: int, budget_s: float
) -> Throughput:
    """Sends ``records`` records of ``size`` bytes as fast as librdkafka takes them, until all
    are acknowledged or ``budget_s`` has passed."""
    result = Throughput()
    client = producer(bootstrap, acks, budget_s)
    client.list_topics(topic, timeout=10)  # metadata before the clock starts

    def report(error: Any, _message: Any) -> None:
        if error is None:
            result.delivered += 1
        else:
            result.errors[error.name()] += 1

    value = os.urandom(size)
    started = time.perf_counter()
    deadline = started + budget_s
    while result.sent < records and time.perf_counter() < deadline:
        try:
            client.produce(topic, value, on_delivery=report)
        except BufferError:
            client.poll(0.01)
            continue
        result.sent += 1
        if result.sent % 5_000 == 0:
            client.poll(0)
    result.unacknowledged = client.flush(max(0.0, deadline - time.perf_counter()) + 5.0)
    result.seconds = time.perf_counter() - started
    return result


@dataclass
class Latency:
    sent: int = 0
    delivered: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies_ms: list[float] = field(default_factory=list)
    #: With LogAppendTime topics (``--trace``): (send → the leader's append, append → poll)
    #: per record, ms, from the wall clock (the append time has ms resolution).
    legs_ms: list[tuple[float, float]] = field(default_factory=list)
    partitions_seen: set[int] = field(default_factory=set)

    def percentile(self, fraction: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    def describe(self) -> str:
        failures = ", ".join(f"{name} {count}" for name, count in sorted(self.errors.items()))
        return (
            f"p50 {self.percentile(0.50):7.2f} ms  p99 {self.percentile(0.99):7.2f} ms"
            f"  sent {self.sent:,}  delivered {self.delivered:,}"
            f"  consumed {len(self.latencies_ms):,}"
            f"  failed {sum(self.errors.values()):,}{f' ({failures})' if failures else ''}"
        )


def end_to_end(
    bootstrap: str, topic: str, acks: str, partitions: int, rate: int, seconds: float
) -> Latency:
    """Sends ``rate`` 100 B records/s for ``seconds`` (acks ``acks``, no linger) while a
    consumer of every partition, from the current end, measures send → poll."""
    result = Latency()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "fetch.min.bytes": 1,
        }
    )
    ends = [
        consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=10)[1]
        for p in range(partitions)
    ]
    consumer.assign(
        [
            KafkaTopicPartition(topic, p, end if end >= 0 else OFFSET_END)
            for p, end in enumerate(ends)
        ]
    )
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            message = consumer.poll(0.05)
            if message is None or message.error() is not None:
                continue
            result.partitions_seen.add(message.partition())
            value = message.value()
            sent_ns = int.from_bytes(value[:_STAMP_BYTES], "big")
            result.latencies_ms.append((time.perf_counter_ns() - sent_ns) / 1e6)
            kind, appended_ms = message.timestamp()
            if kind == TIMESTAMP_LOG_APPEND_TIME:
                sent_ms = int.from_bytes(value[_STAMP_BYTES : 2 * _STAMP_BYTES], "big") / 1e6
                result.legs_ms.append((appended_ms - sent_ms, time.time_ns() / 1e6 - appended_ms))

    reader = threading.Thread(target=consume, name="e2e-consumer", daemon=True)
    reader.start()
    client = producer(bootstrap, acks, seconds + 10, **{"linger.ms": 0})
    client.list_topics(topic, timeout=10)
    _warm_up(client, topic, partitions, result)

    def report(error: Any, _message: Any) -> None:
        if error is None:
            result.delivered += 1
        else:
            result.errors[error.name()] += 1

    padding = bytes(100 - 2 * _STAMP_BYTES)
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        due = int(elapsed * rate)
        while result.sent < due:
            stamp = time.perf_counter_ns().to_bytes(_STAMP_BYTES, "big")
            stamp += time.time_ns().to_bytes(_STAMP_BYTES, "big")
            client.produce(topic, stamp + padding, on_delivery=report)
            result.sent += 1
        client.poll(0)
        time.sleep(0.001)
    client.flush(15)
    drain_until = time.monotonic() + 5
    while len(result.latencies_ms) < result.delivered and time.monotonic() < drain_until:
        time.sleep(0.05)
    stop.set()
    reader.join(5)
    consumer.close()
    return result


def _warm_up(client: Producer, topic: str, partitions: int, result: Latency) -> None:
    """Sends one record to each partition until the consumer has read one from every
    partition (its connections, metadata and first fetches are then behind it), then forgets
    them: the measurement is of records sent once the consumer reads, not of its start-up."""
    padding = bytes(100 - _STAMP_BYTES)
    deadline = time.monotonic() + 30
    while len(result.partitions_seen) < partitions and time.monotonic() < deadline:
        for partition in range(partitions):
            stamp = time.perf_counter_ns().to_bytes(_STAMP_BYTES, "big")
            client.produce(topic, stamp + padding, partition=partition)
        client.flush(5)
        time.sleep(0.05)
    if len(result.partitions_seen) < partitions:
        raise RuntimeError(f"the consumer read from {len(result.partitions_seen)} partitions")
    time.sleep(0.2)  # the warm-up records still in flight
    result.latencies_ms.clear()
    result.legs_ms.clear()


def prepare_group_coordinator(bootstrap: str) -> None:
    """Makes ``__consumer_offsets`` exist, led and fully replicated before anything is
    measured: the first consumer with a ``group.id`` makes the brokers create its 50
    partitions (RF 3) — log creations and leader elections that would otherwise land inside
    whichever run came first."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-coordinator"})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                consumer.committed([KafkaTopicPartition(BASELINE[0], 0)], timeout=5)
                break
            except Exception:  # COORDINATOR_NOT_AVAILABLE while the topic is created
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        while time.monotonic() < deadline:
            description = admin.describe_topics(["__consumer_offsets"])["__consumer_offsets"]
            if all(
                p.leader is not None and len(p.isr) == len(p.replicas)
                for p in description.partitions
            ):
                return
            time.sleep(0.2)
    raise RuntimeError("__consumer_offsets did not become fully replicated within 60 s")


# --- profiling -------------------------------------------------------------------------------


def py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


class ProfiledCluster(Cluster):
    """A cluster whose brokers run under cProfile (the profile is written when one stops)."""

    def __init__(self, *args: Any, profile_dir: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.profile_dir = profile_dir

    def command(self, broker_id: int, extra: Mapping[str, str] | None = None) -> list[str]:
        command = super().command(broker_id, extra)
        out = self.profile_dir / f"broker-{broker_id}.prof"
        return [command[0], "-m", "cProfile", "-o", str(out), *command[1:]]


def top_frames(raw: Path, count: int = 12) -> list[str]:
    """The functions with the most own samples in a py-spy raw (collapsed stacks) file."""
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if not stack or not samples.isdigit():
            continue
        total += int(samples)
        own[stack.split(";")[-1]] += int(samples)
    return [f"{100 * n / max(total, 1):5.1f}%  {frame}" for frame, n in own.most_common(count)]


def record(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    spy = py_spy()
    assert spy is not None
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
         "--rate", "200", "--format", "raw", "--nonblocking", "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def stop_profiling(spies: list[subprocess.Popen[bytes]]) -> None:
    """Stops py-spy once the profiled run is over (SIGINT: it writes what it sampled), so
    the profile holds the run, not the idle rest of ``--run-seconds``."""
    for process in spies:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    for process in spies:
        process.wait(30)


def leader_and_follower(bootstrap: str, topic: str) -> tuple[int, int]:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        partition = admin.describe_topics([topic])[topic].partitions[0]
    assert partition.leader is not None
    follower = next(replica for replica in partition.replicas if replica != partition.leader)
    return partition.leader, follower


# --- the run ----------------------------------------------------------------------------------


def cpu_per_record(base_s: float, base_records: int, repl_s: float, repl_records: int) -> str:
    base = 1e6 * base_s / max(base_records, 1)
    repl = 1e6 * repl_s / max(repl_records, 1)
    return (
        f"RF 1 acks=1 {base:.1f} µs/record, RF 3 acks=all {repl:.1f} µs/record "
        f"(all three brokers, user + system)"
    )


def ratio(value: float, baseline: float) -> str:
    if math.isnan(value) or not value > 0:
        return "n/a (nothing delivered)"
    if math.isnan(baseline) or not baseline > 0:
        return "n/a (no baseline)"
    return f"{value / baseline:.2f}x"


def load() -> str:
    """The machine's load averages (1, 5, 15 min): other work shares the cores."""
    return "load " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def median(values: list[float]) -> float:
    clean = sorted(value for value in values if not math.isnan(value))
    return statistics.median(clean) if clean else float("nan")


def profiling(
    spy: str | None,
    cluster: Cluster,
    roles: Mapping[str, int],
    seconds: float,
    out: Path,
    profiles: dict[str, Path],
) -> list[subprocess.Popen[bytes]]:
    """Starts py-spy on each role's broker for ``seconds`` (nothing without ``spy``)."""
    if spy is None:
        return []
    spies = []
    for role, broker in roles.items():
        profiles[f"{role}, {out.name}"] = path = out.with_name(f"{out.name}-{role}.txt")
        pid = cluster.brokers[broker].pid
        assert pid is not None
        spies.append(record(pid, seconds, path))
    return spies


def run(
    cluster: Cluster, args: argparse.Namespace, spy: str | None, profile_dir: Path
) -> tuple[int, int]:
    """The throughput and latency runs on a started cluster, each pair ``--repeat`` times
    (baseline and replicated alternating; medians reported), py-spy on the first replicated
    run of each workload named by ``--profile`` when ``spy``; returns the broker ids of the
    RF 3 partition 0's leader and the follower profiled."""
    bootstrap = cluster.bootstrap_servers
    # Traced: the brokers stamp each batch with its append time, splitting each record's
    # latency at the leader's append.
    traced = {"message.timestamp.type": "LogAppendTime"} if args.trace is not None else {}
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics(
            [
                NewTopic(BASELINE[0], args.partitions, 1, dict(traced)),
                NewTopic(REPLICATED[0], args.partitions, 3, {"min.insync.replicas": "2", **traced}),
            ]
        ).all()
    leader, follower = leader_and_follower(bootstrap, REPLICATED[0])
    roles = {"leader": leader, "follower": follower}
    prepare_group_coordinator(bootstrap)
    print(
        f"3 brokers + ZooKeeper + clients on {os.cpu_count()} cores (shared machine, {load()}); "
        f"{args.partitions} partitions per topic; each pair run {args.repeat}x; RF 3 leader of "
        f"partition 0: broker {leader}, profiled follower: broker {follower}"
    )
    profiles: dict[str, Path] = {}
    for name, size, records in (
        ("small", 100, args.records_small),
        ("large", 1024, args.records_large),
    ):
        if name not in args.workloads:
            continue
        print(f"\n{size} B records")
        ratios, base_rates, repl_rates = [], [], []
        for repetition in range(args.repeat):
            cpu, split = brokers_cpu_s(cluster), cpu_by_process(cluster)
            base = throughput(bootstrap, *BASELINE, size, records, args.run_seconds)
            base_cpu, cpu = brokers_cpu_s(cluster) - cpu, brokers_cpu_s(cluster)
            split_base, split = split, cpu_by_process(cluster)
            profiled = repetition == 0 and name in args.profile
            spies = profiling(
                spy if profiled else None,
                cluster,
                roles,
                args.run_seconds,
                profile_dir / f"{size}B-acks-all",
                profiles,
            )
            repl = throughput(bootstrap, *REPLICATED, size, records, args.run_seconds)
            repl_cpu = brokers_cpu_s(cluster) - cpu
            split_repl = cpu_by_process(cluster)
            stop_profiling(spies)
            # Each replica writes every record once: the RF 3 run's bytes, three times.
            written = 3 * repl.delivered * (size + _RECORD_OVERHEAD)
            raw_wall, raw_cpu = raw_write_baseline(cluster.base_dir, written)
            shown = ratio(repl.records_per_s, base.records_per_s)
            print(f"  run {repetition + 1} ({load()})")
            print(f"    RF 1 acks=1   {base.describe(size)}")
            print(f"    RF 3 acks=all {repl.describe(size)}")
            print(
                "    brokers' CPU  "
                + cpu_per_record(base_cpu, base.delivered, repl_cpu, repl.delivered)
            )
            print(
                "    CPU µs/record by process (user+system): "
                f"RF 1 acks=1 {cpu_split(split_base, split, base.delivered)}; "
                f"RF 3 acks=all {cpu_split(split, split_repl, repl.delivered)}"
            )
            print(
                f"    raw os.write of the RF 3 run's bytes ({written / 1e6:,.0f} MB, 3 copies, "
                f"{WRITE_PIECE_BYTES // 1024} KiB pieces, no broker): "
                f"{1e6 * raw_wall / max(repl.delivered, 1):.2f} µs/record wall, "
                f"{1e6 * raw_cpu / max(repl.delivered, 1):.2f} µs/record CPU"
            )
            print(f"    ratio {shown}")
            base_rates.append(base.records_per_s)
            repl_rates.append(repl.records_per_s)
            if base.records_per_s > 0 and repl.records_per_s > 0:
                ratios.append(repl.records_per_s / base.records_per_s)
        print(
            f"  median of {args.repeat}: RF 1 acks=1 {median(base_rates):,.0f} rec/s, "
            f"RF 3 acks=all {median(repl_rates):,.0f} rec/s, "
            f"ratio RF 3 acks=all / RF 1 acks=1: {median(ratios):.2f}x  (goal >= 0.5x)"
        )
    if "latency" in args.workloads:
        latency_runs(cluster, args, spy, roles, profile_dir, profiles)
    for title, path in profiles.items():
        print(f"\npy-spy, {title} (own samples):")
        for line in top_frames(path) if path.exists() else ["(no profile written)"]:
            print(f"  {line}")
    return leader, follower


def latency_runs(
    cluster: Cluster,
    args: argparse.Namespace,
    spy: str | None,
    roles: Mapping[str, int],
    profile_dir: Path,
    profiles: dict[str, Path],
) -> None:
    """The end-to-end latency pairs, ``--repeat`` times (medians of p50 and p99)."""
    bootstrap = cluster.bootstrap_servers
    rate, seconds = args.rate, args.latency_seconds
    print(f"\nend-to-end latency at {rate:,} rec/s for {seconds:g} s (100 B)")
    summary: dict[str, list[list[float]]] = {"base": [[], []], "repl": [[], []]}
    pids = broker_pids(cluster)
    windows: list[tuple[float, float]] = []
    for repetition in range(args.repeat):
        cpu = brokers_cpu_s(cluster)
        waits = run_queue(pids), run_queue([os.getpid()])
        started = time.perf_counter()
        base_latency = end_to_end(bootstrap, *BASELINE, args.partitions, rate, seconds)
        base_cpu, cpu = brokers_cpu_s(cluster) - cpu, brokers_cpu_s(cluster)
        base_waits = run_queue(pids), run_queue([os.getpid()])
        base_s, started = time.perf_counter() - started, time.perf_counter()
        profiled = repetition == 0 and "latency" in args.profile
        spies = profiling(
            spy if profiled else None,
            cluster,
            roles,
            seconds + 2,
            profile_dir / "latency-acks-all",
            profiles,
        )
        window = time.time()
        repl_latency = end_to_end(bootstrap, *REPLICATED, args.partitions, rate, seconds)
        windows.append((window, time.time()))
        repl_cpu = brokers_cpu_s(cluster) - cpu
        repl_waits = run_queue(pids), run_queue([os.getpid()])
        repl_s = time.perf_counter() - started
        for process in spies:
            process.wait(seconds + 30)
        print(f"  run {repetition + 1} ({load()})")
        print(f"    RF 1 acks=1   {base_latency.describe()}")
        print(f"    RF 3 acks=all {repl_latency.describe()}")
        print(
            "    brokers' CPU  "
            + cpu_per_record(base_cpu, base_latency.delivered, repl_cpu, repl_latency.delivered)
        )
        print(
            "    waited for a CPU (run queue; the brokers' event loops, the bench's main "
            "thread):\n      "
            + waited(waits, base_waits, base_s, "RF 1 acks=1  ")
            + "\n      "
            + waited(base_waits, repl_waits, repl_s, "RF 3 acks=all")
        )
        for name, result in (("RF 1 acks=1  ", base_latency), ("RF 3 acks=all", repl_latency)):
            if result.legs_ms:
                print(f"    {name} {split_at_append(result)}")
        for key, result in (("base", base_latency), ("repl", repl_latency)):
            summary[key][0].append(result.percentile(0.50))
            summary[key][1].append(result.percentile(0.99))
    base_p50, base_p99 = (median(values) for values in summary["base"])
    repl_p50, repl_p99 = (median(values) for values in summary["repl"])
    print(
        f"  median of {args.repeat}: RF 1 acks=1 p50 {base_p50:.2f} ms p99 {base_p99:.2f} ms; "
        f"RF 3 acks=all p50 {repl_p50:.2f} ms p99 {repl_p99:.2f} ms; "
        f"ratio p99 {ratio(repl_p99, base_p99)}  (goal: acks=all p99 <= 10 ms)"
    )
    if args.trace is not None:
        time.sleep(2.5)  # the probes write every 2 s
        print_trace(args.trace, windows)


Waits = tuple[tuple[float, int], tuple[float, int]]


def waited(before: Waits, after: Waits, seconds: float, name: str) -> str:
    """The run-queue wait of the brokers' event loops and of the bench's main thread during
    one run: ms per second of the run, and ms per wake-up."""
    parts = []
    for who, (wait_0, slices_0), (wait_1, slices_1) in zip(
        ("brokers", "bench"), before, after, strict=True
    ):
        wait_ms, slices = 1000 * (wait_1 - wait_0), slices_1 - slices_0
        parts.append(
            f"{who} {wait_ms / max(seconds, 1e-9):.0f} ms/s, "
            f"{wait_ms / max(slices, 1):.2f} ms per wake-up ({slices:,})"
        )
    return f"{name} " + "; ".join(parts)


# --- tracing ---------------------------------------------------------------------------------


def start_tracing(directory: Path) -> None:
    """Makes the brokers started from now on load ``_replication_probe`` (a ``sitecustomize``
    on their ``PYTHONPATH``; ZooKeeper and this process are left alone)."""
    directory.mkdir()
    bench = Path(__file__).resolve().parent
    (directory / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(bench)!r})\n"
        "import _replication_probe\n_replication_probe.install()\n"
    )
    os.environ["ODRADEK_PROBE_DIR"] = str(directory)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(directory), *filter(None, [os.environ.get("PYTHONPATH")])]
    )


def print_trace(directory: Path, windows: list[tuple[float, float]]) -> None:
    """Each replicated latency run's probe figures, over the three brokers (ms)."""
    traces = [json.loads(path.read_text()) for path in sorted(directory.glob("broker-*.json"))]
    for run, (start, end) in enumerate(windows, 1):
        kinds: dict[str, list[list[float]]] = collections.defaultdict(list)
        for trace in traces:
            for kind, values in trace.items():
                group = "report" if kind.startswith("report-") else kind
                kinds[group].extend(value for value in values if start <= value[0] <= end)
        print(f"\n  trace of RF 3 acks=all run {run} (all brokers, ms):")
        for kind, what in (
            ("read", "append -> read for a follower"),
            ("report", "append -> a follower reports it"),
            ("hw", "append -> high watermark"),
        ):
            times = sorted(value[1] for value in kinds[kind])
            if times:
                print(
                    f"    {what:33s} n {len(times):6,}  p50 {quantile(times, 0.5):7.2f}  "
                    f"p99 {quantile(times, 0.99):7.2f}  max {times[-1]:7.2f}"
                )
        for generation in ("gc0", "gc1", "gc2"):
            pauses = kinds[generation]
            if pauses:
                walls, cpus = [p[1] for p in pauses], [p[2] for p in pauses]
                print(
                    f"    {generation} collections {len(pauses):5,}  max {max(walls):6.1f} wall /"
                    f" {max(cpus):5.1f} CPU, total {sum(walls):6.1f} wall / {sum(cpus):5.1f} CPU"
                )
        late = [value for value in kinds["lag"] if value[1] > 20]
        if late:
            lost, used = sum(value[1] for value in late), sum(value[2] for value in late)
            print(
                f"    loop turns late > 20 ms {len(late):4,}  total {lost:7.1f}  loop CPU in them "
                f"{used:6.1f} ({used / lost:.0%}); longest {max(v[1] for v in late):.1f}"
            )


def split_at_append(result: Latency) -> str:
    """Where the records' time went, split at the leader's append (LogAppendTime): the legs'
    medians over all records and over the slowest 1 %."""
    pairs = sorted(zip(result.latencies_ms, result.legs_ms, strict=False), key=lambda p: p[0])
    slowest = pairs[len(pairs) * 99 // 100 :]
    parts = []
    for what, chosen in (("all", pairs), ("slowest 1 %", slowest)):
        before = statistics.median(legs[0] for _, legs in chosen)
        after = statistics.median(legs[1] for _, legs in chosen)
        parts.append(f"{what}: send -> append {before:.1f}, append -> poll {after:.1f}")
    return "median ms, " + "; ".join(parts)


def quantile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def print_cprofiles(profile_dir: Path, leader: int, follower: int) -> None:
    for role, broker in (("leader", leader), ("follower", follower)):
        path = profile_dir / f"broker-{broker}.prof"
        print(f"\ncProfile, {role} (broker {broker}, whole life, by own time):")
        if not path.exists():
            print("  (no profile written)")
            continue
        pstats.Stats(str(path)).sort_stats("tottime").print_stats(12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records-small", type=int, default=500_000, help="100 B records")
    parser.add_argument("--records-large", type=int, default=200_000, help="1 KB records")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--rate", type=int, default=10_000, help="records/s, latency runs")
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument("--run-seconds", type=float, default=30.0, help="cap of each run")
    parser.add_argument(
        "--workloads", default="small,large,latency", help="which runs (comma-separated)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each pair (medians)")
    parser.add_argument(
        "--broker-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for every broker (repeatable), e.g. replica.fetch.max.bytes=4194304",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where the logs go (e.g. /dev/shm: no disk write-back shared by the 3 brokers)",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="small,large,latency",
        default="",
        help="profile leader and follower in these replicated runs (default: all three)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="time the replicated latency runs inside the brokers (bench/_replication_probe.py)",
    )
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.broker_setting)
    args.workloads = set(args.workloads.split(","))
    args.profile = {name for name in args.profile.split(",") if name}
    spy = py_spy() if args.profile else None
    cprofiled = bool(args.profile) and spy is None
    with tempfile.TemporaryDirectory(prefix="cluster-perf-", dir=args.work_dir) as tmp:
        root = Path(tmp)
        profile_dir = root / "profiles"
        profile_dir.mkdir()
        if args.trace:
            args.trace = root / "trace"
            start_tracing(args.trace)
        else:
            args.trace = None
        with ZooKeeperEnsemble(root / "zk", 1) as zookeeper:
            connect = f"{zookeeper.connect_string}/bench-{uuid.uuid4().hex[:8]}"
            cluster: Cluster = (
                ProfiledCluster(
                    3, connect, root / "cluster", settings=settings, profile_dir=profile_dir
                )
                if cprofiled
                else Cluster(3, connect, root / "cluster", settings=settings)
            )
            with cluster:
                if settings:
                    print(f"broker settings: {settings}")
                cluster.wait_until(lambda: cluster.controller_id() is not None, what="controller")
                leader, follower = run(cluster, args, spy, profile_dir)
        if cprofiled:
            print("\n(py-spy not found: the brokers ran under cProfile instead)")
            print_cprofiles(profile_dir, leader, follower)


if __name__ == "__main__":
    main()

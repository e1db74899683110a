"""What the cluster bench reads about its processes from ``/proc``: CPU per broker and
for the bench itself, the run-queue wait of the brokers' event loops, and the page cache's
own price for the bytes a run wrote (``os.write`` without a broker), so a run's figures can
be read against the machine's."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from odradek.storage.file_records import WRITE_PIECE_BYTES
from odradek.testing.cluster import Cluster


def brokers_cpu_s(cluster: Cluster) -> float:
    """CPU seconds (user + system) the brokers' processes have used so far: on a shared
    machine, CPU per record says more about replication's cost than wall-clock rates."""
    total = 0.0
    for broker in cluster.brokers.values():
        if broker.pid is None:
            continue
        fields = Path(f"/proc/{broker.pid}/stat").read_text().rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def cpu_by_process(cluster: Cluster) -> dict[str, tuple[float, float]]:
    """CPU seconds (user, system) so far of each broker (``broker <id>``) and of this
    process (``client``: the producer's librdkafka threads and the Python loop feeding it)."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu: dict[str, tuple[float, float]] = {}
    for broker_id, broker in sorted(cluster.brokers.items()):
        if broker.pid is not None:
            fields = Path(f"/proc/{broker.pid}/stat").read_text().rpartition(")")[2].split()
            cpu[f"broker {broker_id}"] = (int(fields[11]) / tick, int(fields[12]) / tick)
    times = os.times()
    cpu["client"] = (times.user, times.system)
    return cpu


def cpu_split(
    before: Mapping[str, tuple[float, float]],
    after: Mapping[str, tuple[float, float]],
    records: int,
) -> str:
    """Each process's CPU per delivered record (user + system) between two
    ``cpu_by_process`` readings."""
    parts = []
    for name, (user, system) in after.items():
        user_before, system_before = before.get(name, (0.0, 0.0))
        user_us = 1e6 * (user - user_before) / max(records, 1)
        system_us = 1e6 * (system - system_before) / max(records, 1)
        parts.append(f"{name} {user_us:.2f}+{system_us:.2f}")
    return ", ".join(parts)


def raw_write_baseline(directory: Path, total_bytes: int) -> tuple[float, float]:
    """The page cache's own price for ``total_bytes``: wall and CPU seconds of writing them
    with ``os.write`` in the log's pattern (1 MB batches in ``WRITE_PIECE_BYTES`` pieces,
    ``O_APPEND``, a new file), without a broker. The file is removed afterwards."""
    piece = memoryview(os.urandom(WRITE_PIECE_BYTES))
    path = directory / f"raw-write-{uuid.uuid4().hex[:8]}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        left = total_bytes
        while left > 0:
            left -= os.write(fd, piece[: min(left, WRITE_PIECE_BYTES)])
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        os.close(fd)
        path.unlink()


def run_queue(pids: list[int]) -> tuple[float, int]:
    """The main threads of ``pids`` (a broker's event loop; the bench's producer loop): the
    seconds they have spent runnable but waiting for a CPU, and how many times they were put
    on one (``/proc/<pid>/schedstat``'s second and third fields). On a shared machine, the
    wait is latency no broker code can remove; divided by the count, the mean delay of each
    wake-up. (0.0, 0) where schedstat is missing."""
    waited_ns = slices = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/schedstat").read_text().split()
            waited_ns += int(fields[1])
            slices += int(fields[2])
        except (OSError, IndexError, ValueError):
            continue
    return waited_ns / 1e9, slices


def broker_pids(cluster: Cluster) -> list[int]:
    return [broker.pid for broker in cluster.brokers.values() if broker.pid is not None]

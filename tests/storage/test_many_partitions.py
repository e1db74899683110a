"""A broker holding far more partitions than its descriptor limit: ``odradek serve`` started
with ``ulimit -n`` 256 creates a topic of 600 partitions, takes a batch in every one, stays
within the limit (storage files are bounded to half of it: ``storage/open_files.py``), and
after a clean restart and after kill -9 serves every partition's data intact.

Before segment files were opened lazily and bounded, each partition held about five
descriptors: such a broker died with EMFILE at about fifty partitions.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.client.simple_consumer import FetchRequest, SimpleConsumer
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.testing.serve import start_serve, stop_serve

pytestmark = pytest.mark.slow

PARTITIONS = 600
FD_LIMIT = 256
TOPIC = "wide"


@contextlib.contextmanager
def descriptor_limit(soft: int) -> Iterator[None]:
    """Lowers this process's soft ``RLIMIT_NOFILE`` while a child is started (the child
    inherits it), then restores it."""
    old_soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (old_soft, hard))


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def child_limit(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no descriptor limit in /proc/<pid>/limits")


def value(partition: int, n: int) -> bytes:
    return f"p{partition}-r{n}".encode()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[], tuple[subprocess.Popen[str], str]]]:
    """Starts ``odradek serve`` on one data directory under the low limit; stops every
    child it started."""
    started: list[subprocess.Popen[str]] = []

    def start() -> tuple[subprocess.Popen[str], str]:
        with descriptor_limit(FD_LIMIT):
            process, bootstrap = start_serve(str(tmp_path / "data"))
        started.append(process)
        assert child_limit(process.pid) == FD_LIMIT
        return process, bootstrap

    yield start
    for process in started:
        stop_serve(process)
        if process.stdout is not None:
            process.stdout.close()


def produce_everywhere(bootstrap: str) -> None:
    network = NetworkClient(ClientConfig(bootstrap_servers=bootstrap))
    try:
        now_ms = int(time.time() * 1000)
        futures = []
        for partition in range(PARTITIONS):
            batch = build_batch([SimpleRecord(now_ms, None, value(partition, n)) for n in range(3)])
            body = {
                "transactional_id": None,
                "acks": -1,
                "timeout": 30_000,
                "topic_data": [
                    {"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}
                ],
            }
            futures.append(network.send(-1, ApiKey.PRODUCE, body, versions=VersionRange(3, 7)))
            if len(futures) == 50:  # a window of requests in flight
                assert network.wait(futures, network.clock.monotonic_ms() + 60_000)
                for future in futures:
                    [result] = future.result()["responses"][0]["partition_responses"]
                    assert result["error_code"] == ErrorCode.NONE, result
                futures = []
    finally:
        network.close()


def every_partition_intact(bootstrap: str) -> None:
    with contextlib.closing(SimpleConsumer(bootstrap)) as consumer:
        for first in range(0, PARTITIONS, 100):
            requests = [FetchRequest(TOPIC, p, 0, 1024) for p in range(first, first + 100)]
            for request, result in zip(requests, consumer.multifetch(requests), strict=True):
                values = [m.value for m in result.raise_for_error()]
                assert values == [value(request.partition, n) for n in range(3)], request


def test_a_broker_holds_more_partitions_than_its_descriptor_limit_and_restarts_intact(
    serve: Callable[[], tuple[subprocess.Popen[str], str]],
) -> None:
    process, bootstrap = serve()
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], timeout_ms=300_000).all()
    assert process.poll() is None
    assert open_fds(process.pid) <= FD_LIMIT
    produce_everywhere(bootstrap)
    every_partition_intact(bootstrap)
    assert open_fds(process.pid) <= FD_LIMIT

    assert stop_serve(process, timeout_s=120) == 0
    process, bootstrap = serve()
    assert open_fds(process.pid) <= FD_LIMIT
    every_partition_intact(bootstrap)
    assert open_fds(process.pid) <= FD_LIMIT

    process.send_signal(signal.SIGKILL)
    process.wait()
    process, bootstrap = serve()
    assert open_fds(process.pid) <= FD_LIMIT
    every_partition_intact(bootstrap)
    assert open_fds(process.pid) <= FD_LIMIT
    assert process.poll() is None

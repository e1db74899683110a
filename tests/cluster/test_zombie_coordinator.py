"""A broker stopped (SIGSTOP) past its ZooKeeper session and then resumed — the zombie — must
not answer for its groups from memory before it learns the session is gone: another broker may
coordinate them by then, and the zombie's offsets would be older than acknowledged commits (the
fault suite's pause-past-session runs caught exactly that). Real ZooKeeper, a broker process."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.broker._wire import Wire

from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster

GROUP = "zombie-group"
DEADLINE_S = 60.0
#: OffsetFetch requests queued while the broker is stopped.
PIPELINED = 20


def _until(what: str, probe: Callable[[], Any], wanted: Any) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while (seen := probe()) != wanted:
        assert time.monotonic() < deadline, f"{what}: still {seen!r}"
        time.sleep(0.1)


def test_a_resumed_zombie_coordinator_does_not_answer_offset_fetch_from_memory(
    zookeeper: ZooKeeperEnsemble, zookeeper_chroot: str, tmp_path: Path
) -> None:
    with Cluster(1, zookeeper_chroot, tmp_path) as cluster:
        wire = Wire(cluster.brokers[0].port, timeout_s=30.0)
        fetch = {"group_id": GROUP, "topics": None}

        def find_coordinator() -> int:
            answer = wire.request(ApiKey.FIND_COORDINATOR, 1, {"key": GROUP, "key_type": 0})
            return int(answer["error_code"])

        def offset_fetch() -> int:
            return int(wire.request(ApiKey.OFFSET_FETCH, 3, fetch)["error_code"])

        try:
            _until("the coordinator", find_coordinator, ErrorCode.NONE)
            _until("the group's offsets", offset_fetch, ErrorCode.NONE)
            cluster.kill(0, signal.SIGSTOP)
            try:
                cluster.wait_until(
                    lambda: 0 not in cluster.registered(), DEADLINE_S, "the session to expire"
                )
                # Queued while stopped: the first things the resumed broker reads.
                sent = [wire.send(ApiKey.OFFSET_FETCH, 3, fetch) for _ in range(PIPELINED)]
            finally:
                cluster.kill(0, signal.SIGCONT)
            answers = []
            for correlation_id in sent:
                try:
                    answers.append(wire.receive(ApiKey.OFFSET_FETCH, 3, correlation_id))
                except (ConnectionError, EOFError):
                    break  # the broker stopped on its expired session: nothing more answered
            assert [a["error_code"] for a in answers] == [ErrorCode.NOT_COORDINATOR] * len(answers)
        finally:
            wire.sock.close()

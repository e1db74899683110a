"""A group coordinator cut off from ZooKeeper stops answering for its groups: the broker may
already have lost the offsets partition's leadership to another, and its memory would hand out
committed offsets older than the new coordinator's (found by the fault suite's
broker-cut-from-zookeeper runs). Real ZooKeeper, paused and resumed; one embedded broker."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.broker._wire import Wire

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.testing.zookeeper import ZooKeeperEnsemble

GROUP = "fenced-group"
DEADLINE_S = 60.0


def _until(what: str, probe: Callable[[], Any], wanted: Any) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while (seen := probe()) != wanted:
        assert time.monotonic() < deadline, f"{what}: still {seen!r}"
        time.sleep(0.1)


def test_a_coordinator_cut_from_zookeeper_answers_not_coordinator_until_back(
    zookeeper: ZooKeeperEnsemble, zookeeper_chroot: str
) -> None:
    settings = {"zookeeper.connect": zookeeper_chroot, "zookeeper.session.timeout.ms": "6000"}
    with Broker(config=settings) as broker:
        wire = Wire(broker.port, timeout_s=30.0)

        def find_coordinator() -> int:
            answer = wire.request(ApiKey.FIND_COORDINATOR, 1, {"key": GROUP, "key_type": 0})
            return int(answer["error_code"])

        def offset_fetch() -> int:
            answer = wire.request(ApiKey.OFFSET_FETCH, 3, {"group_id": GROUP, "topics": None})
            return int(answer["error_code"])

        try:
            _until("the coordinator", find_coordinator, ErrorCode.NONE)
            _until("the group's offsets", offset_fetch, ErrorCode.NONE)
            zookeeper.pause(0)
            try:
                _until("fencing", offset_fetch, ErrorCode.NOT_COORDINATOR)
            finally:
                zookeeper.resume(0)
            _until("the coordinator back", offset_fetch, ErrorCode.NONE)
        finally:
            wire.sock.close()

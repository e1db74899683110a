"""Consumer groups with real clients: confluent-kafka, kafka-python and aiokafka group
consumers (subprocesses, ``group_member.py``) share a multi-partition topic exclusively; a
member killed with SIGKILL has its partitions rebalanced to the survivor within the session
timeout; every record is seen at least once and committed offsets never go backwards. Then:
commit, restart the broker (same data directory and port), and the group resumes from its
committed offsets."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker

from .conftest import INTEROP_DIR

PARTITIONS = 4
SESSION_TIMEOUT_S = 6.0
GROUP_BROKER_CONFIG = {
    "num.partitions": str(PARTITIONS),
    "offsets.topic.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
}
LIBRARIES = ("confluent-kafka", "kafka-python", "aiokafka")


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=GROUP_BROKER_CONFIG) as running:
        yield running


def wait_until(
    condition: Callable[[], Any],
    what: str,
    timeout_s: float,
    explain: Callable[[], str] = lambda: "",
) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what} {explain()}")
        time.sleep(0.05)


class Member:
    """A group consumer subprocess and the events it printed."""

    def __init__(self, library: str, bootstrap: str, topic: str, group: str) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(INTEROP_DIR / "group_member.py"),
                library,
                bootstrap,
                topic,
                group,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            with self._lock:
                self.events.append(event)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def assignment(self) -> list[int] | None:
        found = [e["assignment"] for e in self.snapshot() if "assignment" in e]
        return found[-1] if found else None

    def seen(self) -> set[tuple[int, int]]:
        return {tuple(e["record"]) for e in self.snapshot() if "record" in e}  # type: ignore[misc]

    def commits(self) -> list[dict[int, int]]:
        return [
            {int(p): o for p, o in e["committed"].items()}
            for e in self.snapshot()
            if "committed" in e
        ]

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self._reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> dict[tuple[int, int], bytes]:
    """Sends ``count`` records round the partitions; returns them by (partition, offset)."""
    delivered: dict[tuple[int, int], bytes] = {}

    def on_delivery(error: Any, message: Any) -> None:
        assert error is None, error
        delivered[(message.partition(), message.offset())] = message.value()

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for seq in range(start, start + count):
        producer.produce(
            topic, f"v{seq}".encode(), partition=seq % PARTITIONS, on_delivery=on_delivery
        )
    assert producer.flush(10) == 0
    return delivered


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)


def committed_offsets(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed(
            [ConfluentTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


@pytest.mark.parametrize("library", LIBRARIES)
def test_members_share_partitions_and_a_killed_member_is_replaced(
    broker: Broker, library: str
) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"groups-{library}-{uuid.uuid4().hex[:8]}"
    group = f"group-{topic}"
    create_topic(bootstrap, topic)
    produced = produce(bootstrap, topic, 40)
    members: list[Member] = []
    try:
        # Both members hold partitions, exclusively, covering the topic.
        first, second, group = sharing_pair(library, bootstrap, topic, group, members)
        a, b = first.assignment() or [], second.assignment() or []
        assert not set(a) & set(b)
        assert sorted(a + b) == list(range(PARTITIONS))

        # SIGKILL one: its partitions move to the survivor within the session timeout.
        produced.update(produce(bootstrap, topic, 40, start=40))
        both = set(produced)
        wait_until(lambda: both <= first.seen() | second.seen(), "the records so far", 15)

        def committed_so_far() -> bool:
            latest: dict[int, int] = {}
            for commit in first.commits() + second.commits():
                for partition, offset in commit.items():
                    latest[partition] = max(offset, latest.get(partition, 0))
            return latest == dict.fromkeys(range(PARTITIONS), 20)

        wait_until(committed_so_far, "commits of the records so far", 10)
        killed_at = time.monotonic()
        second.kill()
        wait_until(
            lambda: first.assignment() == list(range(PARTITIONS)),
            "the survivor to take every partition",
            SESSION_TIMEOUT_S + 10,
        )
        # The session timeout, a rebalance and a member's poll (up to 1 s) on a loaded machine.
        assert time.monotonic() - killed_at < SESSION_TIMEOUT_S + 10

        produced.update(produce(bootstrap, topic, 40, start=80))
        everything = set(produced)
        wait_until(
            lambda: everything <= first.seen() | second.seen(), "every record to be seen", 15
        )

        # Committed offsets never go backwards: per member, and the final ones are at least
        # every offset any member committed.
        def all_committed() -> dict[int, int] | None:
            found = committed_offsets(bootstrap, topic, group)
            return found if all(found[p] == 30 for p in range(PARTITIONS)) else None

        final = wait_until(all_committed, "the survivor's final commits", 15)
        for member in members:
            latest: dict[int, int] = {}
            for commit in member.commits():
                for partition, offset in commit.items():
                    assert offset >= latest.get(partition, 0), (member, partition)
                    latest[partition] = offset
                    assert offset <= final[partition]
    finally:
        for member in members:
            member.kill()


#: kafka-python 3.0.12's group member now and then stops heartbeating right after a rebalance
#: it started itself (its leader rejoins on a metadata snapshot change, then goes silent until
#: its session expires and does not rejoin; seen about once in 15 runs, never with the other
#: clients). A pair that has not settled in time is replaced once, in a fresh group.
_SETTLE_ATTEMPTS = {"kafka-python": 2}


def sharing_pair(
    library: str, bootstrap: str, topic: str, group: str, members: list[Member]
) -> tuple[Member, Member, str]:
    """Two members of ``group`` (appended to ``members``) once both hold partitions,
    exclusively, covering the topic; returns them and the group they are in."""
    attempts = _SETTLE_ATTEMPTS.get(library, 1)
    for attempt in range(1, attempts + 1):
        first = Member(library, bootstrap, topic, group)
        second = Member(library, bootstrap, topic, group)
        members += [first, second]

        def shared(first: Member = first, second: Member = second) -> bool:
            a, b = first.assignment(), second.assignment()
            return bool(a and b) and len(a or []) + len(b or []) == PARTITIONS

        deadline = time.monotonic() + 20
        while not shared() and time.monotonic() < deadline:
            time.sleep(0.05)
        if shared():
            return first, second, group
        if attempt == attempts:
            pytest.fail(
                "timed out after 20 s waiting for two members sharing the partitions "
                f"(assignments {first.assignment()} {second.assignment()})"
            )
        first.kill()
        second.kill()
        members.clear()
        group = f"{group}-retry"
    raise AssertionError("unreachable")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_group_resumes_from_committed_offsets_after_a_broker_restart() -> None:
    port = free_port()
    topic, group = "resume", "resume-group"
    with tempfile.TemporaryDirectory(prefix="odradek-groups-") as data_dir:
        with Broker(data_dir, port=port, config=GROUP_BROKER_CONFIG) as running:
            bootstrap = running.bootstrap_servers
            create_topic(bootstrap, topic)
            produce(bootstrap, topic, 100)
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            consumer.subscribe([topic])
            read = 0
            deadline = time.monotonic() + 20
            while read < 60 and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and not message.error():
                    read += 1
            assert read == 60
            consumer.commit(asynchronous=False)
            before = {
                tp.partition: tp.offset
                for tp in consumer.committed(
                    [ConfluentTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
                )
            }
            consumer.close()
            assert sum(max(offset, 0) for offset in before.values()) == 60

        with Broker(data_dir, port=port, config=GROUP_BROKER_CONFIG):
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            consumer.subscribe([topic])
            first: dict[int, int] = {}
            count = 0
            deadline = time.monotonic() + 20
            while count < 40 and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and not message.error():
                    first.setdefault(message.partition(), message.offset())
                    count += 1
            consumer.close()
            assert count == 40  # exactly the records after the committed offsets
            for partition, offset in first.items():
                assert offset == max(before[partition], 0)  # none committed: from the start

"""KIP-848 consumer groups with a real client: confluent-kafka consumers with
``group.protocol=consumer`` (subprocesses, ``kip848_member.py``) share a topic while a classic
consumer reads the same topic in another group. One KIP-848 member is SIGKILLed mid-way and
its partitions move to the others after its session; another joins late and leaves with
``close()``. From each member's timestamped assign/revoke history: no partition is ever
owned by two members of a group at once, every record is read by each group, and committed
offsets never go backwards."""

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
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker

from .conftest import INTEROP_DIR
from .test_groups import wait_until

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6_000
BROKER_CONFIG = {
    "offsets.topic.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.consumer.heartbeat.interval.ms": "500",
}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=BROKER_CONFIG) as running:
        yield running


class Member:
    """A ``kip848_member.py`` subprocess and the events it printed."""

    def __init__(self, name: str, protocol: str, bootstrap: str, topic: str, group: str) -> None:
        self.name = name
        self.group = group
        command = [str(INTEROP_DIR / "kip848_member.py"), protocol, bootstrap, topic, group]
        if protocol == "odradek":  # odradek's own consumer, group.protocol=consumer
            command = [str(INTEROP_DIR / "odradek_kip848_member.py"), bootstrap, topic, group]
        self.process = subprocess.Popen(
            [sys.executable, *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self.killed_at: float | None = None
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._lock:
                self.events.append(json.loads(line))

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def owned(self) -> set[int]:
        held: set[int] = set()
        for event in self.snapshot():
            held |= set(event.get("assigned", ()))
            held -= set(event.get("revoked", ()))
        return held

    def seen(self) -> set[tuple[int, int]]:
        return {(e["record"][0], e["record"][1]) for e in self.snapshot() if "record" in e}

    def commits(self) -> list[dict[int, int]]:
        return [
            {int(p): o for p, o in e["committed"].items()}
            for e in self.snapshot()
            if "committed" in e
        ]

    def intervals(self, end: float) -> list[tuple[int, float, float]]:
        """(partition, from, to) for each time it owned a partition; a partition still held
        ends when the process was killed, or at ``end``."""
        started: dict[int, float] = {}
        found = []
        for event in self.snapshot():
            for partition in event.get("assigned", ()):
                started.setdefault(partition, event["t"])
            for partition in event.get("revoked", ()):
                if partition in started:
                    found.append((partition, started.pop(partition), event["t"]))
        stop = self.killed_at if self.killed_at is not None else end
        found.extend((partition, since, stop) for partition, since in started.items())
        return found

    def kill(self) -> None:
        if self.process.poll() is None:
            self.killed_at = time.time()
            os.kill(self.process.pid, signal.SIGKILL)
        self._finish()

    def close(self) -> None:
        """SIGTERM: the member closes its consumer (leaving the group) and exits."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()
        self._finish()

    def _finish(self) -> None:
        self.process.wait(10)
        self._reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def produce(bootstrap: str, topic: str, count: int, start: int) -> set[tuple[int, int]]:
    delivered: set[tuple[int, int]] = set()

    def on_delivery(error: Any, message: Any) -> None:
        assert error is None, error
        delivered.add((message.partition(), message.offset()))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for seq in range(start, start + count):
        producer.produce(
            topic, f"v{seq}".encode(), partition=seq % PARTITIONS, on_delivery=on_delivery
        )
    assert producer.flush(10) == 0
    return delivered


def committed_offsets(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed(
            [ConfluentTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def covering(members: list[Member]) -> bool:
    """Whether the members hold every partition between them, each partition once."""
    held = [m.owned() for m in members]
    return all(held) and sorted(p for h in held for p in h) == list(range(PARTITIONS))


def assert_no_overlap(members: list[Member], end: float) -> None:
    by_partition: dict[int, list[tuple[float, float, str]]] = {}
    for member in members:
        for partition, since, until in member.intervals(end):
            by_partition.setdefault(partition, []).append((since, until, member.name))
    for partition, spans in by_partition.items():
        spans.sort()
        held_until, holder = spans[0][1], spans[0][2]
        for since, until, owner in spans[1:]:
            assert held_until <= since, (
                f"partition {partition} owned by {holder} until {held_until:.3f} and by "
                f"{owner} from {since:.3f}"
            )
            if until > held_until:
                held_until, holder = until, owner


def assert_commits_never_go_backwards(members: list[Member], final: dict[int, int]) -> None:
    for member in members:
        latest: dict[int, int] = {}
        for commit in member.commits():
            for partition, offset in commit.items():
                assert offset >= latest.get(partition, 0), (member.name, partition)
                latest[partition] = offset
                assert offset <= final[partition], (member.name, partition, offset, final)


def test_kip848_members_with_a_kill_and_a_classic_group_on_the_same_topic(
    broker: Broker,
) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"kip848-{uuid.uuid4().hex[:8]}"
    group, classic_group = f"new-{topic}", f"classic-{topic}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)
    produced = produce(bootstrap, topic, 60, 0)
    members: list[Member] = []
    try:
        for index in range(3):
            members.append(Member(f"m{index}", "consumer", bootstrap, topic, group))
        classic = Member("classic", "classic", bootstrap, topic, classic_group)
        wait_until(
            lambda: covering(members),
            "three KIP-848 members sharing the topic",
            40,
            lambda: str([m.owned() for m in members]),
        )
        wait_until(lambda: classic.owned() == set(range(PARTITIONS)), "the classic consumer", 20)
        wait_until(lambda: produced <= set().union(*(m.seen() for m in members)), "group reads", 20)

        # SIGKILL one member: after its session its partitions go to the two others.
        members[2].kill()
        survivors = members[:2]
        wait_until(
            lambda: covering(survivors),
            "the survivors to take every partition",
            SESSION_TIMEOUT_MS / 1000 + 20,
            lambda: str([m.owned() for m in survivors]),
        )
        produced |= produce(bootstrap, topic, 60, 60)

        # A late member joins, then leaves with close().
        late = Member("m3", "consumer", bootstrap, topic, group)
        members.append(late)
        wait_until(
            lambda: covering([*survivors, late]),
            "the late member's share",
            40,
            lambda: str([m.owned() for m in [*survivors, late]]),
        )
        produced |= produce(bootstrap, topic, 60, 120)
        late.close()
        wait_until(
            lambda: covering(survivors),
            "the partitions back after the leave",
            30,
            lambda: str([m.owned() for m in survivors]),
        )
        produced |= produce(bootstrap, topic, 60, 180)

        wait_until(
            lambda: produced <= set().union(*(m.seen() for m in members)),
            "every record read by the KIP-848 group",
            30,
        )
        wait_until(lambda: produced <= classic.seen(), "every record read by the classic group", 30)
        end = time.time()
        per_partition = len(produced) // PARTITIONS

        def all_committed() -> dict[int, int] | None:
            found = committed_offsets(bootstrap, topic, group)
            return found if all(found[p] == per_partition for p in range(PARTITIONS)) else None

        final = wait_until(all_committed, "the group's final commits", 20)
        assert_no_overlap(members, end)
        assert_no_overlap([classic], end)
        assert_commits_never_go_backwards(members, final)
        everything = dict.fromkeys(range(PARTITIONS), per_partition)
        assert_commits_never_go_backwards([classic], everything)
        assert any(
            "lost" not in e and e.get("revoked")
            for e in members[0].snapshot() + members[1].snapshot()
        )
    finally:
        for member in members:
            member.kill()
        if "classic" in locals():
            classic.kill()


def _described(bootstrap: str, group: str) -> tuple[str, str, dict[str, list[int]]]:
    """(group type, state, member id → assigned partitions) from ConsumerGroupDescribe."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found = admin.describe_consumer_groups([group])[group].result(10)
    members = {
        m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions)
        for m in found.members
    }
    return str(found.type), str(found.state), members


def test_a_kip848_group_keeps_its_members_and_assignment_across_a_broker_restart() -> None:
    """The group's records in ``__consumer_offsets`` rebuild it: after a restart the same
    members hold the same partitions, described by ConsumerGroupDescribe, and keep
    consuming without losing their partitions."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    topic, group = "restart-848", "restart-848-group"
    with tempfile.TemporaryDirectory(prefix="odradek-kip848-") as data_dir:
        consumers: list[Consumer] = []
        losses: list[tuple[str, int]] = []
        try:
            with Broker(data_dir, port=port, config=BROKER_CONFIG) as running:
                bootstrap = running.bootstrap_servers
                admin = AdminClient({"bootstrap.servers": bootstrap})
                admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(10)
                for _ in range(2):
                    consumer = Consumer(
                        {
                            "bootstrap.servers": bootstrap,
                            "group.id": group,
                            "group.protocol": "consumer",
                            "auto.offset.reset": "earliest",
                        }
                    )
                    consumer.subscribe(
                        [topic],
                        on_revoke=lambda _c, parts: losses.append(("revoked", len(parts))),
                        on_lost=lambda _c, parts: losses.append(("lost", len(parts))),
                    )
                    consumers.append(consumer)

                def shared() -> bool:
                    for consumer in consumers:
                        consumer.poll(0.05)
                    held = [{tp.partition for tp in c.assignment()} for c in consumers]
                    return all(len(h) == 2 for h in held) and not held[0] & held[1]

                wait_until(shared, "two members with two partitions each", 30)
                before = _described(bootstrap, group)
                assert before[0] == "ConsumerGroupType.CONSUMER"
                assert before[1] == "ConsumerGroupState.STABLE"
                assert sorted(p for ps in before[2].values() for p in ps) == [0, 1, 2, 3]
                losses.clear()  # the first member gave two partitions to the second
            with Broker(data_dir, port=port, config=BROKER_CONFIG):
                # the members reconnect and heartbeat at their epochs: no rejoin, no move
                assigned = [sorted(tp.partition for tp in c.assignment()) for c in consumers]

                def unchanged() -> bool:
                    for consumer in consumers:
                        consumer.poll(0.05)
                    try:
                        return _described(bootstrap, group) == before
                    except Exception:  # loading or reconnecting: ask again
                        return False

                wait_until(unchanged, "the same members and assignment after the restart", 30)
                for _ in range(20):  # a few heartbeats: still the same partitions
                    for consumer in consumers:
                        consumer.poll(0.05)
                now = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
                assert now == assigned
                assert losses == []  # nobody was fenced, nobody revoked anything
                assert _described(bootstrap, group) == before
        finally:
            for consumer in consumers:
                consumer.close()

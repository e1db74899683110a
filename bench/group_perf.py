"""Consumer-group figures against ``odradek serve`` (a child process, free port, temporary data
directory, ``group.initial.rebalance.delay.ms=0``), with confluent-kafka (librdkafka) consumers.

Rebalance time: a group of 10 consumers (each polling on its own thread) subscribed to a topic
of 30 partitions. One consumer joins (10 → 11), then the oldest member leaves with LeaveGroup
(``close()``, 11 → 10); each time the clock runs from the ``subscribe`` / ``close`` call until
every member holds its new assignment, as the rebalance callbacks report it (each callback
updates the members' shared view under a lock and stamps the moment the view first shows the
30 partitions owned exactly once, spread evenly over the current members). A producer thread
writes to every partition every 50 ms meanwhile, and for the join a second clock runs until
every partition has been *consumed again*: each partition has delivered a record, read after
the join started, to the member that owns it once the group settled. Eager ``range``,
incremental ``cooperative-sticky`` (both the classic protocol) and KIP-848's
``group.protocol=consumer`` (the broker's uniform assignor); the median of ``--rounds`` rounds,
and each figure's ratio to eager ``range`` measured in the same run. Members learn of a
rebalance from their heartbeats, so the figures scale with the heartbeat interval
(``--heartbeat-ms``, librdkafka's default 3000; for KIP-848 the broker's
``group.consumer.heartbeat.interval.ms``, set to the same value).

Commit throughput: one group member (its assignment settled) commits explicit offsets to one
partition in a loop, each the previous one + 1: synchronously (``commit(asynchronous=False)``:
one round trip each) and asynchronously (all issued, then polled until every ``on_commit``
callback has reported; errors are counted and shown).

    .venv/bin/python bench/group_perf.py [--rounds 3] [--heartbeat-ms 3000] [--commits 2000]
        [--strategies range,cooperative-sticky,consumer]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.testing.serve import start_serve, stop_serve

PARTITIONS = 30
MEMBERS = 10
#: Classic eager, classic incremental, and KIP-848 (``group.protocol=consumer``).
STRATEGIES = ("range", "cooperative-sticky", "consumer")
#: How often the producer thread writes to each partition.
PRODUCE_INTERVAL_S = 0.05
SETTLE_TIMEOUT_S = 60.0


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.01)


class Group:
    """The members' assignments as their rebalance callbacks report them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owned: dict[int, set[int]] = {}  # member number → partitions
        self.members: set[int] = set()  # members that count (joined, not leaving)
        self.settled_at: float | None = None
        self.started_at = 0.0
        #: (member, partition) → when that member first read a record of it after
        #: ``started_at``.
        self.consumed: dict[tuple[int, int], float] = {}

    def expect(self, members: set[int]) -> None:
        """A join or leave starts now: the view must settle again for ``members``."""
        with self.lock:
            self.members = set(members)
            self.settled_at = None
            self.started_at = time.perf_counter()
            self.consumed = {}

    def read(self, member: int, partition: int) -> None:
        """A member read a record of ``partition``."""
        with self.lock:
            self.consumed.setdefault((member, partition), time.perf_counter())

    def consumed_again(self) -> float | None:
        """When every partition had been read by its settled owner since the last
        ``expect`` (None: not yet, or not settled)."""
        with self.lock:
            if self.settled_at is None:
                return None
            latest = 0.0
            for member in self.members:
                for partition in self.owned.get(member, ()):
                    seen = self.consumed.get((member, partition))
                    if seen is None:
                        return None
                    latest = max(latest, seen)
            return latest

    def update(self, member: int, change: Callable[[set[int]], None]) -> None:
        with self.lock:
            change(self.owned.setdefault(member, set()))
            if self.settled_at is None and self._settled():
                self.settled_at = time.perf_counter()

    def _settled(self) -> bool:
        counts = [len(self.owned.get(member, ())) for member in self.members]
        owners: dict[int, int] = {}
        for member in self.members:
            for partition in self.owned.get(member, ()):
                owners[partition] = owners.get(partition, 0) + 1
        return (
            all(count == 1 for count in owners.values())
            and len(owners) == PARTITIONS
            and sum(counts) == PARTITIONS
            and max(counts) - min(counts) <= 1
        )

    def settled(self) -> float | None:
        with self.lock:
            return self.settled_at


class Member:
    """One consumer polling on its own thread; ``leave()`` closes it there (LeaveGroup)."""

    def __init__(
        self, number: int, group: Group, config: dict[str, Any], topic: str, cooperative: bool
    ) -> None:
        self.number = number
        self.group = group
        self.cooperative = cooperative
        self.consumer = Consumer(config)
        self.topic = topic
        self.stop = threading.Event()
        self.left_at: float | None = None
        self.error: BaseException | None = None
        self.started_at = time.perf_counter()
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)
        self.thread = threading.Thread(target=self._run, name=f"member-{number}", daemon=True)
        self.thread.start()

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = {tp.partition for tp in partitions}

        def change(owned: set[int]) -> None:
            if not self.cooperative:
                owned.clear()
            owned.update(numbers)

        self.group.update(self.number, change)

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = {tp.partition for tp in partitions}
        self.group.update(self.number, lambda owned: owned.difference_update(numbers))

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                message = self.consumer.poll(0.05)
                if message is not None and not message.error():
                    self.group.read(self.number, message.partition())
            self.left_at = time.perf_counter()
            self.consumer.close()
        except BaseException as error:  # shown by the main thread
            self.error = error

    def leave(self) -> float:
        """Closes the consumer on its thread; returns when that started."""
        self.stop.set()
        self.thread.join(SETTLE_TIMEOUT_S)
        if self.error is not None:
            raise self.error
        assert self.left_at is not None, f"member {self.number} did not close"
        return self.left_at


def rebalance_times(
    bootstrap: str, topic: str, strategy: str, rounds: int, heartbeat_ms: int
) -> tuple[list[float], list[float], list[float]]:
    """Seconds of each join (settled, consumed again) and each leave rebalance, for
    ``rounds`` rounds."""
    group = Group()
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{strategy}-{time.time_ns()}",
        "enable.auto.commit": False,
        "auto.offset.reset": "latest",
    }
    if strategy == "consumer":
        config["group.protocol"] = "consumer"  # heartbeat interval and session: the broker's
    else:
        config["partition.assignment.strategy"] = strategy
        config["heartbeat.interval.ms"] = heartbeat_ms
        config["session.timeout.ms"] = max(10_000, 4 * heartbeat_ms)
    cooperative = strategy != "range"
    members: list[Member] = []
    joins: list[float] = []
    resumed: list[float] = []
    leaves: list[float] = []
    serial = 0

    def add() -> Member:
        nonlocal serial
        group.expect({m.number for m in members} | {serial})
        member = Member(serial, group, config, topic, cooperative)
        serial += 1
        members.append(member)
        return member

    def settle(what: str) -> float:
        wait_for(lambda: group.settled() is not None, what)
        settled = group.settled()
        assert settled is not None
        return settled

    try:
        for _ in range(MEMBERS):
            add()
        settle(f"{MEMBERS} {strategy} members to share the partitions")
        for round_number in range(rounds):
            joiner = add()
            joins.append(settle(f"round {round_number}: a join") - joiner.started_at)
            wait_for(lambda: group.consumed_again() is not None, "every partition consumed")
            again = group.consumed_again()
            assert again is not None
            resumed.append(again - joiner.started_at)
            leaver = members.pop(0)
            group.expect({m.number for m in members})
            left_at = leaver.leave()
            leaves.append(settle(f"round {round_number}: a leave") - left_at)
    finally:
        for member in members:
            member.stop.set()
        for member in members:
            member.thread.join(SETTLE_TIMEOUT_S)
    return joins, resumed, leaves


class Feeder:
    """A producer thread writing one record to every partition each ``PRODUCE_INTERVAL_S``."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.topic = topic
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="feeder", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(PRODUCE_INTERVAL_S):
            for partition in range(PARTITIONS):
                self.producer.produce(self.topic, b"x", partition=partition)
            self.producer.poll(0)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.producer.flush(10)


def joined_consumer(bootstrap: str, topic: str, **extra: Any) -> Consumer:
    """A consumer of a new group, subscribed to ``topic`` and holding its assignment."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-commits-{time.time_ns()}",
            "enable.auto.commit": False,
            **extra,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not consumer.assignment():
        if time.monotonic() > deadline:
            raise TimeoutError("the commit consumer got no assignment")
        consumer.poll(0.05)
    return consumer


def commit_rates(bootstrap: str, topic: str, commits: int) -> tuple[float, float, int]:
    """(synchronous commits/s, asynchronous commits/s, asynchronous commit errors); each mode
    with its own group member, warmed up by one synchronous commit."""
    consumer = joined_consumer(bootstrap, topic)
    try:
        commit = consumer.commit
        commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        started = time.perf_counter()
        for offset in range(2, commits + 2):
            commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        sync_rate = commits / (time.perf_counter() - started)
    finally:
        consumer.close()

    reported = [0, 0]  # callbacks, errors

    def on_commit(error: Any, _partitions: list[TopicPartition]) -> None:
        reported[0] += 1
        reported[1] += error is not None

    consumer = joined_consumer(bootstrap, topic, on_commit=on_commit)
    try:
        commit = consumer.commit
        commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        consumer.poll(0)
        first = reported[0]
        errors = reported[1]
        started = time.perf_counter()
        for offset in range(2, commits + 2):
            commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=True)
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while reported[0] - first < commits:
            if time.monotonic() > deadline:
                missing = commits - (reported[0] - first)
                raise TimeoutError(f"{missing} asynchronous commits never reported")
            consumer.poll(0.001)
        async_rate = commits / (time.perf_counter() - started)
    finally:
        consumer.close()
    return sync_rate, async_rate, reported[1] - errors


# ---------------------------------------------------------------------- orchestration


def serve(data_dir: str, heartbeat_ms: int) -> tuple[subprocess.Popen[str], str]:
    return start_serve(
        data_dir,
        {
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "10",
            "group.consumer.heartbeat.interval.ms": str(heartbeat_ms),
            "group.consumer.session.timeout.ms": str(max(10_000, 4 * heartbeat_ms)),
        },
    )


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3, help="join/leave rounds per strategy")
    parser.add_argument("--heartbeat-ms", type=int, default=3000, help="heartbeat.interval.ms")
    parser.add_argument("--commits", type=int, default=2000, help="commits per mode")
    parser.add_argument(
        "--strategies", default=",".join(STRATEGIES), help="which of " + ",".join(STRATEGIES)
    )
    args = parser.parse_args()
    strategies = [name for name in args.strategies.split(",") if name]

    with tempfile.TemporaryDirectory(prefix="odradek-group-perf-") as data_dir:
        server, bootstrap = serve(data_dir, args.heartbeat_ms)
        try:
            create_topic(bootstrap, "rebalance", PARTITIONS)
            create_topic(bootstrap, "commits", 1)
            print(
                f"odradek serve on {bootstrap}; confluent-kafka consumers, "
                f"heartbeat.interval.ms={args.heartbeat_ms}"
            )
            print(
                f"rebalance of {MEMBERS} members over {PARTITIONS} partitions, "
                f"median (min-max) of {args.rounds} rounds, seconds"
            )
            print(
                f"{'strategy':<20} {'join (10→11)':>22} {'join: consumed again':>22} "
                f"{'leave (11→10)':>22}"
            )
            feeder = Feeder(bootstrap, "rebalance")
            baseline: tuple[float, ...] = ()
            try:
                for strategy in strategies:
                    figures = rebalance_times(
                        bootstrap, "rebalance", strategy, args.rounds, args.heartbeat_ms
                    )
                    medians = tuple(statistics.median(values) for values in figures)
                    baseline = baseline or medians
                    print(
                        f"{strategy:<20} "
                        + " ".join(f"{summary(values):>22}" for values in figures),
                        flush=True,
                    )
                    print(
                        f"{'  ratio to range':<20} "
                        + " ".join(
                            f"{median / base:>22.2f}"
                            for median, base in zip(medians, baseline, strict=True)
                        ),
                        flush=True,
                    )
            finally:
                feeder.close()

            sync_rate, async_rate, failures = commit_rates(bootstrap, "commits", args.commits)
            print(f"\ncommit throughput, {args.commits} commits of one partition's offset")
            print(f"{'mode':<20} {'commits/s':>12}")
            print(f"{'synchronous':<20} {sync_rate:>12,.0f}")
            print(
                f"{'asynchronous':<20} {async_rate:>12,.0f}"
                + (f"  ({failures} failed)" if failures else "")
            )
        finally:
            stop_serve(server)


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


if __name__ == "__main__":
    try:
        main()
    except KafkaException as error:
        sys.exit(f"group_perf: {error}")

"""odradek's own consumer with ``group.protocol=consumer`` (KIP-848) in subprocesses
(``odradek_kip848_member.py``), alone and in one group with confluent-kafka consumers using
``group.protocol=consumer``: one member is SIGKILLed and its partitions move to the others after
its session, another leaves with ``close()``. From each member's timestamped assign/revoke
history: no partition is ever owned by two members at once, every record is read, committed
offsets never go backwards."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker

from .test_groups import wait_until
from .test_groups_kip848 import (
    BROKER_CONFIG,
    PARTITIONS,
    SESSION_TIMEOUT_MS,
    Member,
    assert_commits_never_go_backwards,
    assert_no_overlap,
    committed_offsets,
    covering,
    produce,
)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=BROKER_CONFIG) as running:
        yield running


@pytest.mark.parametrize(
    "protocols",
    [("odradek", "odradek", "odradek"), ("odradek", "consumer", "odradek", "consumer")],
    ids=["odradek-only", "mixed-with-confluent"],
)
def test_kip848_group_with_odradek_members_a_kill_and_a_close(
    broker: Broker, protocols: tuple[str, ...]
) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"kip848o-{uuid.uuid4().hex[:8]}"
    group = f"group-{topic}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)
    produced = produce(bootstrap, topic, 60, 0)
    members = [
        Member(f"{protocol}{index}", protocol, bootstrap, topic, group)
        for index, protocol in enumerate(protocols)
    ]
    try:
        wait_until(
            lambda: covering(members),
            "the members sharing the topic",
            40,
            lambda: str([m.owned() for m in members]),
        )
        wait_until(lambda: produced <= set().union(*(m.seen() for m in members)), "reads", 30)

        # SIGKILL an odradek member: after its session its partitions go to the others.
        killed = members[2]
        killed.kill()
        survivors = [m for m in members if m is not killed]
        wait_until(
            lambda: covering(survivors),
            "the survivors to take every partition",
            SESSION_TIMEOUT_MS / 1000 + 20,
            lambda: str([m.owned() for m in survivors]),
        )
        produced |= produce(bootstrap, topic, 60, 60)

        # An odradek member leaves with close(): the rest take its partitions at once.
        leaver = next(m for m in survivors if m.name.startswith("odradek"))
        leaver.close()
        rest = [m for m in survivors if m is not leaver]
        wait_until(
            lambda: covering(rest),
            "the partitions back after the leave",
            30,
            lambda: str([m.owned() for m in rest]),
        )
        produced |= produce(bootstrap, topic, 60, 120)
        wait_until(
            lambda: produced <= set().union(*(m.seen() for m in members)),
            "every record read by the group",
            30,
        )
        end = time.time()
        per_partition = len(produced) // PARTITIONS

        def all_committed() -> dict[int, int] | None:
            found = committed_offsets(bootstrap, topic, group)
            return found if all(found[p] == per_partition for p in range(PARTITIONS)) else None

        final = wait_until(all_committed, "the group's final commits", 20)
        assert_no_overlap(members, end)
        assert_commits_never_go_backwards(members, final)
        # The odradek members took part, and the leaver revoked (committed) on close.
        odradek = [m for m in members if m.name.startswith("odradek")]
        assert all(any(e.get("assigned") for e in m.snapshot()) for m in odradek)
        assert any("lost" not in e and e.get("revoked") for e in leaver.snapshot())
        assert any(e.get("closed") for e in leaver.snapshot())
    finally:
        for member in members:
            member.kill()

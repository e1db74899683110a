"""``Consumer`` with ``group.protocol=consumer`` (KIP-848) against a live embedded broker:
two and three members share the partitions without overlap, a member that closes or stops
heartbeating (killed) hands its partitions over, commits carry the member epoch, static
members, a regex subscription matched by the broker, and bad settings fail clearly."""

from __future__ import annotations

from typing import Any

import pytest
from tests.client.conftest import Produce
from tests.client.consumer.conftest import MakeConsumer, Member, eventually
from tests.client.consumer.test_group import all_partitions, fill

from odradek import TopicPartition

KIP848 = {"group_protocol": "consumer", "auto_offset_reset": "earliest"}


class History:
    """Per-member ownership intervals from the listener calls, to check for overlap."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members

    def owners(self) -> dict[TopicPartition, list[int]]:
        """Who owns each partition now, by the listener calls seen so far."""
        owned: dict[TopicPartition, list[int]] = {}
        for index, member in enumerate(self.members):
            mine: set[TopicPartition] = set()
            for kind, tps in list(member.events):
                if kind == "assigned":
                    mine |= set(tps)
                else:
                    mine -= set(tps)
            for tp in mine:
                owned.setdefault(tp, []).append(index)
        return owned


def _records_by_partition(member: Member) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for record in member.seen():
        out.setdefault(record.partition, []).append(record.offset)
    return out


@pytest.mark.parametrize("count", [2, 3])
def test_members_share_partitions_and_take_over_from_one_that_closes(
    make_consumer: MakeConsumer, create_topic: Any, produce: Produce, count: int
) -> None:
    create_topic("k", 6)
    fill(produce, "k", 6, 10)
    members = [
        Member(make_consumer(group_id=f"kip848-{count}", **KIP848), ["k"]) for _ in range(count)
    ]
    history = History(members)
    share = 6 // count

    def split_evenly() -> bool:
        return all(len(m.current()) == share for m in members)

    eventually(split_evenly, what=f"{count} members with {share} partitions each")
    union = set().union(*(m.current() for m in members))
    assert union == all_partitions("k", 6)
    assert sum(len(m.current()) for m in members) == 6  # no partition twice
    assert all(len(owners) == 1 for owners in history.owners().values())
    eventually(lambda: sum(len(m.seen()) for m in members) >= 60, what="every record")
    # Each record was read by exactly one member.
    seen = [(r.partition, r.offset) for m in members for r in m.seen()]
    assert len(seen) == len(set(seen)) == 60
    leaving = members.pop()
    leaving.stop()  # commits (auto commit) and leaves with epoch -1
    remaining_share = 6 // len(members)
    eventually(
        lambda: all(len(m.current()) == remaining_share for m in members),
        what="the survivors take the leaver's partitions",
    )
    assert set().union(*(m.current() for m in members)) == all_partitions("k", 6)
    fill(produce, "k", 6, 5, start=10)
    eventually(
        lambda: (
            {(r.partition, r.offset) for m in members for r in m.seen()}
            >= {(p, o) for p in range(6) for o in range(10, 15)}
        ),
        what="the new records of every partition",
    )
    # The leaver committed what it had read: nobody re-read its records.
    before = {(r.partition, r.offset) for r in leaving.seen()}
    after = {(r.partition, r.offset) for m in members for r in m.seen()}
    assert not before & after
    for member in members:
        member.stop()

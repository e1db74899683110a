"""The group APIs at the versions Kafka 4 serves, on an embedded broker: batched
FindCoordinator (v4+, KIP-699), batched OffsetFetch (v8+, KIP-709), OffsetCommit of a topic
that does not exist (UNKNOWN_TOPIC_OR_PARTITION per partition, the others committed),
DescribeGroups v6's GROUP_ID_NOT_FOUND (KIP-1043), ListGroups v5's type filter and a whole
classic group life cycle at the flexible versions (JoinGroup v9, SyncGroup v5, Heartbeat v4,
batched LeaveGroup v5 with reasons)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from odradek import Broker
from odradek.errors import ErrorCode

from .conftest import RawClient, ms, schema
from .test_groups import GROUP_CONFIG, create_topic, find


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=GROUP_CONFIG) as running:
        yield running


def commit_v9(raw: RawClient, group: str, topics: dict[str, dict[int, int]]) -> Any:
    module = schema("offset_commit", 9)
    return raw.send(
        module.OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=tuple(
                module.OffsetCommitRequestTopic(
                    name=name,
                    partitions=tuple(
                        module.OffsetCommitRequestPartition(
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=-1,
                            committed_metadata=None,
                        )
                        for p, o in offsets.items()
                    ),
                )
                for name, offsets in topics.items()
            ),
        )
    )


def test_find_coordinator_v4_answers_each_key_of_the_batch(broker: Broker, raw: RawClient) -> None:
    module = schema("find_coordinator", 6)
    answer = raw.send(
        module.FindCoordinatorRequest(key_type=0, coordinator_keys=("g-batch-1", "g-batch-2"))
    )
    assert [(c.key, int(c.error_code), c.node_id, c.port) for c in answer.coordinators] == [
        ("g-batch-1", ErrorCode.NONE, 0, broker.port),
        ("g-batch-2", ErrorCode.NONE, 0, broker.port),
    ]
    deadline = time.monotonic() + 60.0
    while True:  # the first ask creates __transaction_state
        txn = raw.send(module.FindCoordinatorRequest(key_type=1, coordinator_keys=("tx",)))
        if txn.coordinators[0].error_code == ErrorCode.NONE or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [(c.key, int(c.error_code), c.node_id, c.port) for c in txn.coordinators] == [
        ("tx", ErrorCode.NONE, 0, broker.port)  # this lone broker's transaction coordinator
    ]
    unknown = raw.send(module.FindCoordinatorRequest(key_type=7, coordinator_keys=("k",)))
    assert [int(c.error_code) for c in unknown.coordinators] == [ErrorCode.INVALID_REQUEST]


def test_offset_commit_of_a_topic_that_does_not_exist(raw: RawClient, topic: str) -> None:
    create_topic(raw, topic)
    group = f"g-unknown-{topic}"
    find(raw, group)
    missing = f"missing-{topic}"
    answer = commit_v9(raw, group, {topic: {0: 4}, missing: {0: 7, 1: 8}})
    errors = {
        (t.name, p.partition_index): int(p.error_code) for t in answer.topics for p in t.partitions
    }
    assert errors == {
        (topic, 0): ErrorCode.NONE,
        (missing, 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (missing, 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    only_missing = commit_v9(raw, group, {missing: {0: 1}})
    assert int(only_missing.topics[0].partitions[0].error_code) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    fetched = fetch_batched(raw, {group: None})
    assert fetched[group] == (ErrorCode.NONE, {(topic, 0): 4})  # nothing of the missing topic


def fetch_batched(
    raw: RawClient, groups: dict[str, list[str] | None], version: int = 9
) -> dict[str, tuple[int, dict[tuple[str, int], int]]]:
    module = schema("offset_fetch", version)
    answer = raw.send(
        module.OffsetFetchRequest(
            groups=tuple(
                module.OffsetFetchRequestGroup(
                    group_id=group,
                    topics=None
                    if topics is None
                    else tuple(
                        module.OffsetFetchRequestTopics(name=t, partition_indexes=(0, 1))
                        for t in topics
                    ),
                )
                for group, topics in groups.items()
            ),
            require_stable=False,
        )
    )
    return {
        g.group_id: (
            int(g.error_code),
            {
                (t.name, p.partition_index): p.committed_offset
                for t in g.topics
                for p in t.partitions
            },
        )
        for g in answer.groups
    }


def test_offset_fetch_v8_answers_several_groups(raw: RawClient, topic: str) -> None:
    create_topic(raw, topic)
    first, second = f"g1-{topic}", f"g2-{topic}"
    for group, offset in ((first, 11), (second, 22)):
        find(raw, group)
        assert (
            int(commit_v9(raw, group, {topic: {1: offset}}).topics[0].partitions[0].error_code) == 0
        )
    for version in (8, 9):
        fetched = fetch_batched(raw, {first: [topic], second: None}, version)
        assert fetched == {
            first: (ErrorCode.NONE, {(topic, 0): -1, (topic, 1): 11}),
            second: (ErrorCode.NONE, {(topic, 1): 22}),
        }


def test_describe_groups_v6_answers_group_id_not_found(raw: RawClient) -> None:
    find(raw, "g-never-seen")
    for version, expected in ((5, ErrorCode.NONE), (6, ErrorCode.GROUP_ID_NOT_FOUND)):
        answer = raw.send(
            schema("describe_groups", version).DescribeGroupsRequest(
                groups=("g-never-seen",), include_authorized_operations=False
            )
        )
        (group,) = answer.groups
        assert int(group.error_code) == expected, version
        assert group.group_state == "Dead"
        if version == 6:
            assert group.error_message is not None


def test_classic_group_at_the_flexible_versions(raw: RawClient, topic: str) -> None:
    group = f"g-flex-{topic}"
    find(raw, group)
    join_module = schema("join_group", 9)
    joined = raw.send(
        join_module.JoinGroupRequest(
            group_id=group,
            session_timeout=ms(10_000),
            rebalance_timeout=ms(10_000),
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(join_module.JoinGroupRequestProtocol(name="range", metadata=b"m"),),
            reason="testing",
        )
    )
    assert int(joined.error_code) == ErrorCode.NONE
    assert (joined.protocol_type, joined.protocol_name) == ("consumer", "range")
    member = joined.member_id
    sync_module = schema("sync_group", 5)
    synced = raw.send(
        sync_module.SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=member,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(
                sync_module.SyncGroupRequestAssignment(member_id=member, assignment=b"a"),
            ),
        )
    )
    assert (int(synced.error_code), synced.assignment, synced.protocol_name) == (0, b"a", "range")
    beat = raw.send(
        schema("heartbeat", 4).HeartbeatRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=member,
            group_instance_id=None,
        )
    )
    assert int(beat.error_code) == ErrorCode.NONE
    listed = raw.send(
        schema("list_groups", 5).ListGroupsRequest(
            states_filter=("Stable",), types_filter=("classic",)
        )
    )
    assert (group, "Stable", "classic") in {
        (g.group_id, g.group_state, g.group_type) for g in listed.groups
    }
    by_consumer_type = raw.send(
        schema("list_groups", 5).ListGroupsRequest(states_filter=(), types_filter=("consumer",))
    )
    assert group not in {g.group_id for g in by_consumer_type.groups}
    leave_module = schema("leave_group", 5)
    left = raw.send(
        leave_module.LeaveGroupRequest(
            group_id=group,
            members=(
                leave_module.MemberIdentity(member_id=member, group_instance_id=None, reason="bye"),
                leave_module.MemberIdentity(member_id="ghost", group_instance_id=None, reason=None),
            ),
        )
    )
    assert int(left.error_code) == ErrorCode.NONE
    assert [(m.member_id, int(m.error_code)) for m in left.members] == [
        (member, ErrorCode.NONE),
        ("ghost", ErrorCode.UNKNOWN_MEMBER_ID),
    ]

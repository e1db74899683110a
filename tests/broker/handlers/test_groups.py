"""The group APIs on an embedded broker, by raw requests of exact versions: FindCoordinator
(creating ``__consumer_offsets``), JoinGroup, SyncGroup, Heartbeat, OffsetCommit, OffsetFetch,
DescribeGroups, ListGroups, LeaveGroup, DeleteGroups, OffsetDelete; clients may not produce to
the internal topic; committed offsets survive a broker restart (the coordinator replays its
partition)."""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from kio.static.primitive import i64Timedelta

from odradek import Broker
from odradek.broker.group.records import partition_for_group
from odradek.broker.group.runtime import OFFSETS_TOPIC
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey
from odradek.records.codec import SimpleRecord, build_batch

from .conftest import RawClient, ms, schema, wait_for

OFFSETS_PARTITIONS = 5
GROUP_CONFIG = {
    "num.partitions": "2",
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=GROUP_CONFIG) as running:
        yield running


def find(raw: RawClient, group: str, version: int = 1, key_type: int = 0) -> Any:
    module = schema("find_coordinator", version)
    fields: dict[str, Any] = {"key": group}
    if version >= 1:
        fields["key_type"] = key_type
    return raw.send(module.FindCoordinatorRequest(**fields))


def join(raw: RawClient, group: str, member_id: str = "", version: int = 5) -> Any:
    module = schema("join_group", version)
    fields: dict[str, Any] = {
        "group_id": group,
        "session_timeout": ms(10_000),
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": (module.JoinGroupRequestProtocol(name="range", metadata=b"meta"),),
    }
    if version >= 1:
        fields["rebalance_timeout"] = ms(10_000)
    if version >= 5:
        fields["group_instance_id"] = None
    return raw.send(module.JoinGroupRequest(**fields))


def sync(raw: RawClient, group: str, generation: int, member_id: str, assignment: bytes) -> Any:
    module = schema("sync_group", 3)
    return raw.send(
        module.SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
            assignments=(
                module.SyncGroupRequestAssignment(member_id=member_id, assignment=assignment),
            ),
        )
    )


def commit(
    raw: RawClient,
    group: str,
    offsets: dict[int, int],
    topic: str,
    generation: int = -1,
    member_id: str = "",
) -> Any:
    module = schema("offset_commit", 3)
    return raw.send(
        module.OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=-1)),
            topics=(
                module.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=tuple(
                        module.OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=o, committed_metadata="m"
                        )
                        for p, o in offsets.items()
                    ),
                ),
            ),
        )
    )


def create_topic(raw: RawClient, topic: str, partitions: int = 2) -> None:
    module = schema("create_topics", 3)
    answer = raw.send(
        module.CreateTopicsRequest(
            topics=(
                module.CreatableTopic(
                    name=topic,
                    num_partitions=partitions,
                    replication_factor=1,
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=ms(10_000),
            validate_only=False,
        )
    )
    assert int(answer.topics[0].error_code) in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)


def fetch_offsets(
    raw: RawClient, group: str, topic: str | None, version: int = 3
) -> dict[tuple[str, int], int]:
    module = schema("offset_fetch", version)
    topics = (
        None
        if topic is None
        else (module.OffsetFetchRequestTopic(name=topic, partition_indexes=(0, 1)),)
    )
    answer = raw.send(module.OffsetFetchRequest(group_id=group, topics=topics))
    if version >= 2:
        assert int(answer.error_code) == ErrorCode.NONE
    return {
        (t.name, p.partition_index): p.committed_offset for t in answer.topics for p in t.partitions
    }


def test_find_coordinator_creates_the_offsets_topic(broker: Broker, raw: RawClient) -> None:
    for version in (0, 1):
        answer = find(raw, "g-find", version)
        assert int(answer.error_code) == ErrorCode.NONE
        assert (answer.node_id, answer.host, answer.port) == (0, broker.host, broker.port)
    topics = broker.app.topics
    assert topics is not None
    assert topics.is_internal(OFFSETS_TOPIC)
    assert topics.partition_count(OFFSETS_TOPIC) == OFFSETS_PARTITIONS
    configs = {entry.name: entry.value for entry in topics.topic_config_entries(OFFSETS_TOPIC)}
    assert configs["cleanup.policy"] == "compact"
    assert configs["segment.bytes"] == str(100 * 1024 * 1024)


def test_find_coordinator_for_transactions_creates_the_transaction_state(
    broker: Broker, raw: RawClient
) -> None:
    answer = find(raw, "txn-1", 1, key_type=1)
    assert int(answer.error_code) == ErrorCode.NONE
    assert (answer.node_id, answer.port) == (0, broker.port)
    topics = broker.app.topics
    assert topics is not None
    assert topics.is_internal("__transaction_state")
    configs = {e.name: e.value for e in topics.topic_config_entries("__transaction_state")}
    assert configs["cleanup.policy"] == "compact"


def test_group_apis_are_advertised(raw: RawClient) -> None:
    answer = raw.send(
        schema("api_versions", 3).ApiVersionsRequest(
            client_software_name="raw", client_software_version="1"
        )
    )
    ranges = {int(k.api_key): (k.min_version, k.max_version) for k in answer.api_keys}
    # Kafka 4.0's ranges (JoinGroup keeps v0-v1, which Kafka 4 dropped: see api_keys).
    assert ranges[ApiKey.FIND_COORDINATOR] == (0, 6)
    assert ranges[ApiKey.JOIN_GROUP] == (0, 9)
    assert ranges[ApiKey.SYNC_GROUP] == (0, 5)
    assert ranges[ApiKey.HEARTBEAT] == (0, 4)
    assert ranges[ApiKey.LEAVE_GROUP] == (0, 5)
    assert ranges[ApiKey.OFFSET_COMMIT] == (2, 10)  # Kafka 4.1's v10: topics by id
    assert ranges[ApiKey.OFFSET_FETCH] == (1, 10)  # v10: Kafka 4.2, topics by id
    assert ranges[ApiKey.DESCRIBE_GROUPS] == (0, 6)
    assert ranges[ApiKey.LIST_GROUPS] == (0, 5)
    assert ranges[ApiKey.DELETE_GROUPS] == (0, 2)
    assert ranges[ApiKey.OFFSET_DELETE] == (0, 0)


def test_clients_cannot_produce_to_the_offsets_topic(raw: RawClient) -> None:
    find(raw, "g-produce")
    module = schema("produce", 7)
    batch = build_batch([SimpleRecord(0, b"k", b"v")])
    answer = raw.send(
        module.ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=ms(1000),
            topic_data=(
                module.TopicProduceData(
                    name=OFFSETS_TOPIC,
                    partition_data=(module.PartitionProduceData(index=0, records=batch),),
                ),
            ),
        )
    )
    assert (
        int(answer.responses[0].partition_responses[0].error_code)
        == ErrorCode.INVALID_TOPIC_EXCEPTION
    )


def test_one_member_group_life_cycle(raw: RawClient, topic: str) -> None:
    group = f"g-{topic}"
    create_topic(raw, topic)
    find(raw, group)
    joined = join(raw, group)
    assert int(joined.error_code) == ErrorCode.NONE
    member = joined.member_id
    assert member.startswith("raw-test-")
    assert (joined.generation_id, joined.leader, joined.protocol_name) == (1, member, "range")
    assert [(m.member_id, m.metadata) for m in joined.members] == [(member, b"meta")]

    synced = sync(raw, group, 1, member, b"assigned")
    assert (int(synced.error_code), synced.assignment) == (ErrorCode.NONE, b"assigned")

    beat = raw.send(
        schema("heartbeat", 1).HeartbeatRequest(group_id=group, generation_id=1, member_id=member)
    )
    assert int(beat.error_code) == ErrorCode.NONE
    stale = raw.send(
        schema("heartbeat", 1).HeartbeatRequest(group_id=group, generation_id=7, member_id=member)
    )
    assert int(stale.error_code) == ErrorCode.ILLEGAL_GENERATION

    committed = commit(raw, group, {0: 5, 1: 9}, topic, generation=1, member_id=member)
    assert [int(p.error_code) for p in committed.topics[0].partitions] == [0, 0]
    assert fetch_offsets(raw, group, topic) == {(topic, 0): 5, (topic, 1): 9}
    assert fetch_offsets(raw, group, None) == {(topic, 0): 5, (topic, 1): 9}
    assert fetch_offsets(raw, group, topic, version=1) == {(topic, 0): 5, (topic, 1): 9}

    described = raw.send(
        schema("describe_groups", 2).DescribeGroupsRequest(groups=(group, "no-such-group"))
    )
    stable, unknown = described.groups
    assert (stable.group_state, stable.protocol_type, stable.protocol_data) == (
        "Stable",
        "consumer",
        "range",
    )
    assert [
        (m.member_id, m.client_id, m.client_host, m.member_assignment) for m in stable.members
    ] == [(member, "raw-test", "/127.0.0.1", b"assigned")]
    assert unknown.group_state == "Dead"

    listed = raw.send(schema("list_groups", 1).ListGroupsRequest())
    assert (group, "consumer") in {(g.group_id, g.protocol_type) for g in listed.groups}

    busy = raw.send(schema("delete_groups", 1).DeleteGroupsRequest(groups_names=(group,)))
    assert int(busy.results[0].error_code) == ErrorCode.NON_EMPTY_GROUP

    left = raw.send(schema("leave_group", 1).LeaveGroupRequest(group_id=group, member_id=member))
    assert int(left.error_code) == ErrorCode.NONE

    module = schema("offset_delete", 0)
    deleted = raw.send(
        module.OffsetDeleteRequest(
            group_id=group,
            topics=(
                module.OffsetDeleteRequestTopic(
                    name=topic, partitions=(module.OffsetDeleteRequestPartition(partition_index=1),)
                ),
            ),
        )
    )
    assert int(deleted.error_code) == ErrorCode.NONE
    assert fetch_offsets(raw, group, topic) == {(topic, 0): 5, (topic, 1): -1}

    gone = raw.send(
        schema("delete_groups", 1).DeleteGroupsRequest(groups_names=(group, "no-such-group"))
    )
    assert [(r.group_id, int(r.error_code)) for r in gone.results] == [
        (group, ErrorCode.NONE),
        ("no-such-group", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    assert fetch_offsets(raw, group, topic) == {(topic, 0): -1, (topic, 1): -1}


def test_join_group_v0_without_rebalance_timeout(raw: RawClient, topic: str) -> None:
    group = f"g0-{topic}"
    find(raw, group)
    joined = join(raw, group, version=0)
    assert int(joined.error_code) == ErrorCode.NONE
    assert joined.generation_id == 1


def test_unknown_member_is_refused(raw: RawClient, topic: str) -> None:
    group = f"gu-{topic}"
    create_topic(raw, topic)
    find(raw, group)
    beat = raw.send(
        schema("heartbeat", 1).HeartbeatRequest(group_id=group, generation_id=1, member_id="nobody")
    )
    assert int(beat.error_code) == ErrorCode.UNKNOWN_MEMBER_ID
    committed = commit(raw, group, {0: 1}, topic, generation=3, member_id="nobody")
    assert int(committed.topics[0].partitions[0].error_code) == ErrorCode.ILLEGAL_GENERATION


def test_committed_offsets_survive_a_restart() -> None:
    with tempfile.TemporaryDirectory(prefix="odradek-groups-") as data_dir:
        groups = [f"restart-{i}" for i in range(8)]  # spread over several partitions
        assert len({partition_for_group(g, OFFSETS_PARTITIONS) for g in groups}) > 1
        with Broker(data_dir, config=GROUP_CONFIG) as first:
            raw = RawClient(first.host, first.port)
            create_topic(raw, "t")
            find(raw, groups[0])
            for i, group in enumerate(groups):
                for offset in range(3):  # later commits win on replay
                    commit(raw, group, {0: 10 * i + offset}, "t")
            deleted = groups[-1]
            raw.send(schema("delete_groups", 1).DeleteGroupsRequest(groups_names=(deleted,)))
            raw.close()
        with Broker(data_dir, config=GROUP_CONFIG) as second:
            raw = RawClient(second.host, second.port)
            try:
                for i, group in enumerate(groups[:-1]):
                    offsets = fetch_when_loaded(raw, group)
                    assert offsets == {("t", 0): 10 * i + 2}
                assert fetch_when_loaded(raw, deleted) == {}
            finally:
                raw.close()


def fetch_when_loaded(raw: RawClient, group: str) -> dict[tuple[str, int], int]:
    module = schema("offset_fetch", 3)

    def attempt() -> Any:
        answer = raw.send(module.OffsetFetchRequest(group_id=group, topics=None))
        if int(answer.error_code) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return None
        assert int(answer.error_code) == ErrorCode.NONE
        return answer

    answer = wait_for(attempt, f"{group} to load")
    return {
        (t.name, p.partition_index): p.committed_offset for t in answer.topics for p in t.partitions
    }

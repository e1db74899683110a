"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) on an embedded broker, by raw
requests of exact versions: v0's coordinator-made member id, v1's client-made one, the
assignment by topic id as Metadata reports it, error answers (a bad regular expression, an
unknown assignor, an unknown member), leaving, ConsumerGroupDescribe's epochs and topic names,
ListGroups, and commits at the member epoch."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.static.primitive import i64Timedelta

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey

from .conftest import RawClient, ms, schema, wait_for

CONFIG = {
    "num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "group.consumer.heartbeat.interval.ms": "1000",
}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=CONFIG) as running:
        yield running


def _topic_id(raw: RawClient, topic: str) -> uuid.UUID:
    module = schema("metadata", 12)
    answer = raw.send(
        module.MetadataRequest(
            topics=(module.MetadataRequestTopic(topic_id=None, name=topic),),
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        )
    )
    (found,) = answer.topics
    return found.topic_id  # type: ignore[no-any-return]


def _heartbeat(raw: RawClient, version: int = 1, **fields: Any) -> Any:
    module = schema("consumer_group_heartbeat", version)
    fields.setdefault("group_id", "g")
    fields.setdefault("member_epoch", 0)
    fields.setdefault("topic_partitions", None)
    if "rebalance_timeout" in fields:
        fields["rebalance_timeout"] = ms(fields["rebalance_timeout"])
    if "topic_partitions" in fields and fields["topic_partitions"] is not None:
        fields["topic_partitions"] = tuple(
            module.TopicPartitions(topic_id=t, partitions=tuple(p))
            for t, p in fields["topic_partitions"].items()
        )
    return raw.send(module.ConsumerGroupHeartbeatRequest(**fields))


def _coordinated(raw: RawClient, group: str) -> None:
    module = schema("find_coordinator", 1)
    wait_for(
        lambda: raw.send(module.FindCoordinatorRequest(key=group, key_type=0)).error_code == 0,
        "the coordinator",
    )


def test_a_member_joins_heartbeats_and_leaves(broker: Broker, raw: RawClient) -> None:
    _coordinated(raw, "g1")
    topic_id = wait_for(lambda: _topic_id(raw, "cg-t"), "the topic, auto-created")
    joined = _heartbeat(
        raw,
        group_id="g1",
        member_id="member-a",
        rebalance_timeout=30_000,
        subscribed_topic_names=("cg-t",),
        topic_partitions={},
    )
    assert joined.error_code == ErrorCode.NONE
    assert (joined.member_id, joined.member_epoch) == ("member-a", 1)
    assert joined.heartbeat_interval == datetime.timedelta(seconds=1)
    (assigned,) = joined.assignment.topic_partitions
    assert (assigned.topic_id, sorted(assigned.partitions)) == (topic_id, [0, 1, 2])
    again = _heartbeat(
        raw, group_id="g1", member_id="member-a", member_epoch=1,
        topic_partitions={topic_id: [0, 1, 2]},
    )  # fmt: skip
    assert (again.error_code, again.member_epoch, again.assignment) == (ErrorCode.NONE, 1, None)

    # commits at the member epoch; an older epoch is STALE_MEMBER_EPOCH
    commit = schema("offset_commit", 3)

    def commit_at(epoch: int) -> int:
        answer = raw.send(
            commit.OffsetCommitRequest(
                group_id="g1",
                generation_id_or_member_epoch=epoch,
                member_id="member-a",
                retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=-1)),
                topics=(
                    commit.OffsetCommitRequestTopic(
                        name="cg-t",
                        partitions=(
                            commit.OffsetCommitRequestPartition(
                                partition_index=0, committed_offset=5, committed_metadata=""
                            ),
                        ),
                    ),
                ),
            )
        )
        return int(answer.topics[0].partitions[0].error_code)

    assert commit_at(1) == ErrorCode.NONE
    assert commit_at(0) == ErrorCode.STALE_MEMBER_EPOCH

    # ListGroups (v1 here: the versions with group types come with the API version work)
    listed = raw.send(schema("list_groups", 1).ListGroupsRequest())
    assert ("g1", "consumer") in [(g.group_id, g.protocol_type) for g in listed.groups]
    described = raw.send(
        schema("consumer_group_describe", 1).ConsumerGroupDescribeRequest(
            group_ids=("g1", "missing"), include_authorized_operations=False
        )
    )
    group, missing = described.groups
    assert (group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name) == (
        "Stable", 1, 1, "uniform",
    )  # fmt: skip
    (member,) = group.members
    (described_partitions,) = member.assignment.topic_partitions
    assert (described_partitions.topic_name, list(described_partitions.partitions)) == (
        "cg-t", [0, 1, 2],
    )  # fmt: skip
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    left = _heartbeat(raw, group_id="g1", member_id="member-a", member_epoch=-1)
    assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)
    gone = _heartbeat(raw, group_id="g1", member_id="member-a", member_epoch=1)
    assert gone.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_v0_gets_a_member_id_from_the_coordinator(broker: Broker, raw: RawClient) -> None:
    _coordinated(raw, "g0")
    answer = _heartbeat(
        raw, version=0, group_id="g0", member_id="", rebalance_timeout=30_000,
        subscribed_topic_names=("cg-none",), topic_partitions={},
    )  # fmt: skip
    assert answer.error_code == ErrorCode.NONE
    assert answer.member_id
    refused = _heartbeat(
        raw, version=1, group_id="g0", member_id="", rebalance_timeout=30_000,
        subscribed_topic_names=("cg-none",),
    )  # fmt: skip
    assert refused.error_code == ErrorCode.INVALID_REQUEST  # v1: the client makes the id


def test_bad_requests_get_error_answers(broker: Broker, raw: RawClient) -> None:
    _coordinated(raw, "g2")
    regex = _heartbeat(
        raw, group_id="g2", member_id="m", rebalance_timeout=1_000, subscribed_topic_regex="("
    )
    assert regex.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert regex.error_message
    assignor = _heartbeat(
        raw, group_id="g2", member_id="m", rebalance_timeout=1_000,
        subscribed_topic_names=("x",), server_assignor="sticky",
    )  # fmt: skip
    assert assignor.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    unknown = _heartbeat(raw, group_id="g2", member_id="nobody", member_epoch=3)
    assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_the_new_apis_are_advertised(broker: Broker, raw: RawClient) -> None:
    answer = raw.send(schema("api_versions", 3).ApiVersionsRequest(
        client_software_name="t", client_software_version="1"
    ))  # fmt: skip
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert ranges[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1)
    assert ranges[ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 1)

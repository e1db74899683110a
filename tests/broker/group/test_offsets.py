"""OffsetCommit fencing, OffsetFetch, offsets expiry, DeleteGroups and OffsetDelete."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.group import (
    FetchedOffset,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
)
from odradek.errors import ErrorCode

from .conftest import Harness, make_config, subscription

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
U0 = TopicPartition("u", 0)
RETENTION_MS = 10 * 60_000  # the test config's offsets.retention.minutes


def _errors(result: object) -> set[ErrorCode]:
    return set(result.partitions.values())  # type: ignore[attr-defined]


def _fetch(h: Harness, *partitions: TopicPartition, group: str = "g") -> dict[TopicPartition, int]:
    result = h.coordinator.fetch_offsets(group, list(partitions) or None).response
    return {tp: fetched.committed_offset for tp, fetched in result.partitions.items()}


def test_member_commit_is_stored_and_fetched(h: Harness) -> None:
    (member,) = h.stable_group(1)
    h.now = 1234
    result = h.commit(
        {("t", 0): 10, ("t", 1): 20}, generation=h.generation, member_id=member, metadata="meta"
    )
    assert result.partitions == {T0: ErrorCode.NONE, T1: ErrorCode.NONE}
    assert decode_record(*h.log[-1]).value == OffsetCommitValue(20, 1, "meta", 1234)  # type: ignore[union-attr]
    fetched = h.coordinator.fetch_offsets("g", [T0, U0]).response
    assert fetched.error_code == ErrorCode.NONE
    assert fetched.partitions == {
        T0: FetchedOffset(10, 1, "meta"),
        U0: FetchedOffset(-1, -1, ""),
    }
    assert _fetch(h) == {T0: 10, T1: 20}  # all committed offsets
    assert _fetch(h, T0, group="unknown") == {T0: -1}
    assert _fetch(h, group="unknown") == {}


def test_commit_fencing(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    generation = h.generation
    offsets = {("t", 0): 1}
    assert _errors(h.commit(offsets, generation=generation - 1, member_id=leader)) == {
        ErrorCode.ILLEGAL_GENERATION
    }
    assert _errors(h.commit(offsets, generation=generation, member_id="ghost")) == {
        ErrorCode.UNKNOWN_MEMBER_ID
    }
    # a consumer outside the group may not commit for a group with members
    assert _errors(h.commit(offsets)) == {ErrorCode.ILLEGAL_GENERATION}
    # during the join phase the current generation may still commit
    h.join(leader)
    assert _errors(h.commit(offsets, generation=generation, member_id=follower)) == {ErrorCode.NONE}
    h.join(follower)
    # the new generation exists but has no assignment yet
    assert _errors(h.commit(offsets, generation=generation + 1, member_id=follower)) == {
        ErrorCode.REBALANCE_IN_PROGRESS
    }
    assert _errors(h.commit(offsets, generation=generation, member_id=follower)) == {
        ErrorCode.ILLEGAL_GENERATION
    }
    records = len(h.log)
    h.commit(offsets, generation=generation - 1, member_id=leader)
    assert len(h.log) == records  # refused commits write nothing


def test_commits_outside_a_group(h: Harness) -> None:
    # an unknown group: generation -1 creates it (offsets only) ...
    assert _errors(h.commit({("t", 0): 5}, group="simple")) == {ErrorCode.NONE}
    assert h.state("simple") == "Empty"
    assert h.coordinator.snapshot()["simple"].metadata is None
    # ... a member's commit to a group that does not exist is from a generation long gone
    assert _errors(h.commit({("t", 0): 5}, group="gone", generation=3, member_id="m")) == {
        ErrorCode.ILLEGAL_GENERATION
    }
    assert h.state("gone") is None
    # an Empty group that had members accepts them too
    (member,) = h.stable_group(1)
    h.leave(member)
    assert _errors(h.commit({("t", 0): 6})) == {ErrorCode.NONE}
    assert _fetch(h, T0) == {T0: 6}


def test_offset_metadata_too_large_fails_only_that_partition() -> None:
    h = Harness(make_config(offset_metadata_max_bytes=4))
    ok = h.coordinator.commit_offsets(
        0,
        group_id="g",
        partitions=[
            _partition("t", 0, 1, "1234"),
            _partition("t", 1, 1, "12345"),
            _partition("u", 0, 1, "😀😀"),  # four UTF-16 code units: fits
        ],
    ).response
    assert ok.partitions == {
        T0: ErrorCode.NONE,
        T1: ErrorCode.OFFSET_METADATA_TOO_LARGE,
        U0: ErrorCode.NONE,
    }


def test_a_refused_first_commit_creates_no_group() -> None:
    h = Harness(make_config(offset_metadata_max_bytes=1))
    result = h.commit({("t", 0): 1}, group="fresh", metadata="too long")
    assert _errors(result) == {ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert h.state("fresh") is None
    assert h.log == []


def _partition(topic: str, partition: int, offset: int, metadata: str | None):  # type: ignore[no-untyped-def]
    from odradek.broker.group import OffsetCommitPartition  # noqa: PLC0415

    return OffsetCommitPartition(topic, partition, offset, -1, metadata)


def test_commit_with_a_retention_time_writes_an_expire_timestamp(h: Harness) -> None:
    h.now = 100
    h.commit({("t", 0): 7}, group="simple", retention_ms=5_000)
    key, value = decode_record(*h.log[-1]).key, decode_record(*h.log[-1]).value  # type: ignore[union-attr]
    assert key == OffsetCommitKey("simple", "t", 0)
    assert value == OffsetCommitValue(7, -1, "", 100, 5_100)
    assert h.log[-1][1][:2] == b"\x00\x01"  # value version 1
    h.advance(4_999)
    assert _fetch(h, T0, group="simple") == {T0: 7}
    h.advance(1_000)  # the next check after 5 100
    assert _fetch(h, T0, group="simple") == {T0: -1}
    assert h.state("simple") is None


def test_offsets_of_an_empty_group_expire_from_when_it_became_empty(h: Harness) -> None:
    (member,) = h.stable_group(1, session_ms=60_000)
    h.commit({("t", 0): 1}, generation=h.generation, member_id=member)
    for _ in range(20):  # 20 minutes of a live group: old commits do not expire
        h.advance(55_000)
        h.heartbeat(member, h.generation)
        h.advance(5_000)
        h.heartbeat(member, h.generation)
    assert _fetch(h, T0) == {T0: 1}
    h.leave(member)
    empty_since = h.now
    h.advance(RETENTION_MS - 1_000)
    assert _fetch(h, T0) == {T0: 1}
    records = len(h.log)
    h.advance(1_000)
    assert h.now - empty_since == RETENTION_MS
    assert _fetch(h, T0) == {T0: -1}
    assert h.state() is None  # and the group went with its last offsets
    assert h.log[records:] == [
        (_key("g", "t", 0), None),
        (b"\x00\x02\x00\x01g", None),
    ]


def _key(group: str, topic: str, partition: int) -> bytes:
    from odradek.broker.group.records import encode_key  # noqa: PLC0415

    return encode_key(OffsetCommitKey(group, topic, partition))


def test_offsets_of_a_simple_group_expire_by_commit_time(h: Harness) -> None:
    h.commit({("t", 0): 1}, group="simple")
    h.advance(60_000)
    h.commit({("t", 1): 2}, group="simple")
    h.advance(RETENTION_MS - 60_000)
    assert _fetch(h, group="simple") == {T1: 2}
    h.advance(60_000)
    assert h.state("simple") is None


def test_stable_consumer_group_keeps_subscribed_offsets_and_expires_the_others(
    h: Harness,
) -> None:
    (member,) = h.stable_group(1, protocols=(("range", subscription("t")),), session_ms=60_000)
    h.commit({("t", 0): 1, ("u", 0): 2}, generation=h.generation, member_id=member)
    for _ in range(11):
        h.advance(55_000)
        h.heartbeat(member, h.generation)
    assert _fetch(h) == {T0: 1}
    assert h.state() == "Stable"


def test_a_non_consumer_group_with_members_never_expires_offsets(h: Harness) -> None:
    (member,) = h.stable_group(1, protocol_type="connect", session_ms=60_000)
    h.commit({("u", 0): 2}, generation=h.generation, member_id=member)
    for _ in range(11):
        h.advance(55_000)
        h.heartbeat(member, h.generation)
    assert _fetch(h) == {U0: 2}


def test_delete_groups(h: Harness) -> None:
    h.stable_group(1, group="busy")
    h.commit({("t", 0): 1, ("t", 1): 2}, group="idle")
    result = h.coordinator.delete_groups(h.now, ["idle", "busy", "nope", "idle"])
    assert result.response.groups == {
        "idle": ErrorCode.NONE,
        "busy": ErrorCode.NON_EMPTY_GROUP,
        "nope": ErrorCode.GROUP_ID_NOT_FOUND,
    }
    assert [record.encode() for record in result.records] == [
        (_key("idle", "t", 0), None),
        (_key("idle", "t", 1), None),
        (b"\x00\x02\x00\x04idle", None),
    ]
    h.absorb(result)
    assert h.state("idle") is None
    assert _fetch(h, T0, group="idle") == {T0: -1}
    assert h.coordinator.delete_groups(h.now, ["idle"]).response.groups == {
        "idle": ErrorCode.GROUP_ID_NOT_FOUND
    }


def test_offset_delete(h: Harness) -> None:
    (member,) = h.stable_group(1, protocols=(("range", subscription("t")),))
    h.commit({("t", 0): 1, ("u", 0): 2}, generation=h.generation, member_id=member)
    result = h.coordinator.delete_offsets(h.now, group_id="g", partitions=[T0, U0, T1])
    assert result.response.error_code == ErrorCode.NONE
    assert result.response.partitions == {
        T0: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        U0: ErrorCode.NONE,
        T1: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
    }
    assert [record.encode() for record in result.records] == [(_key("g", "u", 0), None)]
    h.absorb(result)
    assert _fetch(h) == {T0: 1}
    # once Empty, anything goes; the group goes with its last offsets
    h.leave(member)
    emptied = h.coordinator.delete_offsets(h.now, group_id="g", partitions=[T0])
    assert emptied.response.partitions == {T0: ErrorCode.NONE}
    assert emptied.records[-1].encode() == (b"\x00\x02\x00\x01g", None)
    h.absorb(emptied)
    assert h.state() is None


def test_offset_delete_errors(h: Harness) -> None:
    def delete(group: str) -> ErrorCode:
        return h.coordinator.delete_offsets(
            h.now, group_id=group, partitions=[T0]
        ).response.error_code

    assert delete("") == ErrorCode.INVALID_GROUP_ID
    assert delete("nope") == ErrorCode.GROUP_ID_NOT_FOUND
    h.stable_group(1, group="connect", protocol_type="connect")
    assert delete("connect") == ErrorCode.NON_EMPTY_GROUP
    # a consumer group whose subscriptions cannot be read counts as subscribed to everything
    (member,) = h.stable_group(1, group="opaque", protocols=(("range", b"\xff"),))
    h.commit({("t", 0): 1}, group="opaque", generation=h.generation, member_id=member)
    result = h.coordinator.delete_offsets(h.now, group_id="opaque", partitions=[T0]).response
    assert result.partitions == {T0: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC}

"""``client.assignors.protocol``: the consumer protocol's subscription and assignment bytes and
the sticky assignors' user data — golden bytes, kafka-python's encoders and decoders as the
reference (byte for byte, every version), hypothesis round trips, and malformed input."""

from __future__ import annotations

import contextlib
import struct
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek._types import TopicPartition
from odradek.client.assignors import Assignment, Subscription
from odradek.client.assignors.protocol import (
    LATEST_ASSIGNMENT_VERSION,
    LATEST_SUBSCRIPTION_VERSION,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    decode_version,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)
from odradek.errors import ProtocolError

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    from kafka.protocol.consumer.metadata import (
        ConsumerProtocolAssignment as KpAssignment,
    )
    from kafka.protocol.consumer.metadata import (
        ConsumerProtocolSubscription as KpSubscription,
    )

TP = TopicPartition


def int16(value: int) -> bytes:
    return struct.pack(">h", value)


def int32(value: int) -> bytes:
    return struct.pack(">i", value)


def string(value: str) -> bytes:
    return int16(len(value.encode())) + value.encode()


# --- golden bytes ----------------------------------------------------------------------------

SUBSCRIPTION = Subscription(
    topics=["orders", "audit"],
    user_data=b"\x01\x02",
    owned_partitions=[TP("orders", 0), TP("orders", 2), TP("audit", 1)],
    generation_id=7,
    rack_id="rack-a",
)

SUBSCRIPTION_V3 = b"".join(
    [
        int16(3),
        int32(2) + string("orders") + string("audit"),
        int32(2) + b"\x01\x02",
        int32(2),
        string("orders") + int32(2) + int32(0) + int32(2),
        string("audit") + int32(1) + int32(1),
        int32(7),
        string("rack-a"),
    ]
)


def test_subscription_v3_golden_bytes() -> None:
    assert encode_subscription(SUBSCRIPTION) == SUBSCRIPTION_V3
    assert decode_subscription(SUBSCRIPTION_V3) == SUBSCRIPTION


def test_lower_versions_drop_the_fields_they_cannot_hold() -> None:
    v0 = int16(0) + int32(2) + string("orders") + string("audit") + int32(2) + b"\x01\x02"
    assert encode_subscription(SUBSCRIPTION, version=0) == v0
    assert decode_subscription(v0) == Subscription(["orders", "audit"], b"\x01\x02")
    v1 = encode_subscription(SUBSCRIPTION, version=1)
    assert v1[:2] == int16(1)
    assert decode_subscription(v1) == Subscription(
        ["orders", "audit"], b"\x01\x02", SUBSCRIPTION.owned_partitions
    )
    v2 = encode_subscription(SUBSCRIPTION, version=2)
    assert v2 == int16(2) + SUBSCRIPTION_V3[2 : -len(string("rack-a"))]
    assert decode_subscription(v2).generation_id == 7
    assert decode_subscription(v2).rack_id is None


def test_null_user_data_and_rack() -> None:
    data = encode_subscription(Subscription(["t"]))
    assert data == int16(3) + int32(1) + string("t") + int32(-1) + int32(0) + int32(-1) + int16(-1)
    assert decode_subscription(data) == Subscription(["t"])


def test_assignment_golden_bytes_all_versions() -> None:
    assignment = Assignment([TP("b", 3), TP("a", 0), TP("b", 1)], user_data=b"u")
    body = (
        int32(2)
        + string("b")
        + int32(2)
        + int32(3)
        + int32(1)
        + string("a")
        + int32(1)
        + int32(0)
        + int32(1)
        + b"u"
    )
    for version in range(LATEST_ASSIGNMENT_VERSION + 1):
        data = encode_assignment(assignment, version=version)
        assert data == int16(version) + body
        assert decode_version(data) == version
        # Grouped by topic in order of first appearance.
        assert decode_assignment(data) == Assignment([TP("b", 3), TP("b", 1), TP("a", 0)], b"u")


def test_empty_assignment_bytes_are_an_empty_assignment() -> None:
    # The coordinator sends empty bytes to a member the leader's assignment left out.
    assert decode_assignment(b"") == Assignment([])
    assert decode_assignment(encode_assignment(Assignment([]))) == Assignment([])


def test_newer_versions_are_read_with_the_newest_known_layout() -> None:
    future = int16(9) + SUBSCRIPTION_V3[2:] + b"fields from a later version"
    assert decode_version(future) == 9
    assert decode_subscription(future) == SUBSCRIPTION
    assignment = int16(5) + encode_assignment(Assignment([TP("t", 0)]))[2:] + b"\x00\x00"
    assert decode_assignment(assignment) == Assignment([TP("t", 0)])


def test_sticky_user_data_golden_bytes() -> None:
    data = encode_sticky_user_data([TP("t", 0), TP("t", 2)], 4)
    assert data == int32(1) + string("t") + int32(2) + int32(0) + int32(2) + int32(4)
    assert decode_sticky_user_data(data) == ([TP("t", 0), TP("t", 2)], 4)
    # v0 has no generation.
    assert decode_sticky_user_data(data[:-4]) == ([TP("t", 0), TP("t", 2)], -1)
    for unusable in (None, b"", b"\x00\x00\x00", b"\x00\x00\x00\x05garbage"):
        assert decode_sticky_user_data(unusable) is None


def test_cooperative_user_data() -> None:
    assert encode_cooperative_user_data(12) == int32(12)
    assert decode_cooperative_user_data(int32(12)) == 12
    assert decode_cooperative_user_data(None) is None
    assert decode_cooperative_user_data(b"\x00") is None


# --- malformed input -------------------------------------------------------------------------


def test_every_truncation_of_a_subscription_is_refused() -> None:
    for end in range(len(SUBSCRIPTION_V3)):
        with pytest.raises(ProtocolError, match="malformed consumer protocol subscription"):
            decode_subscription(SUBSCRIPTION_V3[:end])


def test_every_truncation_of_an_assignment_is_refused() -> None:
    data = encode_assignment(Assignment([TP("t", 0), TP("u", 1)], b"xyz"))
    for end in range(1, len(data)):
        with pytest.raises(ProtocolError, match="malformed consumer protocol assignment"):
            decode_assignment(data[:end])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (int16(-1) + int32(0) + int32(-1), "unsupported version -1"),
        (int16(0) + int32(-1) + int32(-1), "topics is null"),
        (int16(0) + int32(1) + int16(-1) + int32(-1), "topic name is null"),
        (int16(0) + int32(1) + int16(2) + b"\xff\xfe" + int32(-1), "not UTF-8"),
        (int16(1) + int32(0) + int32(-1) + int32(1) + string("t") + int32(-2), "partitions"),
        (int16(0) + int32(1_000_000), "needs 2 bytes"),
    ],
)
def test_malformed_subscriptions(data: bytes, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        decode_subscription(data)


def decode_everything(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(ProtocolError):
            decode(data)
    decode_sticky_user_data(data)
    decode_cooperative_user_data(data)


@given(st.binary(max_size=64))
def test_random_bytes_raise_protocol_error_or_decode(data: bytes) -> None:
    decode_everything(data)


@given(st.integers(0, len(SUBSCRIPTION_V3) - 1), st.integers(0, 255), st.integers(0, 8))
def test_corrupted_bytes_raise_protocol_error_or_decode(index: int, value: int, cut: int) -> None:
    data = bytearray(SUBSCRIPTION_V3)
    data[index] = value
    decode_everything(bytes(data[: len(data) - cut]))


@pytest.mark.parametrize(
    ("subscription", "version", "message"),
    [
        (Subscription(["t"]), 4, "version 4 is not in 0..3"),
        (Subscription(["t"]), -1, "version -1"),
        (Subscription(["x" * 40_000]), 0, "at most 32767"),
        (Subscription(["t"], owned_partitions=[TP("t", 2**31)]), 1, "partition 2147483648"),
        (Subscription(["t"], generation_id=2**31), 2, "generation id"),
    ],
)
def test_values_that_do_not_fit_are_refused(
    subscription: Subscription, version: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        encode_subscription(subscription, version)


def test_decoding_accepts_any_buffer() -> None:
    for buffer in (bytearray(SUBSCRIPTION_V3), memoryview(SUBSCRIPTION_V3)):
        assert decode_subscription(buffer) == SUBSCRIPTION


# --- hypothesis: round trips and kafka-python as the reference --------------------------------

topic_names = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12
)
int32s = st.integers(-(2**31), 2**31 - 1)
partition_numbers = st.integers(0, 2**31 - 1)


@st.composite
def grouped_partitions(draw: st.DrawFn) -> list[TopicPartition]:
    """Partitions grouped by topic, topics distinct: the order the wire form keeps."""
    topics = draw(st.lists(topic_names, unique=True, max_size=4))
    return [
        TP(topic, number)
        for topic in topics
        for number in draw(st.lists(partition_numbers, min_size=1, max_size=4))
    ]


subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_names, max_size=5),
    user_data=st.none() | st.binary(max_size=16),
    owned_partitions=grouped_partitions(),
    generation_id=int32s,
    rack_id=st.none() | topic_names,
)
assignments = st.builds(
    Assignment, partitions=grouped_partitions(), user_data=st.none() | st.binary(max_size=16)
)


def as_seen_at(subscription: Subscription, version: int) -> Subscription:
    return Subscription(
        subscription.topics,
        subscription.user_data,
        subscription.owned_partitions if version >= 1 else (),
        subscription.generation_id if version >= 2 else -1,
        subscription.rack_id if version >= 3 else None,
    )


def by_topic(partitions: list[TopicPartition], cls: Any) -> list[Any]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [cls(topic=topic, partitions=numbers) for topic, numbers in grouped.items()]


def flatten(groups: list[Any]) -> list[TopicPartition]:
    return [TP(group.topic, number) for group in groups for number in group.partitions]


@given(subscriptions, st.integers(0, LATEST_SUBSCRIPTION_VERSION))
def test_subscription_round_trip(subscription: Subscription, version: int) -> None:
    data = encode_subscription(subscription, version)
    assert decode_version(data) == version
    assert decode_subscription(data) == as_seen_at(subscription, version)


@given(assignments, st.integers(0, LATEST_ASSIGNMENT_VERSION))
def test_assignment_round_trip(assignment: Assignment, version: int) -> None:
    assert decode_assignment(encode_assignment(assignment, version)) == assignment


@given(subscriptions, st.integers(0, LATEST_SUBSCRIPTION_VERSION))
def test_subscription_bytes_match_kafka_python(subscription: Subscription, version: int) -> None:
    reference = KpSubscription(
        topics=list(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=by_topic(
            list(subscription.owned_partitions), KpSubscription.TopicPartition
        ),
        generation_id=subscription.generation_id,
        rack_id=subscription.rack_id,
        version=version,
    )
    ours = encode_subscription(subscription, version)
    assert ours == reference.encode(version=version)
    decoded = KpSubscription.decode(ours)
    assert decoded.version == version
    assert decoded.topics == list(subscription.topics)
    assert decoded.user_data == subscription.user_data
    if version >= 1:
        assert flatten(decoded.owned_partitions) == list(subscription.owned_partitions)
    if version >= 2:
        assert decoded.generation_id == subscription.generation_id
    if version >= 3:
        assert decoded.rack_id == subscription.rack_id


@given(assignments, st.integers(0, LATEST_ASSIGNMENT_VERSION))
def test_assignment_bytes_match_kafka_python(assignment: Assignment, version: int) -> None:
    reference = KpAssignment(
        assigned_partitions=by_topic(assignment.partitions, KpAssignment.TopicPartition),
        user_data=assignment.user_data,
        version=version,
    )
    ours = encode_assignment(assignment, version)
    assert ours == reference.encode(version=version)
    decoded = KpAssignment.decode(ours)
    assert flatten(decoded.assigned_partitions) == assignment.partitions
    assert decoded.user_data == assignment.user_data


@given(grouped_partitions(), int32s)
def test_sticky_user_data_matches_kafka_python(
    partitions: list[TopicPartition], generation_id: int
) -> None:
    ours = encode_sticky_user_data(partitions, generation_id)
    previous = by_topic(partitions, StickyAssignorUserData.TopicPartition)
    v1 = StickyAssignorUserData(previous_assignment=previous, generation=generation_id, version=1)
    assert ours == v1.encode(header=False)
    assert decode_sticky_user_data(ours) == (partitions, generation_id)
    v0 = StickyAssignorUserData(previous_assignment=previous, version=0)
    assert decode_sticky_user_data(v0.encode(header=False)) == (partitions, -1)

"""``__consumer_offsets`` records: golden bytes from the schema, round trips, bad input, and the
partition of a group (hash values computed with Java's ``String.hashCode`` on a JVM)."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.broker.group.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_record,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
    java_string_hashcode,
    kafka_abs,
    partition_for_group,
)
from odradek.errors import CoordinatorRecordError

# --- golden bytes, written out field by field from the schema -------------------------------


def test_offset_commit_key_golden() -> None:
    expected = (
        b"\x00\x01"  # version 1
        b"\x00\x02gg"  # group "gg"
        b"\x00\x03top"  # topic "top"
        b"\x00\x00\x00\x07"  # partition 7
    )
    assert encode_key(OffsetCommitKey("gg", "top", 7)) == expected
    assert decode_key(expected) == OffsetCommitKey("gg", "top", 7)


def test_offset_commit_key_version_0_reads_the_same() -> None:
    assert decode_key(b"\x00\x00\x00\x01g\x00\x01t\xff\xff\xff\xff") == OffsetCommitKey(
        "g", "t", -1
    )


def test_group_metadata_key_golden() -> None:
    expected = b"\x00\x02\x00\x05group"
    assert encode_key(GroupMetadataKey("group")) == expected
    assert decode_key(expected) == GroupMetadataKey("group")


def test_offset_commit_value_v3_golden() -> None:
    value = OffsetCommitValue(
        offset=0x0102030405060708, leader_epoch=5, metadata="md", commit_timestamp_ms=1000
    )
    expected = (
        b"\x00\x03"  # version 3
        b"\x01\x02\x03\x04\x05\x06\x07\x08"  # offset
        b"\x00\x00\x00\x05"  # leader epoch
        b"\x00\x02md"  # metadata
        b"\x00\x00\x00\x00\x00\x00\x03\xe8"  # commit timestamp 1000
    )
    assert encode_offset_commit_value(value) == expected
    assert decode_offset_commit_value(expected) == value


def test_offset_commit_value_v1_golden_carries_the_expire_timestamp() -> None:
    value = OffsetCommitValue(
        offset=42, metadata="", commit_timestamp_ms=1, expire_timestamp_ms=86_400_001
    )
    expected = (
        b"\x00\x01"  # version 1
        b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # offset 42
        b"\x00\x00"  # metadata ""
        b"\x00\x00\x00\x00\x00\x00\x00\x01"  # commit timestamp
        b"\x00\x00\x00\x00\x05\x26\x5c\x01"  # expire timestamp 86400001
    )
    assert encode_offset_commit_value(value) == expected
    assert decode_offset_commit_value(expected) == value


@pytest.mark.parametrize("version", [0, 2])
def test_offset_commit_value_v0_and_v2_read(version: int) -> None:
    data = struct.pack(">hqh2sq", version, 9, 2, b"ab", 77)
    assert decode_offset_commit_value(data) == OffsetCommitValue(
        offset=9, metadata="ab", commit_timestamp_ms=77
    )


def _member(**changes: object) -> MemberMetadata:
    fields: dict[str, object] = {
        "member_id": "m",
        "group_instance_id": "i",
        "client_id": "c",
        "client_host": "/h",
        "rebalance_timeout_ms": 300,
        "session_timeout_ms": 100,
        "subscription": b"\x01",
        "assignment": b"\x02\x03",
    }
    fields.update(changes)
    return MemberMetadata(**fields)  # type: ignore[arg-type]


def test_group_metadata_value_v3_golden() -> None:
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=3,
        protocol="range",
        leader="m",
        current_state_timestamp_ms=0x10,
        members=(_member(),),
    )
    expected = (
        b"\x00\x03"  # version 3
        b"\x00\x08consumer"  # protocol type
        b"\x00\x00\x00\x03"  # generation
        b"\x00\x05range"  # protocol
        b"\x00\x01m"  # leader
        b"\x00\x00\x00\x00\x00\x00\x00\x10"  # current state timestamp
        b"\x00\x00\x00\x01"  # one member
        b"\x00\x01m"  # member id
        b"\x00\x01i"  # group instance id
        b"\x00\x01c"  # client id
        b"\x00\x02/h"  # client host
        b"\x00\x00\x01\x2c"  # rebalance timeout 300
        b"\x00\x00\x00\x64"  # session timeout 100
        b"\x00\x00\x00\x01\x01"  # subscription
        b"\x00\x00\x00\x02\x02\x03"  # assignment
    )
    assert encode_group_metadata_value(value) == expected
    assert decode_group_metadata_value(expected) == value


def test_group_metadata_value_of_an_empty_group_has_null_protocol_and_leader() -> None:
    value = GroupMetadataValue("consumer", 4, None, None, 5, ())
    expected = (
        b"\x00\x03\x00\x08consumer\x00\x00\x00\x04"
        b"\xff\xff"  # protocol null
        b"\xff\xff"  # leader null
        b"\x00\x00\x00\x00\x00\x00\x00\x05"
        b"\x00\x00\x00\x00"  # no members
    )
    assert encode_group_metadata_value(value) == expected
    assert decode_group_metadata_value(expected) == value


def test_group_metadata_value_v0_defaults_rebalance_timeout_and_timestamp() -> None:
    data = (
        b"\x00\x00\x00\x01p\x00\x00\x00\x01\x00\x01r\x00\x01m"
        b"\x00\x00\x00\x01"
        b"\x00\x01m\x00\x01c\x00\x01h"
        b"\x00\x00\x00\x0a"  # session timeout 10, no rebalance timeout in v0
        b"\x00\x00\x00\x00\x00\x00\x00\x00"
    )
    value = decode_group_metadata_value(data)
    assert value.current_state_timestamp_ms == -1
    assert value.members == (
        _member(
            group_instance_id=None,
            client_host="h",
            rebalance_timeout_ms=10,
            session_timeout_ms=10,
            subscription=b"",
            assignment=b"",
        ),
    )


@pytest.mark.parametrize("version", [1, 2])
def test_group_metadata_value_v1_v2_layouts(version: int) -> None:
    value = GroupMetadataValue(
        "consumer", 1, "range", "m", 7 if version == 2 else -1, (_member(group_instance_id=None),)
    )
    data = encode_group_metadata_value(value, version)
    assert decode_group_metadata_value(data) == value
    # v1 and v2 have no instance id; v2 adds 8 bytes of timestamp
    v3 = encode_group_metadata_value(value)
    assert len(v3) - len(data) == 2 + (8 if version == 1 else 0)


def test_tombstones_and_record_encoding() -> None:
    record = CoordinatorRecord.tombstone(GroupMetadataKey("g"))
    assert record.encode() == (b"\x00\x02\x00\x01g", None)
    assert decode_record(*record.encode()) == record
    offset = CoordinatorRecord(OffsetCommitKey("g", "t", 0), OffsetCommitValue(5))
    assert decode_record(*offset.encode()) == offset


def test_unknown_key_versions_are_not_ours() -> None:
    assert decode_key(b"\x00\x03\x00\x01g") is None  # a KIP-848 record
    assert decode_record(b"\x00\x05anything", b"x") is None


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (decode_key, b""),
        (decode_key, b"\x00"),
        (decode_key, b"\xff\xff"),  # negative version
        (decode_key, b"\x00\x02\x00\x05gro"),  # truncated string
        (decode_key, b"\x00\x02\x00\x01gX"),  # trailing byte
        (decode_key, b"\x00\x02\xff\xff"),  # null where a string is required
        (decode_key, b"\x00\x02\xff\xfe"),  # negative length
        (decode_key, b"\x00\x02\x00\x01\xff"),  # invalid UTF-8
        (decode_offset_commit_value, b"\x00\x04" + bytes(30)),  # flexible v4 is not read
        (decode_offset_commit_value, b"\x00\x03\x00"),
        (decode_group_metadata_value, b"\x00\x09"),
        (
            decode_group_metadata_value,
            b"\x00\x03\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff" + bytes(8) + b"\xff\xff\xff\xff",
        ),  # negative member count
        (
            decode_group_metadata_value,
            encode_group_metadata_value(GroupMetadataValue("c", 1, "r", "m", 0, (_member(),)))[:-1],
        ),
    ],
)
def test_malformed_records_raise(decode: object, data: bytes) -> None:
    with pytest.raises(CoordinatorRecordError):
        decode(data)  # type: ignore[operator]


def test_encoder_refuses_inconsistent_versions() -> None:
    with pytest.raises(ValueError, match="expire"):
        encode_offset_commit_value(OffsetCommitValue(1), version=1)
    with pytest.raises(ValueError, match="leader epoch"):
        encode_offset_commit_value(OffsetCommitValue(1, leader_epoch=3), version=2)
    with pytest.raises(ValueError, match="version 4"):
        encode_group_metadata_value(GroupMetadataValue("c", 1, None, None, -1, ()), 4)
    with pytest.raises(ValueError, match="32767"):
        encode_key(GroupMetadataKey("x" * 40_000))


# --- round trips ------------------------------------------------------------------------------

_text = st.text(max_size=20)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)
_blob = st.binary(max_size=40)

_members = st.builds(
    MemberMetadata,
    member_id=_text,
    group_instance_id=st.none() | _text,
    client_id=_text,
    client_host=_text,
    rebalance_timeout_ms=_int32,
    session_timeout_ms=_int32,
    subscription=_blob,
    assignment=_blob,
)
_group_values = st.builds(
    GroupMetadataValue,
    protocol_type=_text,
    generation=_int32,
    protocol=st.none() | _text,
    leader=st.none() | _text,
    current_state_timestamp_ms=_int64,
    members=st.lists(_members, max_size=4).map(tuple),
)


@given(_text, _text, _int32)
def test_offset_commit_key_round_trip(group: str, topic: str, partition: int) -> None:
    key = OffsetCommitKey(group, topic, partition)
    assert decode_key(encode_key(key)) == key


@given(_text)
def test_group_metadata_key_round_trip(group: str) -> None:
    assert decode_key(encode_key(GroupMetadataKey(group))) == GroupMetadataKey(group)


@given(_int64, _int32, _text, _int64)
def test_offset_commit_value_v3_round_trip(
    offset: int, epoch: int, metadata: str, timestamp: int
) -> None:
    value = OffsetCommitValue(offset, epoch, metadata, timestamp)
    assert decode_offset_commit_value(encode_offset_commit_value(value)) == value


@given(_int64, _text, _int64, _int64.filter(lambda expire: expire != -1))
def test_offset_commit_value_v1_round_trip(
    offset: int, metadata: str, timestamp: int, expire: int
) -> None:
    value = OffsetCommitValue(offset, -1, metadata, timestamp, expire)
    assert decode_offset_commit_value(encode_offset_commit_value(value)) == value


@given(_group_values)
def test_group_metadata_value_round_trip(value: GroupMetadataValue) -> None:
    assert decode_group_metadata_value(encode_group_metadata_value(value)) == value


@given(st.binary(max_size=64))
def test_decoders_never_raise_anything_but_record_errors(data: bytes) -> None:
    for decode in (decode_key, decode_offset_commit_value, decode_group_metadata_value):
        with contextlib.suppress(CoordinatorRecordError):
            decode(data)


# --- the partition of a group -----------------------------------------------------------------

#: (string, String.hashCode() on a JVM, partition of 50 with Kafka's Utils.abs)
_JAVA_HASHES = [
    ("", 0, 0),
    ("a", 97, 47),
    ("foo", 101574, 24),
    ("hello", 99162322, 22),
    ("Hello World", -862545276, 26),
    ("polygenelubricants", -(2**31), 0),  # Utils.abs(MIN_VALUE) == 0
    ("my-group", -1906497762, 12),
    ("console-consumer-12345", 158455506, 6),
    ("été", 227742, 42),
    ("😀", 1772899, 49),  # two UTF-16 code units: 0xD83D * 31 + 0xDE00
    ("groupe-ü😀", 1287830232, 32),
    ("test-group", 627841412, 12),
]


@pytest.mark.parametrize(("text", "hashcode", "partition"), _JAVA_HASHES)
def test_partition_for_group_matches_java(text: str, hashcode: int, partition: int) -> None:
    assert java_string_hashcode(text) == hashcode
    assert partition_for_group(text, 50) == partition


def test_kafka_abs_is_not_a_mask() -> None:
    # Utils.abs negates; the producer's toPositive (& 0x7fffffff) would put "my-group" in 36.
    assert kafka_abs(-1906497762) == 1906497762
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(5) == 5
    assert (-1906497762 & 0x7FFFFFFF) % 50 == 36


def test_partition_for_group_needs_partitions() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        partition_for_group("g", 0)
    assert partition_for_group("anything", 1) == 0

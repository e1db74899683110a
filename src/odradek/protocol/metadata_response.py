"""Hand-written encoders for the Metadata and ListOffsets responses (the non-flexible versions):
``struct`` packing instead of building kio objects and running kio's generic writer.

Every client sends Metadata on each new connection and whenever a partition moves, and
ListOffsets whenever a consumer starts without a committed offset; through kio a Metadata
answer for one 8-partition topic cost ~90 µs of the event loop and a ListOffsets answer ~45 µs,
~10x a Produce request (``bench/many_clients.py``). This module owns the bytes of Metadata
responses v0-v13 and ListOffsets responses v1-v5 (v0's old-style offsets are not served). The
rule it keeps: for every input, the output equals kio's encoding of the same response, byte
for byte (tests/protocol/test_metadata_response.py checks it with hypothesis).

Metadata response body, by version (Kafka's ``MetadataResponse.json``)::

    throttle_time_ms: int32                      # v3+
    brokers: array of
        node_id: int32
        host: string
        port: int32
        rack: nullable string                    # v1+
    cluster_id: nullable string                  # v2+
    controller_id: int32                         # v1+
    topics: array of
        error_code: int16
        name: string                             # nullable from v12 (topics asked by id)
        topic_id: uuid (16 bytes)                # v10+
        is_internal: bool                        # v1+
        partitions: array of
            error_code: int16
            partition_index: int32
            leader_id: int32
            leader_epoch: int32                  # v7+
            replica_nodes: array of int32
            isr_nodes: array of int32
            offline_replicas: array of int32     # v5+
        topic_authorized_operations: int32       # v8+
    cluster_authorized_operations: int32         # v8-v10
    error_code: int16                            # v13+

From v9 the encoding is flexible (KIP-482): the response header carries an empty tagged-field
section after the correlation id; strings and arrays are compact (uvarint length + 1, 0 for
null) and every struct — each broker, topic and partition and the body — ends with an empty
tagged-field section (one zero byte).

ListOffsets response body (``ListOffsetsResponse.json``)::

    throttle_time_ms: int32                      # v2+
    topics: array of
        name: string
        partitions: array of
            partition_index: int32
            error_code: int16
            timestamp: int64
            offset: int64
            leader_epoch: int32                  # v4+

Both frames are ``size: int32`` + response header v0 (correlation id) + body.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Final, NamedTuple

from odradek.protocol.api_keys import VersionRange
from odradek.protocol.wire import (
    compact_nullable_string,
    compact_string,
    nullable_string,
    string,
    uvarint,
)

#: The versions ``encode_metadata_response`` writes (v9 is the first flexible one).
METADATA_RESPONSE_VERSIONS: Final = VersionRange(0, 13)
#: The first flexible Metadata version.
METADATA_FLEXIBLE_VERSION: Final = 9
#: The versions ``encode_list_offsets_response`` writes (v6 is the first flexible one).
LIST_OFFSETS_RESPONSE_VERSIONS: Final = VersionRange(1, 5)
#: Kafka's "authorized operations were not requested" (``Integer.MIN_VALUE``).
AUTHORIZED_OPERATIONS_OMITTED: Final = -(2**31)

_INT32 = struct.Struct(">i")
_HEADER_V0 = struct.Struct(">ii")  # size, correlation_id
_HEADER_V1 = struct.Struct(">iib")  # size, correlation_id, empty tagged fields
_ZERO_UUID = bytes(16)
_NO_TAGS = b"\x00"
_PARTITION_HEAD = struct.Struct(">hii")  # error_code, partition_index, leader_id
_PARTITION_HEAD_V7 = struct.Struct(">hiii")  # + leader_epoch
_OFFSETS_PARTITION_V1 = struct.Struct(">ihqq")
_OFFSETS_PARTITION_V4 = struct.Struct(">ihqqi")


class MetadataBroker(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None = None


class MetadataPartition(NamedTuple):
    """One partition's leader and replicas (field order is wire order)."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int = -1
    replica_nodes: Sequence[int] = ()
    isr_nodes: Sequence[int] = ()
    offline_replicas: Sequence[int] = ()


class MetadataTopic(NamedTuple):
    """One topic (field order is wire order but for ``topic_id``, which v10+ writes after
    the name). ``name`` is ``None`` only for a topic asked by an unknown id (v12+);
    ``topic_id`` ``None`` writes the zero UUID."""

    error_code: int
    name: str | None
    is_internal: bool = False
    partitions: Sequence[MetadataPartition] = ()
    topic_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED
    topic_id: uuid.UUID | None = None


class ListOffsetsPartition(NamedTuple):
    """One partition's answer (field order is wire order)."""

    partition_index: int
    error_code: int
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


class ListOffsetsTopic(NamedTuple):
    name: str
    partitions: Sequence[ListOffsetsPartition]


def _check(name: str, versions: VersionRange, api_version: int) -> None:
    if api_version not in versions:
        raise ValueError(f"{name} response v{api_version} is not encoded here ({versions})")


def _int32_array(values: Sequence[int]) -> bytes:
    return struct.pack(f">i{len(values)}i", len(values), *values)


def _compact_int32_array(values: Sequence[int]) -> bytes:
    return uvarint(len(values) + 1) + struct.pack(f">{len(values)}i", *values)


def encode_metadata_response(
    api_version: int,
    correlation_id: int,
    brokers: Sequence[MetadataBroker],
    cluster_id: str | None,
    controller_id: int,
    topics: Sequence[MetadataTopic],
    throttle_time_ms: int = 0,
    error_code: int = 0,
) -> bytes:
    """Returns a whole Metadata response frame: size prefix, response header and body.

    Fields a version lacks are dropped (``error_code`` is v13's top-level one).

    Raises:
        ValueError: ``api_version`` is outside ``METADATA_RESPONSE_VERSIONS``, or a topic
            without a name below v12.
        struct.error: a number does not fit its field.
    """
    _check("Metadata", METADATA_RESPONSE_VERSIONS, api_version)
    if api_version >= METADATA_FLEXIBLE_VERSION:
        return _encode_flexible_metadata(
            api_version,
            correlation_id,
            brokers,
            cluster_id,
            controller_id,
            topics,
            throttle_time_ms,
            error_code,
        )
    parts: list[bytes] = [b""]
    append = parts.append
    if api_version >= 3:
        append(_INT32.pack(throttle_time_ms))
    append(_INT32.pack(len(brokers)))
    for node_id, host, port, rack in brokers:
        append(_INT32.pack(node_id) + string(host) + _INT32.pack(port))
        if api_version >= 1:
            append(nullable_string(rack))
    if api_version >= 2:
        append(nullable_string(cluster_id))
    if api_version >= 1:
        append(_INT32.pack(controller_id))
    append(_INT32.pack(len(topics)))
    for topic_error, name, is_internal, partitions, topic_operations, _ in topics:
        if name is None:
            raise ValueError(f"Metadata v{api_version} cannot answer a topic without a name")
        append(struct.pack(">h", topic_error) + string(name))
        if api_version >= 1:
            append(b"\x01" if is_internal else b"\x00")
        append(_INT32.pack(len(partitions)))
        for error, index, leader, epoch, replicas, isr, offline in partitions:
            if api_version >= 7:
                append(_PARTITION_HEAD_V7.pack(error, index, leader, epoch))
            else:
                append(_PARTITION_HEAD.pack(error, index, leader))
            append(_int32_array(replicas))
            append(_int32_array(isr))
            if api_version >= 5:
                append(_int32_array(offline))
        if api_version >= 8:
            append(_INT32.pack(topic_operations))
    if api_version >= 8:
        append(_INT32.pack(AUTHORIZED_OPERATIONS_OMITTED))
    parts[0] = _HEADER_V0.pack(sum(map(len, parts)) + 4, correlation_id)
    return b"".join(parts)


def _encode_flexible_metadata(
    api_version: int,
    correlation_id: int,
    brokers: Sequence[MetadataBroker],
    cluster_id: str | None,
    controller_id: int,
    topics: Sequence[MetadataTopic],
    throttle_time_ms: int,
    error_code: int,
) -> bytes:
    """Metadata v9+ (see the module docstring)."""
    parts: list[bytes] = [b"", _INT32.pack(throttle_time_ms), uvarint(len(brokers) + 1)]
    append = parts.append
    for node_id, host, port, rack in brokers:
        append(
            _INT32.pack(node_id)
            + compact_string(host)
            + _INT32.pack(port)
            + compact_nullable_string(rack)
            + _NO_TAGS
        )
    append(compact_nullable_string(cluster_id) + _INT32.pack(controller_id))
    append(uvarint(len(topics) + 1))
    with_ids = api_version >= 10
    for topic_error, name, is_internal, partitions, topic_operations, topic_id in topics:
        if name is None and api_version < 12:
            raise ValueError(f"Metadata v{api_version} cannot answer a topic without a name")
        append(struct.pack(">h", topic_error) + compact_nullable_string(name))
        if with_ids:
            append(_ZERO_UUID if topic_id is None else topic_id.bytes)
        append(b"\x01" if is_internal else b"\x00")
        append(uvarint(len(partitions) + 1))
        for error, index, leader, epoch, replicas, isr, offline in partitions:
            append(
                _PARTITION_HEAD_V7.pack(error, index, leader, epoch)
                + _compact_int32_array(replicas)
                + _compact_int32_array(isr)
                + _compact_int32_array(offline)
                + _NO_TAGS
            )
        append(_INT32.pack(topic_operations) + _NO_TAGS)
    if api_version <= 10:
        append(_INT32.pack(AUTHORIZED_OPERATIONS_OMITTED))
    if api_version >= 13:
        append(struct.pack(">h", error_code))
    append(_NO_TAGS)
    parts[0] = _HEADER_V1.pack(sum(map(len, parts)) + 5, correlation_id, 0)
    return b"".join(parts)


def encode_list_offsets_response(
    api_version: int,
    correlation_id: int,
    topics: Sequence[ListOffsetsTopic],
    throttle_time_ms: int = 0,
) -> bytes:
    """Returns a whole ListOffsets response frame: size prefix, response header and body.

    Raises:
        ValueError: ``api_version`` is outside ``LIST_OFFSETS_RESPONSE_VERSIONS``.
        struct.error: a number does not fit its field.
    """
    _check("ListOffsets", LIST_OFFSETS_RESPONSE_VERSIONS, api_version)
    parts: list[bytes] = [b""]
    append = parts.append
    if api_version >= 2:
        append(_INT32.pack(throttle_time_ms))
    append(_INT32.pack(len(topics)))
    for name, partitions in topics:
        append(string(name) + _INT32.pack(len(partitions)))
        for index, error_code, timestamp, offset, leader_epoch in partitions:
            if api_version >= 4:
                append(
                    _OFFSETS_PARTITION_V4.pack(index, error_code, timestamp, offset, leader_epoch)
                )
            else:
                append(_OFFSETS_PARTITION_V1.pack(index, error_code, timestamp, offset))
    parts[0] = _HEADER_V0.pack(sum(map(len, parts)) + 4, correlation_id)
    return b"".join(parts)

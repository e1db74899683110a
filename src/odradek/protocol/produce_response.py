"""The hot-path Produce response encoder: ``struct`` packing instead of kio's generic writer.

This module owns the bytes of Produce responses v0-v13 (v9 is the first flexible version). The
rule it keeps: for every input, the output equals kio's encoding of the same response, byte
for byte (tests/protocol/test_produce_response.py checks it with hypothesis); kio has no
schema for v0-v2 (Kafka 4 dropped them), which are checked against golden bytes.

Produce response body, by version (Kafka's ``ProduceResponse.json``)::

    responses: array of                          # compact array in v9+
        name: string                             # compact string in v9-v12
        topic_id: uuid                           # v13+ (KIP-516), instead of the name
        partition_responses: array of            # compact array in v9+
            index: int32
            error_code: int16
            base_offset: int64
            log_append_time_ms: int64            # v2+; -1 unless the topic uses LogAppendTime
            log_start_offset: int64              # v5+
            record_errors: array of              # v8+ (KIP-467)
                batch_index: int32
                batch_index_error_message: nullable string
                (tagged fields)                  # v9+
            error_message: nullable string       # v8+
            (tagged fields)                      # v9+; v10+ tag 0: current_leader
                                                 #   (leader_id: int32, leader_epoch: int32,
                                                 #   tagged fields), KIP-951, written only when
                                                 #   it is not (-1, -1)
        (tagged fields)                          # v9+
    throttle_time_ms: int32                      # v1+
    (tagged fields)                              # v9+; v10+ tag 0: node_endpoints, a compact
                                                 #   array of (node_id: int32, host: compact
                                                 #   string, port: int32, rack: compact nullable
                                                 #   string, tagged fields), written when not
                                                 #   empty (KIP-951)

The frame is ``size: int32`` + response header (v0: correlation id; v1 in v9+: + tagged
fields) + body.
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Sequence
from typing import Final, NamedTuple

from odradek.protocol.api_keys import VersionRange
from odradek.protocol.wire import (
    NO_TAGGED_FIELDS,
    compact_array_length,
    compact_nullable_string,
    compact_string,
    nullable_string,
    string,
    uvarint,
)

#: The Produce versions ``encode_produce_response`` writes.
PRODUCE_RESPONSE_VERSIONS: Final = VersionRange(0, 13)

_FIRST_FLEXIBLE: Final = 9
#: The first version with KIP-951's leader-discovery tagged fields.
_FIRST_LEADER_DISCOVERY: Final = 10
#: The first version naming topics by id (KIP-516, Kafka 4.1).
_FIRST_TOPIC_IDS: Final = 13
_ZERO_ID: Final = bytes(16)
_MIN_VERSION: Final = PRODUCE_RESPONSE_VERSIONS.min_version
_MAX_VERSION: Final = PRODUCE_RESPONSE_VERSIONS.max_version

_INT32 = struct.Struct(">i")
_HEADER_V0 = struct.Struct(">ii")  # size, correlation_id
_PARTITION_V0 = struct.Struct(">ihq")  # no log_append_time_ms before v2
_PARTITION_V3 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
# One tagged field (count 1, tag 0, size 9): current_leader = leader_id, leader_epoch, no tags.
_CURRENT_LEADER = struct.Struct(">bbbiib")
_NO_LEADER: Final = (-1, -1)


class BatchIndexAndErrorMessage(NamedTuple):
    """Why one record batch of a partition's records was rejected (v8+, KIP-467)."""

    batch_index: int
    batch_index_error_message: str | None = None


class PartitionProduceResponse(NamedTuple):
    """The result of appending to one partition.

    ``log_append_time_ms`` is -1 unless the topic uses LogAppendTime; ``log_start_offset`` is
    written from v5, ``record_errors`` and ``error_message`` from v8, and dropped before.
    (Inputs are NamedTuples, not frozen dataclasses: the broker builds them per partition per
    request, and a frozen dataclass costs more to build than the encoding does.)
    """

    partition_index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: tuple[BatchIndexAndErrorMessage, ...] = ()
    error_message: str | None = None
    #: ``(leader_id, leader_epoch)`` of the partition's leader when this broker is not it
    #: (v10+, KIP-951; written when not ``(-1, -1)``).
    current_leader: tuple[int, int] = _NO_LEADER


class NodeEndpoint(NamedTuple):
    """A broker a ``current_leader`` names, so the client need not ask Metadata (v10+)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class TopicProduceResponse(NamedTuple):
    """The per-partition results for one topic.

    Field order is wire order in all three input types: the encoder unpacks them. ``topic_id``
    is written instead of ``name`` from v13 (the zero UUID when None).
    """

    name: str
    partition_responses: Sequence[PartitionProduceResponse]
    topic_id: uuid.UUID | None = None


def encode_produce_response(
    api_version: int,
    correlation_id: int,
    responses: Sequence[TopicProduceResponse],
    throttle_time_ms: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> bytes:
    """Returns a whole Produce response frame: size prefix, response header and body.

    ``node_endpoints`` and each partition's ``current_leader`` are written from v10 and
    dropped before.

    Raises:
        ValueError: ``api_version`` is outside ``PRODUCE_RESPONSE_VERSIONS``.
        struct.error: a number does not fit its field.
    """
    if not _MIN_VERSION <= api_version <= _MAX_VERSION:
        raise ValueError(
            f"Produce response v{api_version} is not encoded here "
            f"(supported: {PRODUCE_RESPONSE_VERSIONS})"
        )
    if api_version >= _FIRST_FLEXIBLE:
        if api_version < _FIRST_LEADER_DISCOVERY:
            node_endpoints = ()
        return _encode_flexible(
            api_version >= _FIRST_LEADER_DISCOVERY,
            api_version >= _FIRST_TOPIC_IDS,
            correlation_id,
            responses,
            throttle_time_ms,
            node_endpoints,
        )
    with_log_start_offset = api_version >= 5
    if 3 <= api_version < 8 and len(responses) == 1 and len(responses[0][1]) == 1:
        return _encode_one_partition(
            with_log_start_offset, correlation_id, responses[0], throttle_time_ms
        )
    with_record_errors = api_version >= 8
    parts: list[bytes] = [b"", _INT32.pack(len(responses))]
    append = parts.append
    # Unpacking relies on the input types' field order, which is the wire order.
    for name, partitions, _topic_id in responses:
        append(string(name) + _INT32.pack(len(partitions)))
        for (
            index,
            error_code,
            base_offset,
            log_append_time_ms,
            log_start_offset,
            record_errors,
            error_message,
            _current_leader,
        ) in partitions:
            if with_log_start_offset:
                append(
                    _PARTITION_V5.pack(
                        index, error_code, base_offset, log_append_time_ms, log_start_offset
                    )
                )
            elif api_version >= 2:
                append(_PARTITION_V3.pack(index, error_code, base_offset, log_append_time_ms))
            else:
                append(_PARTITION_V0.pack(index, error_code, base_offset))
            if with_record_errors:
                append(_INT32.pack(len(record_errors)))
                for batch_index, message in record_errors:
                    append(_INT32.pack(batch_index) + nullable_string(message))
                append(nullable_string(error_message))
    if api_version >= 1:
        append(_INT32.pack(throttle_time_ms))
    parts[0] = _HEADER_V0.pack(sum(map(len, parts)) + 4, correlation_id)
    return b"".join(parts)


@functools.cache
def _one_partition_struct(name_bytes: int, with_log_start_offset: bool) -> struct.Struct:
    # size, correlation id, 1 topic, name, 1 partition, partition fields, throttle time.
    partition = "ihqqq" if with_log_start_offset else "ihqq"
    return struct.Struct(f">iiih{name_bytes}si{partition}i")


def _encode_one_partition(
    with_log_start_offset: bool,
    correlation_id: int,
    topic: TopicProduceResponse,
    throttle_time_ms: int,
) -> bytes:
    # The common response (one topic, one partition) in a single pack: 2x faster.
    name, (partition,), _topic_id = topic
    encoded = name.encode()
    layout = _one_partition_struct(len(encoded), with_log_start_offset)
    fields = partition[:5] if with_log_start_offset else partition[:4]
    return layout.pack(
        layout.size - 4, correlation_id, 1, len(encoded), encoded, 1, *fields, throttle_time_ms
    )


def _encode_flexible(
    leader_discovery: bool,
    by_topic_id: bool,
    correlation_id: int,
    responses: Sequence[TopicProduceResponse],
    throttle_time_ms: int,
    node_endpoints: Sequence[NodeEndpoint],
) -> bytes:
    # Response header v1: correlation id + empty tagged fields.
    parts: list[bytes] = [b"", NO_TAGGED_FIELDS, compact_array_length(len(responses))]
    append = parts.append
    for name, partitions, topic_id in responses:
        if by_topic_id:
            head = _ZERO_ID if topic_id is None else topic_id.bytes
        else:
            head = compact_string(name)
        append(head + compact_array_length(len(partitions)))
        for (
            index,
            error_code,
            base_offset,
            log_append_time_ms,
            log_start_offset,
            record_errors,
            error_message,
            current_leader,
        ) in partitions:
            append(
                _PARTITION_V5.pack(
                    index, error_code, base_offset, log_append_time_ms, log_start_offset
                )
            )
            append(compact_array_length(len(record_errors)))
            for batch_index, message in record_errors:
                append(
                    _INT32.pack(batch_index) + compact_nullable_string(message) + NO_TAGGED_FIELDS
                )
            append(compact_nullable_string(error_message))
            if leader_discovery and current_leader != _NO_LEADER:
                append(_CURRENT_LEADER.pack(1, 0, 9, *current_leader, 0))
            else:
                append(NO_TAGGED_FIELDS)
        append(NO_TAGGED_FIELDS)
    append(_INT32.pack(throttle_time_ms))
    if leader_discovery and node_endpoints:
        append(_node_endpoints_tag(node_endpoints))
    else:
        append(NO_TAGGED_FIELDS)
    parts[0] = _HEADER_V0.pack(sum(map(len, parts)) + 4, correlation_id)
    return b"".join(parts)


def _node_endpoints_tag(node_endpoints: Sequence[NodeEndpoint]) -> bytes:
    """The top-level tagged fields holding tag 0, ``node_endpoints``."""
    value = b"".join(
        [
            compact_array_length(len(node_endpoints)),
            *(
                _INT32.pack(node_id)
                + compact_string(host)
                + _INT32.pack(port)
                + compact_nullable_string(rack)
                + NO_TAGGED_FIELDS
                for node_id, host, port, rack in node_endpoints
            ),
        ]
    )
    return b"\x01\x00" + uvarint(len(value)) + value

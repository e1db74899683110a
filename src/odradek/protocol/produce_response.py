"""The hot-path Produce response encoder: ``struct`` packing instead of kio's generic writer.

This module owns the bytes of Produce responses v3-v9 (v9 is the first flexible version). The
rule it keeps: for every input, the output equals kio's encoding of the same response, byte
for byte (tests/protocol/test_produce_response.py checks it with hypothesis).

Produce response body, by version (Kafka's ``ProduceResponse.json``)::

    responses: array of                          # compact array in v9
        name: string                             # compact string in v9
        partition_responses: array of            # compact array in v9
            index: int32
            error_code: int16
            base_offset: int64
            log_append_time_ms: int64            # -1 unless the topic uses LogAppendTime
            log_start_offset: int64              # v5+
            record_errors: array of              # v8+ (KIP-467)
                batch_index: int32
                batch_index_error_message: nullable string
                (tagged fields)                  # v9
            error_message: nullable string       # v8+
            (tagged fields)                      # v9
        (tagged fields)                          # v9
    throttle_time_ms: int32
    (tagged fields)                              # v9

The frame is ``size: int32`` + response header (v0: correlation id; v1 in v9: + tagged
fields) + body.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final, NamedTuple

from odradek.protocol.api_keys import VersionRange
from odradek.protocol.wire import (
    NO_TAGGED_FIELDS,
    array_length,
    compact_array_length,
    compact_nullable_string,
    compact_string,
    nullable_string,
    string,
)

#: The Produce versions ``encode_produce_response`` writes.
PRODUCE_RESPONSE_VERSIONS: Final = VersionRange(3, 9)

_FIRST_FLEXIBLE: Final = 9

_INT32 = struct.Struct(">i")
_HEADER_V0 = struct.Struct(">ii")  # size, correlation_id
_PARTITION_V3 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")


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


class TopicProduceResponse(NamedTuple):
    """The per-partition results for one topic."""

    name: str
    partition_responses: Sequence[PartitionProduceResponse]


def encode_produce_response(
    api_version: int,
    correlation_id: int,
    responses: Sequence[TopicProduceResponse],
    throttle_time_ms: int = 0,
) -> bytes:
    """Returns a whole Produce response frame: size prefix, response header and body.

    Raises:
        ValueError: ``api_version`` is outside ``PRODUCE_RESPONSE_VERSIONS``.
        struct.error: a number does not fit its field.
    """
    if api_version not in PRODUCE_RESPONSE_VERSIONS:
        raise ValueError(
            f"Produce response v{api_version} is not encoded here "
            f"(supported: {PRODUCE_RESPONSE_VERSIONS})"
        )
    if api_version >= _FIRST_FLEXIBLE:
        return _encode_flexible(correlation_id, responses, throttle_time_ms)
    with_log_start_offset = api_version >= 5
    with_record_errors = api_version >= 8
    parts: list[bytes] = [b"", array_length(len(responses))]
    append = parts.append
    for topic in responses:
        append(string(topic.name))
        append(array_length(len(topic.partition_responses)))
        for p in topic.partition_responses:
            if with_log_start_offset:
                append(
                    _PARTITION_V5.pack(
                        p.partition_index,
                        p.error_code,
                        p.base_offset,
                        p.log_append_time_ms,
                        p.log_start_offset,
                    )
                )
            else:
                append(
                    _PARTITION_V3.pack(
                        p.partition_index, p.error_code, p.base_offset, p.log_append_time_ms
                    )
                )
            if with_record_errors:
                append(array_length(len(p.record_errors)))
                for record_error in p.record_errors:
                    append(_INT32.pack(record_error.batch_index))
                    append(nullable_string(record_error.batch_index_error_message))
                append(nullable_string(p.error_message))
    append(_INT32.pack(throttle_time_ms))
    body_size = sum(map(len, parts))
    parts[0] = _HEADER_V0.pack(body_size + 4, correlation_id)
    return b"".join(parts)


def _encode_flexible(
    correlation_id: int,
    responses: Sequence[TopicProduceResponse],
    throttle_time_ms: int,
) -> bytes:
    # Response header v1: correlation id + empty tagged fields.
    parts: list[bytes] = [b"", NO_TAGGED_FIELDS, compact_array_length(len(responses))]
    append = parts.append
    for topic in responses:
        append(compact_string(topic.name))
        append(compact_array_length(len(topic.partition_responses)))
        for p in topic.partition_responses:
            append(
                _PARTITION_V5.pack(
                    p.partition_index,
                    p.error_code,
                    p.base_offset,
                    p.log_append_time_ms,
                    p.log_start_offset,
                )
            )
            append(compact_array_length(len(p.record_errors)))
            for record_error in p.record_errors:
                append(_INT32.pack(record_error.batch_index))
                append(compact_nullable_string(record_error.batch_index_error_message))
                append(NO_TAGGED_FIELDS)
            append(compact_nullable_string(p.error_message))
            append(NO_TAGGED_FIELDS)
        append(NO_TAGGED_FIELDS)
    append(_INT32.pack(throttle_time_ms))
    append(NO_TAGGED_FIELDS)
    body_size = sum(map(len, parts))
    parts[0] = _HEADER_V0.pack(body_size + 4, correlation_id)
    return b"".join(parts)

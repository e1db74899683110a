"""Hand-written Produce request encoder and response decoder (v3–v8), for ``client.codecs``.

The producer's hot path: one request per broker node per drain, one response back. kio's
generic codec spends more time walking schemas than these ``struct`` calls do. The rule this
module keeps: for every version it claims, ``encode_produce_request`` writes the bytes
``protocol.client_codec.encode_request`` writes for the same mapping, and
``decode_produce_response`` returns the mapping ``client_codec.decode_response`` returns for
the same frame (tests check both with hypothesis). ``register`` plugs them into
``client.codecs`` (idempotent).

Produce request v3–v8 (none flexible), after the request header v1 (``api_key: int16,
api_version: int16, correlation_id: int32, client_id: nullable string``)::

    transactional_id: nullable string
    acks: int16
    timeout: int32                                   (ms)
    topic_data: array of
        name: string
        partition_data: array of
            index: int32
            records: nullable bytes                  (int32 length, -1 = null)

Produce response v3–v8 after the response header v0 (``correlation_id: int32``)::

    responses: array of
        name: string
        partition_responses: array of
            index: int32, error_code: int16, base_offset: int64, log_append_time: int64
            log_start_offset: int64                  (v5+)
            record_errors: array of                  (v8+)
                batch_index: int32, batch_index_error_message: nullable string
            error_message: nullable string           (v8+)
    throttle_time: int32                             (ms)

``log_append_time`` is ``None`` for -1 (CreateTime topics), as kio reads it. Malformed
responses raise ``ProtocolError``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Final

from odradek.client import codecs
from odradek.errors import ProtocolError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = [
    "PRODUCE_CODEC_VERSIONS",
    "decode_produce_response",
    "encode_produce_request",
    "register",
]

#: The Produce versions encoded and decoded here.
PRODUCE_CODEC_VERSIONS: Final = VersionRange(3, 8)

_HEADER = struct.Struct(">ihhi")  # size, api_key, api_version, correlation_id
_ACKS_TIMEOUT = struct.Struct(">hi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_V3 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
_NULL16 = b"\xff\xff"
_NULL32 = b"\xff\xff\xff\xff"


def _nullable_string(value: str | None) -> bytes:
    if value is None:
        return _NULL16
    encoded = value.encode()
    return _INT16.pack(len(encoded)) + encoded


def encode_produce_request(
    api_version: int, correlation_id: int, client_id: str | None, fields: Mapping[str, Any]
) -> bytes:
    """A whole Produce request frame (see the module docstring).

    Raises:
        KeyError: ``fields`` lacks ``acks``, ``timeout`` or ``topic_data`` (or an entry lacks
            its fields), as ``client_codec`` does.
        struct.error: a number does not fit its field.
    """
    parts: list[bytes] = [
        b"",
        _nullable_string(client_id),
        _nullable_string(fields.get("transactional_id")),
        _ACKS_TIMEOUT.pack(fields["acks"], fields["timeout"]),
    ]
    append = parts.append
    topics = fields["topic_data"]
    append(_INT32.pack(len(topics)))
    for topic in topics:
        name = topic["name"].encode()
        partitions = topic["partition_data"]
        append(_INT16.pack(len(name)) + name + _INT32.pack(len(partitions)))
        for partition in partitions:
            records = partition.get("records")
            if records is None:
                append(_INT32.pack(partition["index"]) + _NULL32)
            else:
                append(_INT32.pack(partition["index"]) + _INT32.pack(len(records)))
                append(records)
    size = sum(map(len, parts)) + _HEADER.size - 4
    parts[0] = _HEADER.pack(size, ApiKey.PRODUCE, api_version, correlation_id)
    return b"".join(parts)


class _Reader:
    __slots__ = ("frame", "pos")

    def __init__(self, frame: bytes) -> None:
        self.frame = frame
        self.pos = 0

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...]:
        values = layout.unpack_from(self.frame, self.pos)
        self.pos += layout.size
        return values

    def int32(self) -> int:
        (value,) = _INT32.unpack_from(self.frame, self.pos)
        self.pos += 4
        return int(value)

    def count(self) -> int:
        count = self.int32()
        if count < 0 or count > len(self.frame) - self.pos:
            raise ValueError(f"array of {count} entries at byte {self.pos - 4}")
        return count

    def nullable_string(self) -> str | None:
        (length,) = _INT16.unpack_from(self.frame, self.pos)
        self.pos += 2
        if length < 0:
            return None
        end = self.pos + length
        if end > len(self.frame):
            raise ValueError(f"string of {length} bytes runs past the frame")
        value = self.frame[self.pos : end].decode()
        self.pos = end
        return value

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ValueError("null where a string is required")
        return value


def decode_produce_response(api_version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    """The correlation id and body of a Produce response frame (without its size prefix).

    Raises:
        ProtocolError: a truncated or malformed frame.
    """
    reader = _Reader(frame)
    with_log_start_offset = api_version >= 5
    with_errors = api_version >= 8
    partition_layout = _PARTITION_V5 if with_log_start_offset else _PARTITION_V3
    try:
        correlation_id = reader.int32()
        responses = []
        for _ in range(reader.count()):
            name = reader.string()
            partitions = []
            for _ in range(reader.count()):
                values = reader.unpack(partition_layout)
                partition: dict[str, Any] = {
                    "index": values[0],
                    "error_code": values[1],
                    "base_offset": values[2],
                    "log_append_time": None if values[3] == -1 else values[3],
                }
                if with_log_start_offset:
                    partition["log_start_offset"] = values[4]
                if with_errors:
                    partition["record_errors"] = [
                        {
                            "batch_index": reader.int32(),
                            "batch_index_error_message": reader.nullable_string(),
                        }
                        for _ in range(reader.count())
                    ]
                    partition["error_message"] = reader.nullable_string()
                partitions.append(partition)
            responses.append({"name": name, "partition_responses": partitions})
        throttle_time = reader.int32()
    except (struct.error, ValueError, UnicodeDecodeError) as error:
        raise ProtocolError(f"malformed Produce v{api_version} response: {error}") from error
    if reader.pos != len(frame):
        raise ProtocolError(
            f"malformed Produce v{api_version} response: {len(frame) - reader.pos} bytes "
            "after the body"
        )
    return correlation_id, {"responses": responses, "throttle_time": throttle_time}


def register() -> None:
    """Makes ``client.codecs`` use this module for Produce v3–v8."""
    codecs.register_encoder(ApiKey.PRODUCE, PRODUCE_CODEC_VERSIONS, encode_produce_request)
    codecs.register_decoder(ApiKey.PRODUCE, PRODUCE_CODEC_VERSIONS, decode_produce_response)

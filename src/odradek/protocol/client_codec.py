"""The client's side of the codec: requests from plain mappings out, responses back to them.

The mirror of ``builder`` (which builds responses and reads requests for the broker). A caller
describes a request once, as a nested mapping with the field names of the newest version and
plain Python values (ints for durations in milliseconds and error codes, ``str``, ``bytes``,
``None``); ``encode_request`` builds the kio object of the requested version (fields the
version lacks are dropped, missing ones take their schema default) and frames it. A response
frame comes back from ``decode_response`` as the same kind of plain mapping: nested entities
become dicts, arrays lists, durations and timestamps milliseconds, error codes ints. So no
caller outside this package touches kio.

Any version kio models may be encoded, not only those the broker serves: a client talks to
other brokers too.

Request frame layout: ``size: int32``, request header (v1, or v2 for flexible versions; the
``client_id`` is a non-compact nullable string in both), body. Response frame layout (what
``decode_response`` takes, after the size prefix): ``correlation_id: int32``, tagged fields
when the response header is v1 (flexible versions, never ApiVersions), body.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from odradek.errors import ProtocolError
from odradek.protocol.api_keys import ApiKey, is_flexible
from odradek.protocol.bounds import check_request_body
from odradek.protocol.builder import build_entity, request_value
from odradek.protocol.describe_transactions_response import decode_describe_transactions_v0
from odradek.protocol.header import request_header_version, response_header_version
from odradek.protocol.inter_broker import load_request_schema, load_response_schema
from odradek.protocol.wire import nullable_string, read_uvarint

__all__ = ["decode_response", "encode_request", "encode_request_body"]

_SIZE = struct.Struct(">i")
_HEADER_FIXED = struct.Struct(">hhi")
_CORRELATION = struct.Struct(">i")
_ERROR_CODE = struct.Struct(">h")
_UNSUPPORTED_VERSION: Final = 35
#: Responses read by hand where kio's schema refuses what Kafka's brokers send.
_OWN_DECODERS: Final[dict[tuple[int, int], Callable[[bytes, int], dict[str, Any]]]] = {
    (ApiKey.DESCRIBE_TRANSACTIONS, 0): decode_describe_transactions_v0,
}
_DECODE_ERRORS: Final = (
    SerialError,
    ValueError,
    TypeError,
    OverflowError,
    LookupError,
    struct.error,
)


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    fields: Mapping[str, Any],
) -> bytes:
    """Returns a whole request frame (size prefix, header, body).

    Args:
        api_key, api_version: the request's API and version (any version kio models).
        correlation_id: echoed by the broker in the response.
        client_id: the header's client id (``None``: null).
        fields: the body, as described in the module docstring.

    Raises:
        LookupError: kio has no schema for this API key and version.
        KeyError: ``fields`` lacks a field the version requires and that has no default.
    """
    body = build_entity(load_request_schema(api_key, api_version), fields)
    payload = encode_request_body(body, correlation_id, client_id)
    return _SIZE.pack(len(payload)) + payload


def encode_request_body(body: Any, correlation_id: int, client_id: str | None) -> bytes:
    """A request frame's payload (header and body, no size prefix) for ``body``, a kio
    request object of any version kio models: what ``decode_request`` takes."""
    api_key, api_version = body.__api_key__, body.__version__
    header_version = request_header_version(api_key, api_version)
    buffer = io.BytesIO()
    buffer.write(_HEADER_FIXED.pack(api_key, api_version, correlation_id))
    if header_version >= 1:
        buffer.write(nullable_string(client_id))
    if header_version == 2:
        buffer.write(b"\x00")  # no tagged fields
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    """Decodes a response frame (without its size prefix) to a plain mapping.

    An ApiVersions response whose error code is UNSUPPORTED_VERSION is read as the v0 body
    that the broker sends whatever version was asked (KIP-511): its ``api_keys`` tell which
    version to retry with.

    Returns:
        The correlation id and the body's fields.

    Raises:
        ProtocolError: the frame is truncated or malformed for this API and version.
        LookupError: kio has no schema for this API key and version.
    """
    try:
        (correlation_id,) = _CORRELATION.unpack_from(frame, 0)
        offset = _CORRELATION.size
        if response_header_version(api_key, api_version) == 1:
            offset = _skip_tagged_fields(frame, offset)
        if api_key == ApiKey.API_VERSIONS and api_version > 0:
            (error_code,) = _ERROR_CODE.unpack_from(frame, offset)
            if error_code == _UNSUPPORTED_VERSION:
                api_version = 0
        own_decoder = _OWN_DECODERS.get((api_key, api_version))
        if own_decoder is not None:
            return correlation_id, own_decoder(frame, offset)
        is_flexible(api_key, api_version)  # LookupError for a version kio does not model
        schema = load_response_schema(api_key, api_version)
        check_request_body(schema, frame, offset)  # the same walk bounds responses
        body, _ = entity_reader(schema)(frame, offset)
    except LookupError:
        raise
    except _DECODE_ERRORS as error:
        name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
        raise ProtocolError(f"malformed {name} v{api_version} response: {error}") from error
    return correlation_id, _plain(body)


def _skip_tagged_fields(frame: bytes, offset: int) -> int:
    count, offset = read_uvarint(frame, offset)
    for _ in range(count):
        _tag, offset = read_uvarint(frame, offset)
        size, offset = read_uvarint(frame, offset)
        offset += size
        if offset > len(frame):
            raise ValueError("tagged field runs past the end of the frame")
    return offset


def _plain(entity: Any) -> dict[str, Any]:
    return {field.name: _value(getattr(entity, field.name)) for field in dataclasses.fields(entity)}


def _value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(value)
    if isinstance(value, tuple):
        return [_value(item) for item in value]
    if isinstance(value, KioErrorCode | datetime.timedelta | datetime.datetime):
        return request_value(value)
    if isinstance(value, uuid.UUID | bytes | str | bool | None):
        return value
    if isinstance(value, int):
        return int(value)  # kio's int subtypes (i8, i32, ...) as plain ints
    return value


def entity_fields(entity: Any) -> dict[str, Any]:
    """A decoded kio request or response as the plain mapping ``encode_request`` takes (how a
    broker forwards a request it received to the controller)."""
    return _plain(entity)

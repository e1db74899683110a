"""The codec facade: request frames in, ``Request`` values out; responses in, frames out.

This module owns the boundary with kio (the Kafka schema codec, pinned): no other odradek
package imports kio. The rules it keeps:

- ``decode_request`` decodes only what ``api_keys`` says is implemented (optionally narrowed
  further by the caller's advertised ranges); anything else raises ``UnsupportedVersionError``
  carrying the api key, version and correlation id, so the broker can answer or close;
- a frame that does not decode raises ``RequestDecodeError`` and nothing else, and before kio
  reads a body, ``bounds.check_request_body`` proves every length and array count in it fits
  the frame (kio would otherwise reserve memory for a lying count, and abort on failure) and
  that no field the schema calls non-nullable is null: a handler never sees ``None`` where
  the schema promises a value;
- the body must end exactly where the frame ends: bytes after it are a malformed request
  (``RequestDecodeError``), since a client that sends them has framed something else than it
  meant to;
- cold responses are encoded with kio (``encode_response``); the hot ones are written with
  ``struct`` (``encode_produce_response``, ``encode_fetch_response``, re-exported here);

Response frame layout: ``size: int32`` (bytes that follow), response header, body.
"""

from __future__ import annotations

import functools
import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple, TypeAlias

from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.protocol import RequestPayload, ResponsePayload

from odradek.errors import RequestDecodeError, UnsupportedVersionError
from odradek.protocol.api_keys import (
    ADVERTISED_ONLY_VERSIONS,
    ApiKey,
    VersionRange,
    api_key_or_none,
    is_implemented,
)
from odradek.protocol.bounds import check_request_body
from odradek.protocol.fetch_response import (
    FETCH_RESPONSE_VERSIONS,
    AbortedTransaction,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponseFrame,
    RecordsSlot,
    encode_fetch_response,
)
from odradek.protocol.header import (
    RequestHeader,
    encode_response_header,
    parse_request_header,
    peek_request_header,
    request_header_version,
)
from odradek.protocol.inter_broker import load_request_schema, load_response_schema
from odradek.protocol.produce_response import (
    PRODUCE_RESPONSE_VERSIONS,
    BatchIndexAndErrorMessage,
    NodeEndpoint,
    PartitionProduceResponse,
    TopicProduceResponse,
    encode_produce_response,
)

__all__ = [
    "FETCH_RESPONSE_VERSIONS",
    "PRODUCE_RESPONSE_VERSIONS",
    "AbortedTransaction",
    "BatchIndexAndErrorMessage",
    "FetchPartitionData",
    "FetchResponseFrame",
    "FetchableTopicResponse",
    "NodeEndpoint",
    "PartitionProduceResponse",
    "RecordsSlot",
    "Request",
    "RequestPayload",
    "ResponsePayload",
    "SupportedVersions",
    "TopicProduceResponse",
    "decode_request",
    "encode_api_versions_fallback",
    "encode_fetch_response",
    "encode_produce_response",
    "encode_response",
    "response_class",
]

#: Advertised version ranges by API key, as the broker's router computes them.
SupportedVersions: TypeAlias = Mapping[ApiKey, VersionRange]

_SIZE = struct.Struct(">i")
_API_VERSIONS_V0_HEAD = struct.Struct(">iihi")  # size, correlation_id, error_code, count
_API_VERSION_ENTRY = struct.Struct(">hhh")
_UNSUPPORTED_VERSION: Final = 35
_FIRST_KIO_PRODUCE: Final = 3  # kio has no Produce v0-v2 schema (see _without_transactional_id)
_NULL_STRING: Final = b"\xff\xff"

# Everything kio's native readers raise on malformed input (found by fuzzing the decoder).
# KeyError is an unknown tagged field: kio rejects those, where Kafka would skip them.
_DECODE_ERRORS: Final = (
    SerialError,
    ValueError,
    TypeError,
    OverflowError,
    LookupError,
    struct.error,
)


class Request(NamedTuple):
    """A decoded request: its header and kio's request object (``body``).

    ``frame_size`` is the frame's length without its 4-byte size prefix. (A NamedTuple: one
    is built per request, see ``RequestHeader``.)
    """

    header: RequestHeader
    body: RequestPayload
    frame_size: int

    @property
    def api_key(self) -> ApiKey:
        return ApiKey(self.header.api_key)

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id


@dataclass(frozen=True, slots=True)
class _Decoder:
    header_version: int
    check_body: Callable[[bytes, int], int]
    read_body: Callable[[bytes, int], tuple[RequestPayload, int]]


_decoders: dict[tuple[int, int], _Decoder] = {}


def _without_transactional_id(schema: type[RequestPayload]) -> _Decoder:
    """A decoder for Produce v0-v2 through the v3 schema.

    Kafka 4 dropped Produce v0-v2 and kio (generated from its JSON) has no schema for them,
    but their body is v3's without the leading nullable ``transactional_id``: a null one
    (int16 -1) is put in front of the body and the v3 reader reads the rest.
    """
    check_v3 = functools.partial(check_request_body, schema)
    read_v3 = entity_reader(schema)

    def check_body(frame: bytes, offset: int) -> int:
        return check_v3(_NULL_STRING + frame[offset:], 0) - len(_NULL_STRING) + offset

    def read_body(frame: bytes, offset: int) -> tuple[RequestPayload, int]:
        body, size = read_v3(_NULL_STRING + frame[offset:], 0)
        return body, size - len(_NULL_STRING)

    return _Decoder(header_version=1, check_body=check_body, read_body=read_body)


def _decoder(api_key: int, api_version: int) -> _Decoder:
    # Loading a kio schema imports a module: do it once per (key, version), on first use.
    key = (api_key, api_version)
    decoder = _decoders.get(key)
    if decoder is None and api_key == ApiKey.PRODUCE and api_version < _FIRST_KIO_PRODUCE:
        decoder = _without_transactional_id(load_request_schema(api_key, _FIRST_KIO_PRODUCE))
        _decoders[key] = decoder
    if decoder is None:
        schema = load_request_schema(api_key, api_version)
        decoder = _Decoder(
            header_version=request_header_version(api_key, api_version),
            check_body=functools.partial(check_request_body, schema),
            read_body=entity_reader(schema),
        )
        _decoders[key] = decoder
    return decoder


def _unsupported(api_key: int, api_version: int, correlation_id: int) -> UnsupportedVersionError:
    name = api_key_or_none(api_key)
    if name is None:
        message = f"unknown api key {api_key} (version {api_version})"
    elif name in ADVERTISED_ONLY_VERSIONS and api_version in ADVERTISED_ONLY_VERSIONS[name]:
        message = f"{name.name} v{api_version} is advertised for old clients but not served"
    else:
        message = f"{name.name} v{api_version} is not supported"
    return UnsupportedVersionError(
        message,
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        api_key_known=name is not None,
    )


#: The first Metadata version whose requests may end with bytes the body does not use.
_METADATA_FLEXIBLE_VERSION = 9


def _ignores_trailing_bytes(api_key: int, api_version: int) -> bool:
    """Whether bytes after the body are ignored (Kafka ignores them everywhere; odradek only
    where a client sends them): librdkafka's all-topics Metadata request v9+ reserves four
    bytes for the topic count and writes the one-byte compact null in the first, leaving
    three bytes after the body, which Kafka never reads. librdkafka's AlterUserScramCredentials
    writes the top-level tagged fields twice (one byte more)."""
    if api_key == _ALTER_USER_SCRAM_CREDENTIALS:
        return True
    return api_key == 3 and api_version >= _METADATA_FLEXIBLE_VERSION


_ALTER_USER_SCRAM_CREDENTIALS = 51


def decode_request(
    frame: bytes | bytearray | memoryview, supported: SupportedVersions | None = None
) -> Request:
    """Decodes one request frame (the payload after its 4-byte size prefix).

    Args:
        frame: the frame's bytes; a ``bytearray`` or ``memoryview`` is copied first (kio's
            readers need read-only buffers).
        supported: the advertised ranges; a version outside them is rejected even if the codec
            could decode it. ``None``: every implemented version.

    Raises:
        UnsupportedVersionError: the API key is unknown, or the version is not implemented
            (or not in ``supported``).
        RequestDecodeError: the header or body is truncated or malformed.
    """
    if not isinstance(frame, bytes):
        frame = bytes(frame)
    api_key, api_version, correlation_id = peek_request_header(frame)
    decoder = _decoders.get((api_key, api_version))
    if decoder is None:
        if not is_implemented(api_key, api_version):
            raise _unsupported(api_key, api_version, correlation_id)
        decoder = _decoder(api_key, api_version)
    if supported is not None:
        name = api_key_or_none(api_key)
        advertised = None if name is None else supported.get(name)
        if advertised is None or api_version not in advertised:
            raise _unsupported(api_key, api_version, correlation_id)
    header, offset = parse_request_header(frame, decoder.header_version)
    try:
        # Bounds first: kio reserves memory for arrays from their declared counts.
        end = decoder.check_body(frame, offset)
        if end != len(frame) and not _ignores_trailing_bytes(api_key, api_version):
            raise ValueError(f"{len(frame) - end} bytes after the request body")
        body, _size = decoder.read_body(frame, offset)
    except _DECODE_ERRORS as exc:
        raise RequestDecodeError(
            f"malformed {ApiKey(api_key).name} v{api_version} request body: {exc}",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        ) from exc
    return Request(header, body, len(frame))


def response_class(api_key: int, api_version: int) -> type[ResponsePayload]:
    """The kio response class that answers a request of this key and version.

    Raises:
        UnsupportedVersionError: the version is not implemented (correlation id -1).
    """
    if not is_implemented(api_key, api_version):
        raise _unsupported(api_key, api_version, -1)
    return load_response_schema(api_key, api_version)


def encode_response(header_version: int, correlation_id: int, response: ResponsePayload) -> bytes:
    """Returns a whole response frame (size prefix, header, body) encoded by kio: the cold path.

    ``header_version`` comes from ``header.response_header_version`` for the request's key and
    version (ApiVersions always uses 0).

    Raises:
        ValueError: ``header_version`` is not 0 or 1.
        kio.serial.errors.SerialError: a value does not fit its field.
    """
    buffer = io.BytesIO()
    buffer.write(b"\x00\x00\x00\x00")
    buffer.write(encode_response_header(header_version, correlation_id))
    entity_writer(type(response))(buffer, response)
    with buffer.getbuffer() as view:
        _SIZE.pack_into(view, 0, len(view) - 4)
    return buffer.getvalue()


def encode_api_versions_fallback(correlation_id: int, supported: SupportedVersions) -> bytes:
    """The answer to an ApiVersions request of a version newer than we serve (KIP-511).

    A v0 body (error UNSUPPORTED_VERSION, then every advertised range in api key order) under
    a v0 response header: any client can read it and retries with a version we list.
    """
    entries = sorted(supported.items())
    body_size = 4 + 2 + 4 + _API_VERSION_ENTRY.size * len(entries)
    parts = [
        _API_VERSIONS_V0_HEAD.pack(body_size, correlation_id, _UNSUPPORTED_VERSION, len(entries))
    ]
    parts.extend(
        _API_VERSION_ENTRY.pack(key, versions.min_version, versions.max_version)
        for key, versions in entries
    )
    return b"".join(parts)


def is_response_for(response: ResponsePayload, api_key: int, api_version: int) -> bool:
    """Whether ``response`` is kio's response type for this request key and version."""
    return response.__api_key__ == api_key and response.__version__ == api_version

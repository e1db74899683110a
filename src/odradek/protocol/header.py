"""Request and response headers: which header version an API version uses, and their bytes.

This module owns header versions. The rules it keeps (Kafka's ``RequestHeader.json`` and
``ResponseHeader.json``):

- request header v0 is ``api_key, api_version, correlation_id``; only ControlledShutdown v0
  uses it;
- request header v1 adds ``client_id``; v2 (flexible API versions) adds tagged fields.
  ``client_id`` is a *non-compact* nullable string (int16 length, -1 = null) even in v2;
- response header v0 is ``correlation_id``; v1 (flexible API versions) adds tagged fields;
  ApiVersions responses always use v0, so a client can parse the answer to a version it
  guessed too high (KIP-511).

Request header layout (big-endian)::

    api_key: int16
    api_version: int16
    correlation_id: int32
    client_id: int16 length + UTF-8 bytes, length -1 = null       # v1+
    tagged_fields: uvarint count, then (uvarint tag, uvarint size, bytes) each   # v2 only
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from odradek.errors import RequestDecodeError
from odradek.protocol.api_keys import ApiKey, is_flexible
from odradek.protocol.wire import read_uvarint

_FIXED = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_CORRELATION = struct.Struct(">i")
_RESPONSE_V1_TAIL: Final = b"\x00"  # no tagged fields

#: Bytes of the fields every request header starts with (api key, version, correlation id).
REQUEST_HEADER_FIXED_BYTES: Final = _FIXED.size


class RequestHeader(NamedTuple):
    """A decoded request header.

    ``api_key`` is the raw value (it may name no Kafka API); ``header_version`` is the
    version it was read with. Unknown tagged fields are skipped, as Kafka skips them.
    (A NamedTuple, not a frozen dataclass: one is built per request, and a frozen
    dataclass costs four times as much to build.)
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int


def request_header_version(api_key: int, api_version: int) -> int:
    """The request header version for an API version: 2 if flexible, else 1 (0: see above).

    Raises:
        LookupError: if kio has no schema for this API key and version, so flexibility is
            unknown.
    """
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """The response header version: 1 if flexible, else 0; always 0 for ApiVersions.

    Raises:
        LookupError: as ``request_header_version``.
    """
    if api_key == ApiKey.API_VERSIONS:
        return 0
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def peek_request_header(frame: bytes) -> tuple[int, int, int]:
    """Returns ``(api_key, api_version, correlation_id)`` from the start of a request frame.

    These three fields sit at the same place in every header version, so they can be read
    before the header version is known.

    Raises:
        RequestDecodeError: the frame is shorter than 8 bytes.
    """
    if len(frame) < REQUEST_HEADER_FIXED_BYTES:
        raise RequestDecodeError(f"request frame of {len(frame)} bytes has no header")
    api_key, api_version, correlation_id = _FIXED.unpack_from(frame, 0)
    return api_key, api_version, correlation_id


def parse_request_header(frame: bytes, header_version: int) -> tuple[RequestHeader, int]:
    """Decodes a request header of ``header_version`` from the start of ``frame``.

    Returns:
        The header and the offset at which the request body starts.

    Raises:
        RequestDecodeError: the header is truncated or malformed (the error carries the api
            key, version and correlation id when the frame is long enough to hold them).
        ValueError: ``header_version`` is not 0, 1 or 2.
    """
    if header_version not in (0, 1, 2):
        raise ValueError(f"unknown request header version {header_version}")
    api_key, api_version, correlation_id = peek_request_header(frame)
    offset = REQUEST_HEADER_FIXED_BYTES
    client_id: str | None = None
    try:
        if header_version >= 1:
            (length,) = _INT16.unpack_from(frame, offset)
            offset += 2
            if length >= 0:
                end = offset + length
                if end > len(frame):
                    raise ValueError("client_id runs past the end of the frame")
                client_id = frame[offset:end].decode()
                offset = end
            elif length != -1:
                raise ValueError(f"client_id has invalid length {length}")
        if header_version == 2:
            offset = _skip_tagged_fields(frame, offset)
    except (ValueError, struct.error) as exc:  # UnicodeDecodeError is a ValueError
        raise RequestDecodeError(
            f"malformed request header v{header_version}: {exc}",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        ) from exc
    header = RequestHeader(api_key, api_version, correlation_id, client_id, header_version)
    return header, offset


def _skip_tagged_fields(frame: bytes, offset: int) -> int:
    count, offset = read_uvarint(frame, offset)
    for _ in range(count):
        _tag, offset = read_uvarint(frame, offset)
        size, offset = read_uvarint(frame, offset)
        offset += size
        if offset > len(frame):
            raise ValueError("tagged field runs past the end of the frame")
    return offset


def encode_response_header(header_version: int, correlation_id: int) -> bytes:
    """Returns the bytes of a response header (without the frame's size prefix).

    Raises:
        ValueError: ``header_version`` is not 0 or 1.
    """
    if header_version == 0:
        return _CORRELATION.pack(correlation_id)
    if header_version == 1:
        return _CORRELATION.pack(correlation_id) + _RESPONSE_V1_TAIL
    raise ValueError(f"unknown response header version {header_version}")

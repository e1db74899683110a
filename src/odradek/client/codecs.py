"""The client's request encoders and response decoders, by API key: the one seam for hot codecs.

Every request the client sends is encoded by ``encode_request`` and every response decoded by
``decode_response``, both here. By default they go through ``protocol.client_codec`` (kio,
plain mappings in and out). A faster hand-written codec for one API (Produce requests, Fetch
responses) is plugged in by ``register_encoder`` / ``register_decoder`` for that key, with no
change to any caller: it must take and return the same plain mappings as ``client_codec`` for
every version it claims, and be checked byte for byte against it in tests.

Functions here are pure (no I/O, no state but the two registries, which are filled at import
time) and may be called from any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from odradek.protocol import client_codec
from odradek.protocol.api_keys import VersionRange

__all__ = [
    "RequestEncoder",
    "ResponseDecoder",
    "decode_response",
    "encode_request",
    "register_decoder",
    "register_encoder",
]

#: ``(api_version, correlation_id, client_id, fields) -> whole request frame``.
RequestEncoder: TypeAlias = Callable[[int, int, str | None, Mapping[str, Any]], bytes]
#: ``(api_version, frame without size prefix) -> (correlation_id, plain mapping)``.
ResponseDecoder: TypeAlias = Callable[[int, bytes], tuple[int, dict[str, Any]]]

_ENCODERS: dict[int, tuple[VersionRange, RequestEncoder]] = {}
_DECODERS: dict[int, tuple[VersionRange, ResponseDecoder]] = {}


def register_encoder(api_key: int, versions: VersionRange, encoder: RequestEncoder) -> None:
    """Uses ``encoder`` for requests of ``api_key`` at ``versions`` (others stay on kio)."""
    _ENCODERS[api_key] = (versions, encoder)


def register_decoder(api_key: int, versions: VersionRange, decoder: ResponseDecoder) -> None:
    """Uses ``decoder`` for responses of ``api_key`` at ``versions`` (others stay on kio)."""
    _DECODERS[api_key] = (versions, decoder)


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    fields: Mapping[str, Any],
) -> bytes:
    """A whole request frame (size prefix, header, body); see ``client_codec.encode_request``.

    Raises:
        LookupError: no schema for this API key and version.
        KeyError: ``fields`` lacks a required field.
    """
    entry = _ENCODERS.get(api_key)
    if entry is not None and api_version in entry[0]:
        return entry[1](api_version, correlation_id, client_id, fields)
    return client_codec.encode_request(api_key, api_version, correlation_id, client_id, fields)


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    """The correlation id and body of a response frame; see ``client_codec.decode_response``.

    Raises:
        ProtocolError: the frame is malformed for this API and version.
        LookupError: no schema for this API key and version.
    """
    entry = _DECODERS.get(api_key)
    if entry is not None and api_version in entry[0]:
        return entry[1](api_version, frame)
    return client_codec.decode_response(api_key, api_version, frame)

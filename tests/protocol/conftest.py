"""Shared helpers for the protocol tests: kio as the reference encoder, hypothesis set-up."""

from __future__ import annotations

import datetime
import io
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st
from kio.serial import entity_writer
from kio.static.primitive import Records, i64Timedelta

from odradek.protocol.client_codec import encode_request_body

# kio registers strategies for its primitive types but not for Records (raw record bytes).
st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
# kio's native reader keeps int64 durations as timedelta microseconds and rejects larger ones
# (OffsetCommit v2-v4 retention_time_ms); clients send -1 there. Generate decodable values.
st.register_type_strategy(
    i64Timedelta,
    st.integers(-(2**40), 2**40).map(
        lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
    ),
)

FrameBuilder = Callable[..., bytes]


def kio_request_frame(body: Any, correlation_id: int = 1, client_id: str | None = "test") -> bytes:
    """A request frame payload (no size prefix) as kio encodes it, header included."""
    return encode_request_body(body, correlation_id, client_id)


def kio_response_frame(response: Any, correlation_id: int) -> bytes:
    """A whole response frame (size prefix included) as kio encodes it."""
    header_type = response.__header_schema__
    buffer = io.BytesIO()
    entity_writer(header_type)(buffer, header_type(correlation_id=correlation_id))
    entity_writer(type(response))(buffer, response)
    payload = buffer.getvalue()
    return struct.pack(">i", len(payload)) + payload


def sized(payload: bytes) -> bytes:
    """``payload`` with its 4-byte size prefix."""
    return struct.pack(">i", len(payload)) + payload


# Session-scoped so that hypothesis tests may use them (they hold no state).
@pytest.fixture(scope="session")
def request_frame() -> FrameBuilder:
    return kio_request_frame


@pytest.fixture(scope="session")
def response_frame() -> Callable[[Any, int], bytes]:
    return kio_response_frame


@pytest.fixture(scope="session")
def with_size() -> Callable[[bytes], bytes]:
    return sized

"""FrameDecoder: frame boundaries, the size limit, and linear buffering."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.errors import FrameTooLargeError, InvalidFrameError
from odradek.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameDecoder,
    encode_size_prefix,
)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


PAYLOADS = [b"abc", b"", b"x" * 300, b"\x00\x01\x02\x03\x04", b"last"]
STREAM = b"".join(frame(p) for p in PAYLOADS)


def test_default_limit_is_kafkas_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_FRAME_BYTES == 104857600
    assert FrameDecoder().max_frame_bytes == DEFAULT_MAX_FRAME_BYTES


def test_size_prefix_is_four_bytes_big_endian() -> None:
    assert encode_size_prefix(258) == b"\x00\x00\x01\x02"


def test_one_chunk_with_several_frames() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(STREAM) == PAYLOADS
    assert decoder.buffered_bytes == 0
    assert decoder.pending_frame_bytes == -1


def test_empty_chunk_returns_nothing() -> None:
    assert FrameDecoder().feed(b"") == []


@pytest.mark.parametrize("split", range(len(STREAM) + 1))
def test_split_at_every_byte_boundary(split: int) -> None:
    decoder = FrameDecoder()
    frames = decoder.feed(STREAM[:split]) + decoder.feed(STREAM[split:])
    assert frames == PAYLOADS
    assert decoder.buffered_bytes == 0


def test_split_at_every_pair_of_boundaries() -> None:
    small = b"".join(frame(p) for p in [b"ab", b"", b"cde"])
    for first in range(len(small) + 1):
        for second in range(first, len(small) + 1):
            decoder = FrameDecoder()
            frames = (
                decoder.feed(small[:first])
                + decoder.feed(small[first:second])
                + decoder.feed(small[second:])
            )
            assert frames == [b"ab", b"", b"cde"], (first, second)


def test_one_byte_at_a_time() -> None:
    decoder = FrameDecoder()
    frames: list[bytes] = []
    for i in range(len(STREAM)):
        frames += decoder.feed(STREAM[i : i + 1])
    assert frames == PAYLOADS


@given(st.lists(st.binary(max_size=200), max_size=8), st.data())
def test_any_chunking_yields_the_same_frames(payloads: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = FrameDecoder()
    frames: list[bytes] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        frames += decoder.feed(stream[start:cut])
        start = cut
    assert frames == payloads
    assert decoder.buffered_bytes == 0


def test_partial_frame_is_reported_as_buffered() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(frame(b"0123456789")[:7]) == []
    assert decoder.pending_frame_bytes == 10
    assert decoder.buffered_bytes == 7
    assert decoder.feed(b"3456789") == [b"0123456789"]


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_bytes=8)
    assert decoder.feed(frame(b"12345678")) == [b"12345678"]


def test_oversized_frame_is_rejected_from_its_prefix_alone() -> None:
    decoder = FrameDecoder(max_frame_bytes=8)
    with pytest.raises(FrameTooLargeError) as info:
        decoder.feed(encode_size_prefix(9))  # no body bytes sent at all
    assert info.value.size == 9
    assert info.value.max_frame_bytes == 8
    assert decoder.buffered_bytes == 0


def test_huge_frame_is_rejected_before_buffering_its_body() -> None:
    decoder = FrameDecoder()
    chunk = encode_size_prefix(2**31 - 1) + b"x" * 65536
    with pytest.raises(FrameTooLargeError):
        decoder.feed(chunk)
    assert decoder.buffered_bytes == 0


def test_oversized_prefix_split_across_chunks_is_rejected_when_complete() -> None:
    decoder = FrameDecoder(max_frame_bytes=100)
    prefix = encode_size_prefix(101)
    assert decoder.feed(prefix[:3]) == []
    with pytest.raises(FrameTooLargeError):
        decoder.feed(prefix[3:])


def test_negative_size_is_an_invalid_frame() -> None:
    decoder = FrameDecoder()
    with pytest.raises(InvalidFrameError) as info:
        decoder.feed(b"\xff\xff\xff\xff")
    assert not isinstance(info.value, FrameTooLargeError)
    assert info.value.size == -1


def test_frames_before_a_bad_prefix_in_the_same_chunk_are_dropped_with_the_stream() -> None:
    # The stream cannot be re-synchronised after a bad prefix; the connection closes.
    decoder = FrameDecoder(max_frame_bytes=10)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(frame(b"ok") + encode_size_prefix(11))


def test_errors_are_sticky() -> None:
    decoder = FrameDecoder(max_frame_bytes=1)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(frame(b"too big"))
    with pytest.raises(FrameTooLargeError):
        decoder.feed(frame(b""))


def test_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_frame_bytes"):
        FrameDecoder(max_frame_bytes=-1)


def test_large_frame_in_small_reads_keeps_the_chunks_without_copying_them() -> None:
    # Linear buffering: chunks of a frame in progress are kept as received (not appended to
    # a growing buffer) and joined once when the frame completes.
    payload = bytes(range(256)) * 4096  # 1 MiB
    stream = frame(payload)
    decoder = FrameDecoder()
    chunks = [stream[i : i + 1000] for i in range(0, len(stream), 1000)]
    assert decoder.feed(chunks[0]) == []
    for chunk in chunks[1:-1]:
        assert decoder.feed(chunk) == []
        assert decoder._body[-1] is chunk
    assert decoder.buffered_bytes == len(stream) - len(chunks[-1])
    assert decoder.feed(chunks[-1]) == [payload]
    assert decoder.buffered_bytes == 0

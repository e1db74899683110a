"""Tests for odradek.records.compression: round trips and the framing each Kafka client expects."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records.batch import CompressionType
from odradek.records.compression import (
    XERIAL_MAGIC,
    compress,
    decompress,
    is_xerial,
    lz4_blocks_independent,
)

CODECS = list(CompressionType)
COMPRESSED = [codec for codec in CompressionType if codec is not CompressionType.NONE]
#: Large enough for several LZ4 blocks (64 KiB each) and xerial blocks; compressible.
LARGE = b"".join(b"record %08d with a payload that repeats " % i for i in range(8000))


@pytest.mark.parametrize("codec", CODECS)
@given(data=st.binary(max_size=2048))
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_large_and_from_buffers(codec: CompressionType) -> None:
    compressed = compress(codec, memoryview(LARGE))
    assert isinstance(compressed, bytes)
    if codec is not CompressionType.NONE:
        assert len(compressed) < len(LARGE)
    assert decompress(codec, bytearray(compressed)) == LARGE
    assert decompress(codec, memoryview(compressed)) == LARGE


def test_gzip_writes_a_gzip_stream_readable_by_the_standard_library() -> None:
    compressed = compress(CompressionType.GZIP, LARGE)
    assert compressed[:2] == b"\x1f\x8b"
    assert gzip.decompress(compressed) == LARGE
    assert decompress(CompressionType.GZIP, gzip.compress(LARGE, compresslevel=9)) == LARGE


def test_gzip_rejects_bare_zlib() -> None:
    with pytest.raises(CorruptRecordError, match="gzip"):
        decompress(CompressionType.GZIP, bytes(cramjam.zlib.compress(LARGE)))


def test_snappy_writes_raw_snappy() -> None:
    compressed = compress(CompressionType.SNAPPY, LARGE)
    assert not is_xerial(compressed)
    assert not compressed.startswith(b"\xff\x06\x00\x00sNaPpY")
    assert bytes(cramjam.snappy.decompress_raw(compressed)) == LARGE


def xerial(
    data: bytes, block_size: int = 32 * 1024, *, little_endian_header: bool = False
) -> bytes:
    """Xerial framing as the Java client writes it: header, then length-prefixed raw blocks."""
    version = struct.pack("<ii" if little_endian_header else ">ii", 1, 1)
    parts = [XERIAL_MAGIC, version]
    for start in range(0, len(data), block_size):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + block_size]))
        parts += [struct.pack(">i", len(block)), block]
    return b"".join(parts)


@pytest.mark.parametrize("little_endian_header", [False, True])
def test_snappy_reads_xerial_framing(little_endian_header: bool) -> None:
    framed = xerial(LARGE, little_endian_header=little_endian_header)
    assert is_xerial(framed)
    assert framed.count(b"\x00\x00") > 0
    assert decompress(CompressionType.SNAPPY, framed) == LARGE


def test_snappy_reads_empty_xerial_stream() -> None:
    assert decompress(CompressionType.SNAPPY, xerial(b"")) == b""


@pytest.mark.parametrize("cut", [1, 3, 5, 100])
def test_snappy_truncated_xerial_raises(cut: int) -> None:
    framed = xerial(LARGE)
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, framed[:-cut])


def test_snappy_xerial_negative_block_length_raises() -> None:
    framed = XERIAL_MAGIC + struct.pack(">iii", 1, 1, -5) + b"\x00" * 8
    with pytest.raises(CorruptRecordError, match="declares -5 bytes"):
        decompress(CompressionType.SNAPPY, framed)


def test_snappy_never_reads_the_snappy_framing_format() -> None:
    framing_format = bytes(cramjam.snappy.compress(LARGE))
    assert framing_format.startswith(b"\xff\x06\x00\x00sNaPpY")
    with pytest.raises(CorruptRecordError, match="snappy"):
        decompress(CompressionType.SNAPPY, framing_format)


def test_lz4_writes_frames_with_independent_blocks() -> None:
    for data in (b"", b"abc", LARGE):
        frame = compress(CompressionType.LZ4, data)
        assert frame[:4] == b"\x04\x22\x4d\x18"
        flg = frame[4]
        assert flg >> 6 == 0b01  # frame format version 1
        assert flg & 0x20, "block independence (FLG bit 5) must be set: Java rejects linked blocks"
        assert lz4_blocks_independent(frame)


def test_lz4_reads_any_frame_including_linked_blocks() -> None:
    linked = bytes(cramjam.lz4.compress(LARGE))
    assert not lz4_blocks_independent(linked)
    assert decompress(CompressionType.LZ4, linked) == LARGE
    compressor = cramjam.lz4.Compressor(content_checksum=True, block_linked=True)
    compressor.compress(LARGE)
    assert decompress(CompressionType.LZ4, bytes(compressor.finish())) == LARGE


def test_lz4_blocks_independent_rejects_non_frames() -> None:
    assert not lz4_blocks_independent(b"")
    assert not lz4_blocks_independent(b"\x04\x22\x4d\x18")
    assert not lz4_blocks_independent(b"\x00\x00\x00\x00\x60")


def test_zstd_reads_frames_without_content_size() -> None:
    # Producers stream into zstd, so their frames carry no content size.
    compressor = cramjam.zstd.Compressor(level=3)
    compressor.compress(LARGE)
    frame = bytes(compressor.finish())
    assert frame[:4] == b"\x28\xb5\x2f\xfd"
    frame_header_descriptor = frame[4]
    assert frame_header_descriptor >> 6 == 0, "no Frame_Content_Size field"
    assert not frame_header_descriptor & 0x20, "not a single-segment frame"
    assert decompress(CompressionType.ZSTD, frame) == LARGE


def test_zstd_reads_concatenated_frames() -> None:
    frames = compress(CompressionType.ZSTD, b"first ") + compress(CompressionType.ZSTD, b"second")
    assert decompress(CompressionType.ZSTD, frames) == b"first second"


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("garbage", [b"", b"\x00", b"not compressed at all" * 3])
def test_garbage_raises_corrupt_record(codec: CompressionType, garbage: bytes) -> None:
    if codec is CompressionType.SNAPPY and garbage == b"\x00":
        # b"\x00" is the raw snappy encoding of the empty string.
        assert decompress(codec, garbage) == b""
        return
    with pytest.raises(CorruptRecordError, match=r"cannot decompress|xerial"):
        decompress(codec, garbage)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_truncated_stream_raises_corrupt_record(codec: CompressionType) -> None:
    compressed = compress(codec, LARGE)
    with pytest.raises(CorruptRecordError):
        decompress(codec, compressed[: len(compressed) // 2])


@pytest.mark.parametrize("codec", [5, 6, 7, 8, -1])
def test_unknown_codec_raises(codec: int) -> None:
    with pytest.raises(UnsupportedCompressionTypeError, match=f"codec {codec}"):
        compress(codec, b"data")
    with pytest.raises(UnsupportedCompressionTypeError, match=f"codec {codec}"):
        decompress(codec, b"data")

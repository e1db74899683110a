"""Compression codecs of record batch v2 with the framing every Kafka client expects.

The only module that imports ``cramjam``. The compressed payload of a batch is everything after
its 61-byte header (the records); the header itself is never compressed. Framing per codec
(WIRE-NOTES.md, "Compression framing"):

- GZIP: a gzip stream (RFC 1952), not bare zlib. Written at level 6, Kafka's default.
- SNAPPY: written as *raw* snappy, as librdkafka writes it. Read as raw snappy or as xerial
  framing, which the Java client and kafka-python write::

      offset  size  field
           0     8  magic            b"\\x82SNAPPY\\x00"
           8     4  version          int32 (ignored: some producers write it little-endian)
          12     4  min. compatible  int32 (ignored, likewise)
          16        blocks: int32 big-endian length, then that many bytes of raw snappy

  The snappy *framing format* (``\\xff\\x06\\x00\\x00sNaPpY`` chunks) is neither written nor read:
  no Kafka client uses it for record batches.
- LZ4: the LZ4 frame format with *independent* blocks (FLG bit 5 set); the Java client rejects
  linked blocks. Written without content size or content checksum (blocks carry checksums).
  Read: any LZ4 frame.
- ZSTD: a zstd frame, written at level 3 (Kafka's default). Read: any frame, with or without a
  content size in its header (producers stream, so theirs have none).

Contracts: ``compress`` and ``decompress`` take any readable buffer and return ``bytes``.
``decompress`` raises CorruptRecordError for input the codec cannot decode; both raise
UnsupportedCompressionTypeError for a codec number they do not know. There is no limit on the
decompressed size here: callers that decode untrusted batches bound the batch size first.
"""

from __future__ import annotations

import struct

import cramjam

from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records.batch import CompressionType

XERIAL_MAGIC = b"\x82SNAPPY\x00"
#: Magic (8) + version (4) + minimum compatible version (4).
XERIAL_HEADER_SIZE = 16
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
#: Offset of the FLG byte in an LZ4 frame and its block-independence bit.
LZ4_FLG_OFFSET = 4
LZ4_FLG_BLOCK_INDEPENDENCE = 0x20

GZIP_LEVEL = 6
ZSTD_LEVEL = 3

_BLOCK_LENGTH = struct.Struct(">i")


def compress(codec: CompressionType | int, data: ReadableBuffer) -> bytes:
    """Compresses ``data`` (the records of one batch) with ``codec``.

    ``CompressionType.NONE`` returns the data unchanged (as bytes).

    Raises:
        UnsupportedCompressionTypeError: ``codec`` is not a known codec number.
    """
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data, level=GZIP_LEVEL))
    if codec == CompressionType.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == CompressionType.LZ4:
        return _compress_lz4(data)
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))
    raise UnsupportedCompressionTypeError(f"unknown compression codec {int(codec)}")


def decompress(codec: CompressionType | int, data: ReadableBuffer) -> bytes:
    """Decompresses the records of one batch compressed with ``codec``.

    Raises:
        CorruptRecordError: the data is not a valid stream of that codec.
        UnsupportedCompressionTypeError: ``codec`` is not a known codec number.
    """
    try:
        if codec == CompressionType.NONE:
            return bytes(data)
        if codec == CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == CompressionType.SNAPPY:
            return _decompress_snappy(data)
        if codec == CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == CompressionType.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as error:
        raise CorruptRecordError(f"cannot decompress {_name(codec)} records: {error}") from None
    raise UnsupportedCompressionTypeError(f"unknown compression codec {int(codec)}")


def is_xerial(data: ReadableBuffer) -> bool:
    """Whether ``data`` starts with the xerial snappy magic."""
    return bytes(data[: len(XERIAL_MAGIC)]) == XERIAL_MAGIC


def lz4_blocks_independent(frame: ReadableBuffer) -> bool:
    """Whether an LZ4 frame declares independent blocks (FLG bit 5), as Kafka requires."""
    return (
        len(frame) > LZ4_FLG_OFFSET
        and bytes(frame[:LZ4_FLG_OFFSET]) == LZ4_FRAME_MAGIC
        and bool(frame[LZ4_FLG_OFFSET] & LZ4_FLG_BLOCK_INDEPENDENCE)
    )


def _compress_lz4(data: ReadableBuffer) -> bytes:
    # cramjam.lz4.compress links blocks; only the streaming compressor lets us unlink them.
    compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
    # The streaming compressor takes bytes only (cramjam 2.14).
    compressor.compress(data if isinstance(data, bytes) else bytes(data))
    frame = bytes(compressor.finish())
    if not lz4_blocks_independent(frame):  # pragma: no cover - guards a cramjam change
        raise RuntimeError("cramjam wrote an LZ4 frame with linked blocks, which Kafka rejects")
    return frame


def _decompress_snappy(data: ReadableBuffer) -> bytes:
    if not is_xerial(data):
        return bytes(cramjam.snappy.decompress_raw(data))
    view = memoryview(data)
    end = len(view)
    pos = XERIAL_HEADER_SIZE
    chunks: list[bytes] = []
    while pos < end:
        if end - pos < _BLOCK_LENGTH.size:
            raise CorruptRecordError(f"truncated xerial snappy block length at byte {pos}")
        (length,) = _BLOCK_LENGTH.unpack_from(view, pos)
        pos += _BLOCK_LENGTH.size
        if length < 0 or pos + length > end:
            raise CorruptRecordError(
                f"xerial snappy block at byte {pos} declares {length} bytes, {end - pos} remain"
            )
        chunks.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + length])))
        pos += length
    return b"".join(chunks)


def _name(codec: CompressionType | int) -> str:
    try:
        return CompressionType(codec).name.lower()
    except ValueError:
        return f"codec {int(codec)}"

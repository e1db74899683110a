"""Message format v0 and v1 (magic 0 and 1, before KIP-98) up-converted to one v2 record batch.

Produce v0-v2 carry message sets, not record batches. The log stores v2 batches only, so the
broker converts them on append, as Kafka 3 did for old producers: ``upconvert_message_set``
reads every message (checking its CRC32), unwraps compressed wrapper messages, and builds one
v2 batch of the same records (key, value, timestamp; no headers, which v0/v1 cannot carry)
with the same compression codec. Magic 0 messages have no timestamp: their records get -1
(``NO_TIMESTAMP``), as in Kafka's conversion.

Layout of a message set (big-endian), entries back to back::

    offset: int64            # ignored: the log assigns offsets
    message_size: int32      # bytes of the message that follows
    crc: uint32              # CRC-32 (IEEE) of everything after it
    magic: int8              # 0 or 1
    attributes: int8         # bits 0-2: codec (0 none, 1 gzip, 2 snappy, 3 lz4)
    timestamp: int64         # magic 1 only
    key: int32 length + bytes (-1 = null)
    value: int32 length + bytes (-1 = null); for a compressed wrapper message, the
           compressed bytes of an inner message set

Sans-I/O; raises ``CorruptRecordError`` for anything that does not parse or check.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

from odradek.errors import CorruptRecordError, KafkaError
from odradek.records.batch import CompressionType
from odradek.records.codec import build_batch
from odradek.records.compression import decompress
from odradek.records.record import SimpleRecord

__all__ = ["is_legacy_message_set", "upconvert_message_set"]

_ENTRY_HEAD = struct.Struct(">qi")  # offset, message_size
_MESSAGE_HEAD = struct.Struct(">Ibb")  # crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_MAGIC_OFFSET: Final = 16  # offset(8) + message_size(4) + crc(4): same place as a v2 magic
_CODEC_MASK: Final = 0x07
_NO_TIMESTAMP: Final = -1
#: Nesting allowed for compressed wrapper messages (Kafka allows one level).
_MAX_DEPTH: Final = 1
_CODECS: Final = {
    1: CompressionType.GZIP,
    2: CompressionType.SNAPPY,
    3: CompressionType.LZ4,
}


def is_legacy_message_set(data: bytes) -> bool:
    """Whether ``data`` starts like a magic 0 or 1 message set (rather than a v2 batch)."""
    return len(data) > _MAGIC_OFFSET and data[_MAGIC_OFFSET] in (0, 1)


def upconvert_message_set(data: bytes) -> bytes:
    """Returns one v2 batch (base offset 0) holding every record of the message set ``data``.

    Raises:
        CorruptRecordError: a message is truncated, fails its CRC, has an unknown magic or
            codec, or its compressed contents do not decompress; or the set is empty.
    """
    records: list[SimpleRecord] = []
    codec = _read_messages(data, records, depth=0)
    if not records:
        raise CorruptRecordError("a message set with no messages")
    try:
        return build_batch(records, compression=codec)
    except ValueError as error:
        raise CorruptRecordError(f"cannot convert the message set: {error}") from error


def _read_messages(data: bytes, records: list[SimpleRecord], depth: int) -> CompressionType:
    """Appends the records of ``data`` to ``records``; returns the codec of the last wrapper
    message met (NONE if there was none)."""
    codec = CompressionType.NONE
    position = 0
    end = len(data)
    while position < end:
        if end - position < _ENTRY_HEAD.size:
            raise CorruptRecordError(f"message set truncated at byte {position}")
        _offset, size = _ENTRY_HEAD.unpack_from(data, position)
        start = position + _ENTRY_HEAD.size
        stop = start + size
        if size < _MESSAGE_HEAD.size or stop > end:
            raise CorruptRecordError(f"message of {size} bytes at byte {position} does not fit")
        message_codec = _read_message(data, start, stop, records, depth)
        if message_codec is not CompressionType.NONE:
            codec = message_codec
        position = stop
    return codec


def _read_message(
    data: bytes, start: int, stop: int, records: list[SimpleRecord], depth: int
) -> CompressionType:
    crc, magic, attributes = _MESSAGE_HEAD.unpack_from(data, start)
    if zlib.crc32(data[start + 4 : stop]) != crc:
        raise CorruptRecordError(f"message at byte {start - _ENTRY_HEAD.size} fails its CRC")
    if magic not in (0, 1):
        raise CorruptRecordError(f"message with magic {magic} in a message set")
    position = start + _MESSAGE_HEAD.size
    timestamp = _NO_TIMESTAMP
    if magic == 1:
        if position + _TIMESTAMP.size > stop:
            raise CorruptRecordError("message truncated in its timestamp")
        (timestamp,) = _TIMESTAMP.unpack_from(data, position)
        position += _TIMESTAMP.size
    key, position = _read_bytes(data, position, stop)
    value, position = _read_bytes(data, position, stop)
    if position != stop:
        raise CorruptRecordError(f"{stop - position} bytes after a message's value")
    codec_bits = attributes & _CODEC_MASK
    if codec_bits == 0:
        records.append(SimpleRecord(timestamp, key, value))
        return CompressionType.NONE
    codec = _CODECS.get(codec_bits)
    if codec is None or depth >= _MAX_DEPTH or value is None:
        raise CorruptRecordError(f"wrapper message with codec {codec_bits} cannot be read")
    try:
        inner = decompress(codec, value)
    except KafkaError:
        raise
    except Exception as error:  # each codec library raises its own types
        raise CorruptRecordError(f"{codec.name} wrapper message: {error}") from error
    _read_messages(inner, records, depth + 1)
    return codec


def _read_bytes(data: bytes, position: int, stop: int) -> tuple[bytes | None, int]:
    if position + _LENGTH.size > stop:
        raise CorruptRecordError("message truncated in a length")
    (length,) = _LENGTH.unpack_from(data, position)
    position += _LENGTH.size
    if length == -1:
        return None, position
    if length < 0 or position + length > stop:
        raise CorruptRecordError(f"message field of {length} bytes does not fit")
    return data[position : position + length], position + length

"""Pure-Python encoder and decoder of the records inside a v2 batch (the codec's hot loops).

Private: callers use ``records.codec``, which binds these two functions and could bind a
compiled module with the same signatures instead.

Byte layout of one record (varints are zigzag, see ``records.varint``)::

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  timestamp - batch base_timestamp
    offsetDelta     varint   offset - batch base_offset
    keyLength       varint   -1 = null key
    key             bytes
    valueLength     varint   -1 = null value
    value           bytes
    headerCount     varint
    headers         headerCount times:
        headerKeyLength    varint   >= 0
        headerKey          bytes    UTF-8
        headerValueLength  varint   -1 = null value
        headerValue        bytes

The decoder trusts nothing: every length is checked against the record's own ``length`` and the
end of the data, and any mismatch is a CorruptRecordError, never a short or shifted record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

from odradek.errors import CorruptRecordError
from odradek.records.record import Header, Record
from odradek.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

_NULL_LENGTH = encode_varint(-1)
_NO_HEADERS = encode_varint(0)
_ATTRIBUTES = b"\x00"

# Record is frozen: its generated __init__ routes every field through object.__setattr__,
# which costs as much as decoding the record. The decoder writes the slots through their
# descriptors instead (decode runs ~1.2x faster); the check keeps this in step with Record.
_RECORD_FIELDS = ("offset", "timestamp", "key", "value", "headers")
if tuple(field.name for field in fields(Record)) != _RECORD_FIELDS:  # pragma: no cover
    raise ImportError("records._pyrecords is out of step with the fields of Record")
_new_object = object.__new__
_set_offset, _set_timestamp, _set_key, _set_value, _set_headers = (
    Record.__dict__[name].__set__ for name in _RECORD_FIELDS
)


def _make_record(
    offset: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[Header, ...],
) -> Record:
    """``Record(offset, timestamp, key, value, headers)``, without the frozen __init__."""
    record: Record = _new_object(Record)
    _set_offset(record, offset)
    _set_timestamp(record, timestamp)
    _set_key(record, key)
    _set_value(record, value)
    _set_headers(record, headers)
    return record


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> bytes:
    """Encodes one record, its length prefix included.

    Raises:
        ValueError: a delta or length outside its varint range.
        UnicodeEncodeError: a header key that is not encodable as UTF-8 (lone surrogates).
    """
    parts = [_ATTRIBUTES, encode_varlong(timestamp_delta), encode_varint(offset_delta)]
    if key is None:
        parts.append(_NULL_LENGTH)
    else:
        parts.append(encode_varint(len(key)))
        parts.append(key)
    if value is None:
        parts.append(_NULL_LENGTH)
    else:
        parts.append(encode_varint(len(value)))
        parts.append(value)
    if headers:
        parts.append(encode_varint(len(headers)))
        for header_key, header_value in headers:
            key_bytes = header_key.encode()
            parts.append(encode_varint(len(key_bytes)))
            parts.append(key_bytes)
            if header_value is None:
                parts.append(_NULL_LENGTH)
            else:
                parts.append(encode_varint(len(header_value)))
                parts.append(header_value)
    else:
        parts.append(_NO_HEADERS)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def decode_records(
    data: bytes,
    pos: int,
    end: int,
    *,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[Record]:
    """Decodes exactly ``count`` records that fill ``data[pos:end]``.

    Args:
        data: the bytes holding the records (a whole batch, or decompressed records).
        pos: where the first record starts.
        end: where the last record must end.
        count: the batch's ``records_count``.
        base_offset: the batch's base offset.
        base_timestamp: the batch's base timestamp (CreateTime deltas are added to it).
        log_append_time: for a LogAppendTime batch its max timestamp, which every record
            takes; None for CreateTime.
    Raises:
        CorruptRecordError: truncated or inconsistent records, fewer or more than ``count``
            records in the range, invalid lengths, or a header key that is not UTF-8.
    """
    records: list[Record] = []
    append = records.append
    make = _make_record
    varint = decode_varint
    varlong = decode_varlong
    no_headers: tuple[Header, ...] = ()
    index = 0
    try:
        for index in range(count):
            # Each field takes the one-byte path inline; longer varints call the decoder.
            byte = data[pos]
            if byte < 0x80:
                length = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                length, pos = varint(data, pos)
            record_end = pos + length
            if length <= 0 or record_end > end:
                raise CorruptRecordError(
                    f"record {index} declares {length} bytes, {end - pos} remain in the batch"
                )
            # pos is on the unused attributes byte: skip it.
            byte = data[pos + 1]
            if byte < 0x80:
                timestamp_delta = (byte >> 1) ^ -(byte & 1)
                pos += 2
            else:
                timestamp_delta, pos = varlong(data, pos + 1)
            byte = data[pos]
            if byte < 0x80:
                offset_delta = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                offset_delta, pos = varint(data, pos)
            byte = data[pos]
            if byte < 0x80:
                key_length = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                key_length, pos = varint(data, pos)
            if key_length >= 0:
                key: bytes | None = data[pos : pos + key_length]
                pos += key_length
            elif key_length == -1:
                key = None
            else:
                raise CorruptRecordError(f"record {index} has key length {key_length}")
            byte = data[pos]
            if byte < 0x80:
                value_length = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                value_length, pos = varint(data, pos)
            if value_length >= 0:
                value: bytes | None = data[pos : pos + value_length]
                pos += value_length
            elif value_length == -1:
                value = None
            else:
                raise CorruptRecordError(f"record {index} has value length {value_length}")
            if data[pos] == 0:
                headers = no_headers
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, record_end)
            # Fields are read past record_end only when a length lied; the
            # check below then rejects the record before it is kept.
            if pos != record_end:
                raise CorruptRecordError(
                    f"record {index} declares {length} bytes but its fields take "
                    f"{length + pos - record_end}"
                )
            append(
                make(
                    base_offset + offset_delta,
                    base_timestamp + timestamp_delta
                    if log_append_time is None
                    else log_append_time,
                    key,
                    value,
                    headers,
                )
            )
    except IndexError:
        raise CorruptRecordError(
            f"truncated record {index}: the data ends inside it ({count} declared)"
        ) from None
    if pos != end:
        raise CorruptRecordError(
            f"{end - pos} bytes remain after the {count} records the batch declares"
        )
    return records


def _decode_headers(data: bytes, pos: int, record_end: int) -> tuple[tuple[Header, ...], int]:
    """Decodes a header count and the headers; returns ``(headers, next_pos)``."""
    count, pos = decode_varint(data, pos)
    if count < 0:
        raise CorruptRecordError(f"invalid header count {count}")
    headers: list[Header] = []
    for _ in range(count):
        key_length, pos = decode_varint(data, pos)
        key_end = pos + key_length
        if key_length < 0 or key_end > record_end:
            raise CorruptRecordError(f"invalid header key length {key_length}")
        try:
            key = data[pos:key_end].decode()
        except UnicodeDecodeError:
            raise CorruptRecordError("a header key is not valid UTF-8") from None
        value_length, pos = decode_varint(data, key_end)
        if value_length >= 0:
            value: bytes | None = data[pos : pos + value_length]
            pos += value_length
        elif value_length == -1:
            value = None
        else:
            raise CorruptRecordError(f"invalid header value length {value_length}")
        if pos > record_end:
            raise CorruptRecordError("a header runs past the end of its record")
        headers.append((key, value))
    return tuple(headers), pos

"""Message sets v0/v1 up-converted to one v2 batch: kafka-python's legacy encoder as the
independent reference, and hand-built corrupt inputs."""

from __future__ import annotations

import struct
import warnings
import zlib

import pytest

from odradek.errors import CorruptRecordError
from odradek.records.batch import CompressionType, read_prefix
from odradek.records.codec import decode_batch, decode_batch_records
from odradek.records.legacy import is_legacy_message_set, upconvert_message_set

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

# kafka-python's codec numbers for message format v0/v1 attributes.
KAFKA_PYTHON_CODECS = {
    CompressionType.NONE: 0,
    CompressionType.GZIP: 1,
    CompressionType.SNAPPY: 2,
    CompressionType.LZ4: 3,
}
RECORDS = [
    (1_700_000_000_000, b"k1", b"v1"),
    (1_700_000_000_005, None, b"v2"),
    (1_700_000_000_009, b"k3", None),
]


def message_set(magic: int, codec: CompressionType) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, KAFKA_PYTHON_CODECS[codec], 1 << 20)
    for offset, (timestamp, key, value) in enumerate(RECORDS):
        builder.append(offset, timestamp if magic else None, key, value)
    return bytes(builder.build())


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize(
    "codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY]
)
def test_kafka_python_message_sets_convert_to_the_same_records(
    magic: int, codec: CompressionType
) -> None:
    data = message_set(magic, codec)
    assert is_legacy_message_set(data)
    batch = upconvert_message_set(data)
    assert not is_legacy_message_set(batch)
    _header, size = read_prefix(batch)
    assert size == len(batch)
    assert decode_batch(batch).header.compression == codec
    records = decode_batch_records(batch)
    assert [r.offset for r in records] == [0, 1, 2]
    assert [(r.key, r.value) for r in records] == [(k, v) for _, k, v in RECORDS]
    # Magic 0 has no timestamps: -1 (NO_TIMESTAMP), as Kafka's conversion writes.
    expected_times = [t for t, _, _ in RECORDS] if magic else [-1, -1, -1]
    assert [r.timestamp for r in records] == expected_times


def legacy_message(value: bytes, *, magic: int = 1, crc_delta: int = 0) -> bytes:
    body = struct.pack(">bb", magic, 0)
    if magic == 1:
        body += struct.pack(">q", 1_700_000_000_000)
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", (zlib.crc32(body) + crc_delta) & 0xFFFFFFFF) + body
    return struct.pack(">qi", 0, len(message)) + message


def test_a_v2_batch_is_not_a_legacy_message_set() -> None:
    assert not is_legacy_message_set(upconvert_message_set(legacy_message(b"x")))
    assert not is_legacy_message_set(b"")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(legacy_message(b"x", crc_delta=1), id="bad-crc"),
        pytest.param(legacy_message(b"x")[:-1], id="truncated"),
        pytest.param(legacy_message(b"x") + b"\x00" * 5, id="partial-entry"),
        pytest.param(legacy_message(b"x", magic=2), id="magic-2-inside"),
        pytest.param(b"", id="empty"),
    ],
)
def test_corrupt_message_sets_are_refused(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        upconvert_message_set(data)


def test_a_wrapper_whose_contents_do_not_decompress_is_refused() -> None:
    body = struct.pack(">bbq", 1, 1, 0) + struct.pack(">i", -1) + struct.pack(">i", 4) + b"nope"
    message = struct.pack(">I", zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordError):
        upconvert_message_set(struct.pack(">qi", 0, len(message)) + message)

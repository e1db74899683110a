"""Tests for odradek.records.codec: golden bytes, round trips, corruption, the builder, interop."""

from __future__ import annotations

import datetime
import io
import mmap
import struct
from types import SimpleNamespace

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records import record_format
from odradek.records.batch import (
    CRC_OFFSET,
    HEADER_SIZE,
    CompressionType,
    TimestampType,
    compute_crc,
    parse_header,
    validate_batch,
)
from odradek.records.codec import (
    BatchBuilder,
    build_batch,
    decode_batch,
    decode_batch_records,
    decode_records,
)
from odradek.records.record import Record, SimpleRecord
from odradek.records.varint import encode_varint


def independent_crc32c(data: bytes) -> int:
    """CRC32C by a second implementation: kafka-python's pure-Python one."""
    crc32c_py = pytest.importorskip("kafka.record._crc32c")
    return int(crc32c_py.crc(data))


# Two records, hand-encoded (varints are zigzag: n -> 2n, -1 -> 1):
#   record 0: length 8 (10), attributes 00, timestampDelta 0 (00), offsetDelta 0 (00),
#             key "k" (02 6b), value "v" (02 76), no headers (00)
#   record 1: length 13 (1a), attributes 00, timestampDelta 300 (d8 04), offsetDelta 1 (02),
#             null key (01), value "hi" (04 68 69),
#             1 header (02): key "h" (02 68), value "x" (02 78)
GOLDEN_RECORD_0 = bytes.fromhex("10 00 00 00 02 6b 02 76 00")
GOLDEN_RECORD_1 = bytes.fromhex("1a 00 d8 04 02 01 04 68 69 02 02 68 02 78")
GOLDEN_BATCH = (
    bytes.fromhex(
        "0000000000000000"  # base_offset 0
        "00000048"  # batch_length: 49 + 9 + 14 = 72
        "ffffffff"  # partition_leader_epoch -1
        "02"  # magic
        "df5fa6db"  # crc32c of everything from attributes on
        "0000"  # attributes: no compression, CreateTime
        "00000001"  # last_offset_delta
        "00000000000003e8"  # base_timestamp 1000
        "0000000000000514"  # max_timestamp 1300
        "ffffffffffffffff"  # producer_id -1
        "ffff"  # producer_epoch -1
        "ffffffff"  # base_sequence -1
        "00000002"  # records_count
    )
    + GOLDEN_RECORD_0
    + GOLDEN_RECORD_1
)
GOLDEN_INPUT = [
    SimpleRecord(1000, b"k", b"v"),
    SimpleRecord(1300, None, b"hi", [("h", b"x")]),
]
GOLDEN_RECORDS = [
    Record(0, 1000, b"k", b"v", ()),
    Record(1, 1300, None, b"hi", (("h", b"x"),)),
]


def resign(data: bytearray, pos: int = 0) -> bytearray:
    """Recomputes the CRC of the batch at ``pos`` after a test changed its bytes."""
    size = parse_header(data, pos).size
    struct.pack_into(">I", data, pos + CRC_OFFSET, compute_crc(data, pos, size))
    return data


def test_golden_crc_is_crc32c() -> None:
    assert independent_crc32c(GOLDEN_BATCH[21:]) == 0xDF5FA6DB


def test_build_golden_batch() -> None:
    assert build_batch(GOLDEN_INPUT) == GOLDEN_BATCH


def test_encode_golden_records() -> None:
    assert record_format.encode_record(0, 0, b"k", b"v", ()) == GOLDEN_RECORD_0
    assert record_format.encode_record(1, 300, None, b"hi", [("h", b"x")]) == GOLDEN_RECORD_1


def test_decode_golden_batch() -> None:
    decoded = decode_batch(GOLDEN_BATCH)
    assert decoded.records == GOLDEN_RECORDS
    assert decoded.timestamp_type is TimestampType.CREATE_TIME
    assert decoded.header.records_count == 2
    assert type(decoded.records[0]) is Record


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_decode_from_any_buffer_at_any_position(wrap: type) -> None:
    data = b"\x00" * 5 + GOLDEN_BATCH + build_batch([SimpleRecord(1, b"x", b"y")])
    assert decode_batch_records(wrap(data), 5) == GOLDEN_RECORDS
    second = decode_batch_records(wrap(data), 5 + len(GOLDEN_BATCH))
    assert second == [Record(0, 1, b"x", b"y")]


def test_decode_from_mmap() -> None:
    with mmap.mmap(-1, len(GOLDEN_BATCH)) as mapped:
        mapped.write(GOLDEN_BATCH)
        assert decode_batch_records(mapped) == GOLDEN_RECORDS


def test_decoded_records_are_frozen_values() -> None:
    record = decode_batch_records(GOLDEN_BATCH)[1]
    assert record == Record(1, 1300, None, b"hi", (("h", b"x"),))
    assert hash(record) == hash(Record(1, 1300, None, b"hi", (("h", b"x"),)))
    with pytest.raises(AttributeError):
        record.offset = 5  # type: ignore[misc]


headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)), max_size=3)
simple_records = st.builds(
    SimpleRecord,
    timestamp_ms=st.integers(0, 2**45),
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=200),
    headers=headers,
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(
    records=st.lists(simple_records, min_size=1, max_size=30),
    compression=st.sampled_from(CompressionType),
    base_offset=st.integers(0, 2**62),
    producer=st.tuples(st.integers(-1, 2**40), st.integers(-1, 2**15 - 1), st.integers(-1, 2**30)),
    partition_leader_epoch=st.integers(-1, 2**31 - 1),
    transactional=st.booleans(),
)
def test_build_decode_round_trip(
    records: list[SimpleRecord],
    compression: CompressionType,
    base_offset: int,
    producer: tuple[int, int, int],
    partition_leader_epoch: int,
    transactional: bool,
) -> None:
    producer_id, producer_epoch, base_sequence = producer
    data = build_batch(
        records,
        base_offset=base_offset,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        transactional=transactional,
    )
    decoded = decode_batch(data)
    header = decoded.header
    assert header.size == len(data)
    assert header.compression is compression
    assert header.records_count == len(records)
    assert header.last_offset_delta == len(records) - 1
    assert header.base_timestamp == records[0].timestamp_ms
    assert header.max_timestamp == max(record.timestamp_ms for record in records)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    assert header.partition_leader_epoch == partition_leader_epoch
    assert header.is_transactional is transactional
    assert not header.is_control
    assert decoded.records == [
        Record(
            base_offset + index,
            record.timestamp_ms,
            record.key,
            record.value,
            tuple(record.headers),
        )
        for index, record in enumerate(records)
    ]


@pytest.mark.parametrize("compression", list(CompressionType))
def test_log_append_time_gives_every_record_the_max_timestamp(
    compression: CompressionType,
) -> None:
    records = [SimpleRecord(100 + i, None, b"v") for i in (5, 1, 9, 3)]
    data = build_batch(
        records, compression=compression, timestamp_type=TimestampType.LOG_APPEND_TIME
    )
    decoded = decode_batch(data)
    assert decoded.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [record.timestamp for record in decoded.records] == [109] * 4


def test_control_batch_flag() -> None:
    # A commit marker: key = version 0, type 1 (COMMIT); value = version 0, coordinator epoch.
    marker = SimpleRecord(5, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x07")
    data = build_batch([marker], producer_id=9, producer_epoch=1, transactional=True, control=True)
    decoded = decode_batch(data)
    assert decoded.header.is_control
    assert decoded.header.is_transactional
    assert decoded.records[0].key == b"\x00\x00\x00\x01"


def test_negative_timestamp_deltas() -> None:
    records = [SimpleRecord(10_000, b"a", None), SimpleRecord(1, b"b", None)]
    decoded = decode_batch(build_batch(records))
    assert [record.timestamp for record in decoded.records] == [10_000, 1]
    assert decoded.header.max_timestamp == 10_000


def test_large_values_and_many_records() -> None:
    big = bytes(range(256)) * 4096  # 1 MiB
    records = [SimpleRecord(i, b"key", big if i == 500 else b"%d" % i) for i in range(1000)]
    for compression in CompressionType:
        decoded = decode_batch_records(build_batch(records, compression=compression))
        assert len(decoded) == 1000
        assert decoded[500].value == big
        assert decoded[999] == Record(999, 999, b"key", b"999")


def test_build_requires_records() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([])
    with pytest.raises(ValueError, match="at least one record"):
        BatchBuilder().build()


def test_build_rejects_unknown_codec_and_out_of_range_values() -> None:
    with pytest.raises(UnsupportedCompressionTypeError):
        build_batch([SimpleRecord(0, None, None)], compression=6)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="varlong"):
        build_batch([SimpleRecord(0, None, None), SimpleRecord(2**63, None, None)])


# --- corruption: each case keeps the CRC valid, so only the record checks can catch it ---


def golden_with(records_count: int | None = None, records: bytes | None = None) -> bytearray:
    data = bytearray(GOLDEN_BATCH[:HEADER_SIZE])
    body = GOLDEN_RECORD_0 + GOLDEN_RECORD_1 if records is None else records
    data += body
    struct.pack_into(">i", data, 8, HEADER_SIZE - 12 + len(body))
    if records_count is not None:
        struct.pack_into(">i", data, 57, records_count)
    return resign(data)


def test_more_records_declared_than_present() -> None:
    with pytest.raises(CorruptRecordError, match="truncated record 2"):
        decode_batch_records(golden_with(records_count=3))


def test_fewer_records_declared_than_present() -> None:
    with pytest.raises(CorruptRecordError, match="bytes remain after the 1 records"):
        decode_batch_records(golden_with(records_count=1))


def test_zero_records_declared() -> None:
    assert decode_batch_records(golden_with(records_count=0, records=b"")) == []


def test_truncated_record() -> None:
    with pytest.raises(CorruptRecordError, match="record 1 declares 13 bytes, 5 remain"):
        decode_batch_records(golden_with(records=GOLDEN_RECORD_0 + GOLDEN_RECORD_1[:6]))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        # length says 9 but the fields take 8
        ("12 00 00 00 02 6b 02 76 00 00", "declares 9 bytes but its fields take 8"),
        # length says 7 but the fields take 8
        ("0e 00 00 00 02 6b 02 76 00", "declares 7 bytes but its fields take 8"),
        # key length -2
        ("10 00 00 00 03 6b 02 76 00", "key length -2"),
        # value length -3
        ("0c 00 00 00 01 05 00", "value length -3"),
        # header count -1
        ("0c 00 00 00 01 01 01", "invalid header count -1"),
        # header key length -1 (a null header key)
        ("10 00 00 00 01 01 02 01 01", "invalid header key length -1"),
        # header key 0xff is not UTF-8
        ("12 00 00 00 01 01 02 02 ff 01", "not valid UTF-8"),
        # header value length -2
        ("12 00 00 00 01 01 02 02 68 03", "invalid header value length -2"),
        # header value longer than the record
        ("12 00 00 00 01 01 02 02 68 7e", "runs past the end"),
        # a record length of 0
        ("00", "declares 0 bytes"),
        # an overlong varint for the offset delta
        ("14 00 00 ff ff ff ff ff 01 01 00", "overlong"),
    ],
)
def test_inconsistent_record_raises(record: str, message: str) -> None:
    data = golden_with(records_count=1, records=bytes.fromhex(record))
    with pytest.raises(CorruptRecordError, match=message):
        decode_batch_records(data)


@pytest.mark.parametrize(
    "compression", [c for c in CompressionType if c is not CompressionType.NONE]
)
def test_undecodable_compressed_payload_raises(compression: CompressionType) -> None:
    data = bytearray(build_batch(GOLDEN_INPUT, compression=compression))
    data[HEADER_SIZE:] = b"\x10" * (len(data) - HEADER_SIZE)
    with pytest.raises(CorruptRecordError):
        decode_batch_records(resign(data))


def test_compressed_payload_with_wrong_count_raises() -> None:
    data = bytearray(build_batch(GOLDEN_INPUT, compression=CompressionType.ZSTD))
    struct.pack_into(">i", data, 57, 3)
    with pytest.raises(CorruptRecordError, match="truncated record 2"):
        decode_batch_records(resign(data))


def test_unknown_codec_bits_raise() -> None:
    data = bytearray(GOLDEN_BATCH)
    data[22] = 0x05
    with pytest.raises(UnsupportedCompressionTypeError, match="codec 5"):
        decode_batch_records(resign(data))


def test_crc_is_checked_before_decoding() -> None:
    data = bytearray(GOLDEN_BATCH)
    data[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        decode_batch_records(data)
    # decode_records trusts the caller's validation: it decodes without the CRC check.
    assert len(decode_records(data, parse_header(data))) == 2


@settings(max_examples=300)
@given(
    position=st.integers(HEADER_SIZE, len(GOLDEN_BATCH) - 1),
    value=st.integers(0, 255),
    count=st.integers(0, 4),
)
def test_mutated_records_never_escape_as_other_errors(
    position: int, value: int, count: int
) -> None:
    data = bytearray(GOLDEN_BATCH)
    data[position] = value
    struct.pack_into(">i", data, 57, count)
    try:
        records = decode_batch_records(resign(data))
    except CorruptRecordError:
        return
    assert len(records) == count


# --- the builder ---


def test_builder_matches_build_batch() -> None:
    builder = BatchBuilder(base_offset=40)
    for record in GOLDEN_INPUT:
        assert builder.append(record.timestamp_ms, record.key, record.value, record.headers)
    assert builder.record_count == 2
    assert builder.max_timestamp == 1300
    assert builder.estimated_size == len(GOLDEN_BATCH)
    built = builder.build()
    assert built == build_batch(GOLDEN_INPUT, base_offset=40)
    assert builder.build() == built  # build is repeatable


def test_builder_refuses_records_past_its_size_limit() -> None:
    builder = BatchBuilder(batch_size_bytes=200)
    assert builder.append(0, None, b"x" * 500)  # the first record always fits
    assert not builder.append(1, None, b"y")
    assert builder.record_count == 1

    builder = BatchBuilder(batch_size_bytes=HEADER_SIZE + 3 * 12)
    value = b"v" * 5  # each record takes 12 bytes: length + 11
    assert all(builder.append(i, None, value) for i in range(3))
    assert builder.estimated_size == HEADER_SIZE + 36
    assert not builder.append(3, None, value)
    assert builder.estimated_size == HEADER_SIZE + 36
    data = builder.build()
    assert len(data) == builder.estimated_size
    assert [record.offset for record in decode_batch_records(data)] == [0, 1, 2]


def test_builder_compresses_and_estimates_the_uncompressed_size() -> None:
    builder = BatchBuilder(compression=CompressionType.GZIP, batch_size_bytes=1 << 20)
    for i in range(100):
        assert builder.append(1000 + i, b"key", b"a fairly repetitive value " * 4, [("h", None)])
    data = builder.build()
    assert len(data) < builder.estimated_size
    header = validate_batch(data)
    assert header.compression is CompressionType.GZIP
    records = decode_batch_records(data)
    assert records[99] == Record(
        99, 1099, b"key", b"a fairly repetitive value " * 4, (("h", None),)
    )


def test_builder_batch_properties() -> None:
    builder = BatchBuilder(
        base_offset=7,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        producer_id=3,
        producer_epoch=4,
        base_sequence=5,
        partition_leader_epoch=6,
        transactional=True,
    )
    builder.append(50, None, None)
    header = validate_batch(builder.build())
    assert (header.base_offset, header.producer_id, header.producer_epoch) == (7, 3, 4)
    assert (header.base_sequence, header.partition_leader_epoch) == (5, 6)
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.is_transactional


def test_record_lengths_use_zigzag_varints() -> None:
    # A 100-byte value: the record length (107) needs two varint bytes.
    data = build_batch([SimpleRecord(0, None, b"v" * 100)])
    assert data[HEADER_SIZE : HEADER_SIZE + 2] == encode_varint(107)


# --- cross-checks against independent implementations ---


def test_kio_decodes_our_batches() -> None:
    readers = pytest.importorskip("kio.records.readers")
    records = [
        SimpleRecord(1_700_000_000_000, b"key", b"value", [("trace", b"abc"), ("n", None)]),
        SimpleRecord(1_700_000_001_000, None, b"v2"),
        SimpleRecord(1_700_000_002_000, b"k3", None),
    ]
    data = build_batch(records, base_offset=100, producer_id=7, producer_epoch=0, base_sequence=3)
    batch, size = readers.read_batch(data, 0)
    assert size == len(data)
    assert batch.base_offset == 100
    assert batch.crc == validate_batch(data).crc
    assert (batch.producer_id, batch.base_sequence, batch.last_offset_delta) == (7, 3, 2)
    assert [(r.offset, r.key, r.value) for r in batch.records] == [
        (100, b"key", b"value"),
        (101, None, b"v2"),
        (102, b"k3", None),
    ]
    # kio resolves timestamps to whole seconds.
    assert [int(r.timestamp.timestamp()) for r in batch.records] == [
        1_700_000_000,
        1_700_000_001,
        1_700_000_002,
    ]
    assert [(h.key, h.value) for h in batch.records[0].headers] == [
        (b"trace", b"abc"),
        (b"n", None),
    ]


def test_we_decode_kio_batches() -> None:
    schema = pytest.importorskip("kio.records.schema")
    writers = pytest.importorskip("kio.records.writers")
    primitive = pytest.importorskip("kio.static.primitive")
    when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    kio_records = tuple(
        schema.Record(
            attributes=primitive.i8(0),
            timestamp=primitive.TZAwareMicros.parse(when + datetime.timedelta(seconds=i)),
            offset=primitive.i64(i),
            key=b"k%d" % i,
            value=None if i == 1 else b"value %d" % i,
            headers=(schema.RecordHeader(key=b"h", value=b"%d" % i),),
        )
        for i in range(3)
    )
    new_batch = schema.NewRecordBatch(
        producer_id=primitive.i64(-1),
        producer_epoch=primitive.i16(-1),
        base_sequence=primitive.i32(-1),
        records=kio_records,
        attributes=primitive.i16(0),
    )
    out = io.BytesIO()
    writers.write_new_batch(out, new_batch)
    decoded = decode_batch(out.getvalue())
    base_ms = int(when.timestamp()) * 1000
    assert decoded.records == [
        Record(
            i,
            base_ms + i * 1000,
            b"k%d" % i,
            None if i == 1 else b"value %d" % i,
            (("h", b"%d" % i),),
        )
        for i in range(3)
    ]


def _kafka_python_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gives kafka-python a snappy module: its xerial framing code is then exercised."""
    codec = pytest.importorskip("kafka.codec")
    shim = SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
    )
    monkeypatch.setattr(codec, "snappy", shim)


KAFKA_PYTHON_CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY]


@pytest.mark.parametrize("compression", KAFKA_PYTHON_CODECS)
def test_we_decode_kafka_python_batches(
    compression: CompressionType, monkeypatch: pytest.MonkeyPatch
) -> None:
    default_records = pytest.importorskip("kafka.record.default_records")
    _kafka_python_snappy(monkeypatch)
    builder = default_records.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(compression),
        is_transactional=False,
        producer_id=11,
        producer_epoch=2,
        base_sequence=40,
        batch_size=1 << 20,
    )
    value = b"some value that compresses well " * 8
    for i in range(50):
        headers = [("idx", b"%d" % i)] if i % 2 else []
        key = None if i % 3 == 0 else b"key-%d" % i
        assert builder.append(i, 1_700_000_000_000 + 7 * i, key, value, headers) is not None
    data = bytes(builder.build())
    if compression is CompressionType.SNAPPY:
        assert data[HEADER_SIZE:].startswith(b"\x82SNAPPY\x00")  # xerial framing
    decoded = decode_batch(data)
    assert decoded.header.compression is compression
    assert (decoded.header.producer_id, decoded.header.base_sequence) == (11, 40)
    assert decoded.records == [
        Record(
            i,
            1_700_000_000_000 + 7 * i,
            None if i % 3 == 0 else b"key-%d" % i,
            value,
            (("idx", b"%d" % i),) if i % 2 else (),
        )
        for i in range(50)
    ]


@pytest.mark.parametrize("compression", KAFKA_PYTHON_CODECS)
def test_kafka_python_decodes_our_batches(
    compression: CompressionType, monkeypatch: pytest.MonkeyPatch
) -> None:
    default_records = pytest.importorskip("kafka.record.default_records")
    _kafka_python_snappy(monkeypatch)
    records = [
        SimpleRecord(
            1_700_000_000_000 - i,
            None if i == 2 else b"k%d" % i,
            b"v%d" % i,
            [("a", b"1"), ("b", None)] if i == 1 else (),
        )
        for i in range(5)
    ]
    data = build_batch(records, base_offset=1000, compression=compression)
    batch = default_records.DefaultRecordBatch(data)
    assert batch.validate_crc()
    assert batch.compression_type == int(compression)
    decoded = list(batch)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in decoded] == [
        (1000 + i, 1_700_000_000_000 - i, None if i == 2 else b"k%d" % i, b"v%d" % i)
        for i in range(5)
    ]
    assert decoded[1].headers == [("a", b"1"), ("b", None)]

"""The sink's fast path: Arrow record batches → encoded record batches (``_arrow_batches``,
``_arrow_encoder`` and its compiled twin in ``odradek._record_encoder``).

Golden tests decode what was encoded (with the record decoder) and compare it with the rows
given; hypothesis holds the compiled encoder to the reference and both to the producer's
per-record path (``BatchBuilder.append``). No Spark session: Arrow batches are built here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from odradek._compiled import compiled_attr
from odradek.client.partitioner import default_partition
from odradek.client.producer import Producer
from odradek.records.codec import BatchBuilder, decode_batch_records
from odradek.records.record import Record
from odradek.spark._arrow_batches import EncodedBatch, encode_arrow_batch
from odradek.spark._arrow_encoder import EncodeArrowRecords, encode_arrow_records_py
from odradek.spark._rows_to_records import plan_columns

compiled: EncodeArrowRecords | None = compiled_attr(
    "odradek._record_encoder", "encode_arrow_records"
)
ENCODERS = [
    pytest.param(encode_arrow_records_py, id="python"),
    pytest.param(
        compiled,
        id="compiled",
        marks=pytest.mark.skipif(compiled is None, reason="odradek._record_encoder not built"),
    ),
]
NOW_MS = 1_700_000_000_000
HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
HEADERS_ARROW = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def encode(
    batch: pa.RecordBatch,
    schema: StructType,
    *,
    topic: str | None = "t",
    counts: dict[str, int] | None = None,
    encoder: EncodeArrowRecords = encode_arrow_records_py,
    limit_bytes: int = 16_384,
    max_record_bytes: int = 1 << 20,
    sticky: int = 0,
) -> list[EncodedBatch] | None:
    known = counts if counts is not None else {"t": 1}
    return encode_arrow_batch(
        batch,
        plan_columns(schema, topic),
        topic,
        partition_count=known.get,
        sticky_partition=lambda _topic, count: sticky % count,
        key_partition=default_partition,
        record_size=Producer.estimated_record_size,
        now_ms=NOW_MS,
        limit_bytes=limit_bytes,
        max_record_bytes=max_record_bytes,
        encoder=encoder,
    )


def decoded(batches: Sequence[EncodedBatch]) -> dict[tuple[str, int], list[Record]]:
    """Every batch built as the producer builds it, then decoded: records per partition, in
    the order sent."""
    out: dict[tuple[str, int], list[Record]] = {}
    for batch in batches:
        builder = BatchBuilder(batch_size_bytes=1 << 30)
        builder.append_encoded(
            batch.records, batch.count, batch.base_timestamp_ms, batch.max_timestamp_ms
        )
        records = decode_batch_records(builder.build())
        assert len(records) == batch.count
        assert [r.offset for r in records] == list(range(batch.count))
        assert batch.max_timestamp_ms == max(r.timestamp for r in records)
        out.setdefault((batch.topic, batch.partition), []).extend(records)
    return out


def fields(records: Sequence[Record]) -> list[tuple[Any, ...]]:
    return [(r.key, r.value, r.timestamp, tuple(r.headers)) for r in records]


@pytest.mark.parametrize("encoder", ENCODERS)
def test_key_and_value_columns_with_nulls_empties_and_unicode(encoder: EncodeArrowRecords) -> None:
    keys = ["ключ", None, "", "🦆", None]
    values = [b"v0", b"", None, b"\x00\xff" * 200, b"v4"]
    schema = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    batch = pa.record_batch(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())], names=["key", "value"]
    )
    got = decoded(encode(batch, schema, encoder=encoder) or [])
    assert list(got) == [("t", 0)]
    assert fields(got["t", 0]) == [
        (None if k is None else k.encode(), v, NOW_MS, ())
        for k, v in zip(keys, values, strict=True)
    ]


@pytest.mark.parametrize("encoder", ENCODERS)
def test_sliced_arrays_are_read_from_their_offset(encoder: EncodeArrowRecords) -> None:
    values = pa.array([b"a", None, b"bb", b"ccc", None, b"d"], pa.binary()).slice(1, 4)
    keys = pa.array([None, b"k1", None, b"k3", b"k4", None], pa.binary()).slice(2, 4)
    schema = StructType([StructField("value", BinaryType()), StructField("key", BinaryType())])
    batch = pa.RecordBatch.from_arrays([values, keys], names=["value", "key"])
    counts = {"t": 1}
    got = decoded(encode(batch, schema, encoder=encoder, counts=counts) or [])
    assert fields(got["t", 0]) == [
        (None, None, NOW_MS, ()),
        (b"k3", b"bb", NOW_MS, ()),
        (b"k4", b"ccc", NOW_MS, ()),
        (None, None, NOW_MS, ()),
    ]


@pytest.mark.parametrize("encoder", ENCODERS)
def test_many_partitions_topics_timestamps_and_headers(encoder: EncodeArrowRecords) -> None:
    rng = random.Random(7)
    rows = 400
    topics = [rng.choice(["a", "b"]) for _ in range(rows)]
    partitions = [rng.choice([None, 0, 1, 2, 3, 4]) for _ in range(rows)]
    keys = [rng.choice([None, f"k{rng.randrange(50)}"]) for _ in range(rows)]
    values = [bytes([i % 256]) * rng.randrange(0, 40) for i in range(rows)]
    stamps = [rng.choice([None, rng.randrange(0, 2**41)]) for _ in range(rows)]
    headers = [
        [{"key": f"h{j}é", "value": rng.choice([None, b"", b"x" * j])} for j in range(i % 3)]
        for i in range(rows)
    ]
    schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("key", StringType()),
            StructField("value", BinaryType()),
            StructField("timestamp", TimestampType()),
            StructField("headers", HEADERS),
        ]
    )
    batch = pa.record_batch(
        [
            pa.array(topics, pa.string()),
            pa.array(partitions, pa.int32()),
            pa.array(keys, pa.string()),
            pa.array(values, pa.binary()),
            pa.array(
                [None if s is None else s * 1000 + 999 for s in stamps],
                pa.timestamp("us", tz="UTC"),
            ),
            pa.array(headers, HEADERS_ARROW),
        ],
        names=["topic", "partition", "key", "value", "timestamp", "headers"],
    )
    counts = {"a": 5, "b": 7}
    for with_headers in (True, False):
        use = batch if with_headers else batch.drop_columns(["headers"])
        use_schema = StructType(schema.fields[: 6 if with_headers else 5])
        encoded = encode(
            use, use_schema, topic=None, counts=counts, encoder=encoder, limit_bytes=300, sticky=3
        )
        assert encoded is not None
        expected: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for i in range(rows):
            key = None if keys[i] is None else keys[i].encode()
            partition = partitions[i]
            if partition is None:
                partition = 3 if key is None else default_partition(key, counts[topics[i]])
            row_headers = tuple((h["key"], h["value"]) for h in headers[i]) if with_headers else ()
            expected.setdefault((topics[i], partition), []).append(
                (key, values[i], NOW_MS if stamps[i] is None else stamps[i], row_headers)
            )
        got = decoded(encoded)
        assert {tp: fields(records) for tp, records in got.items()} == expected
        assert len(got) > 8  # many partitions of both topics
        assert len(encoded) > len(got)  # 300-byte batches: runs were cut


@pytest.mark.parametrize("encoder", ENCODERS)
def test_double_timestamps_are_seconds_and_string_values_utf8(encoder: EncodeArrowRecords) -> None:
    schema = StructType(
        [StructField("value", StringType()), StructField("timestamp", DoubleType())]
    )
    batch = pa.record_batch(
        [pa.array(["é", "", None]), pa.array([1.5, None, float("nan")])],
        names=["value", "timestamp"],
    )
    got = decoded(encode(batch, schema, encoder=encoder) or [])
    assert fields(got["t", 0]) == [
        (None, "é".encode(), 1500, ()),
        (None, b"", NOW_MS, ()),
        (None, None, NOW_MS, ()),
    ]


def value_batch(values: Sequence[bytes | None]) -> tuple[pa.RecordBatch, StructType]:
    schema = StructType([StructField("value", BinaryType())])
    return pa.record_batch([pa.array(values, pa.binary())], names=["value"]), schema


def test_rows_the_producer_would_refuse_go_the_per_row_way() -> None:
    batch, schema = value_batch([b"x" * 100])
    assert encode(batch, schema, max_record_bytes=100) is None  # too large
    assert encode(batch, schema, max_record_bytes=200) is not None
    assert encode(batch, schema, counts={}) is None  # no metadata for the topic
    with_partition = StructType(
        [StructField("value", BinaryType()), StructField("partition", IntegerType())]
    )
    for bad in (1, -1):
        rows = pa.record_batch(
            [pa.array([b"v", b"w"]), pa.array([0, bad], pa.int32())], names=["value", "partition"]
        )
        assert encode(rows, with_partition) is None
    with_time = StructType(
        [StructField("value", BinaryType()), StructField("timestamp", TimestampType())]
    )
    early = pa.record_batch(
        [pa.array([b"v"]), pa.array([-1000], pa.timestamp("us", tz="UTC"))],
        names=["value", "timestamp"],
    )
    assert encode(early, with_time) is None


def test_a_null_topic_or_header_key_is_refused_with_sparks_message() -> None:
    schema = StructType([StructField("topic", StringType()), StructField("value", BinaryType())])
    batch = pa.record_batch(
        [pa.array(["t", None]), pa.array([b"a", b"b"])], names=["topic", "value"]
    )
    with pytest.raises(ValueError, match="null topic present in the data"):
        encode(batch, schema, topic=None)
    schema = StructType([StructField("value", BinaryType()), StructField("headers", HEADERS)])
    batch = pa.record_batch(
        [pa.array([b"a"]), pa.array([[{"key": None, "value": b"v"}]], HEADERS_ARROW)],
        names=["value", "headers"],
    )
    with pytest.raises(ValueError, match="null header key"):
        encode(batch, schema)


# ---- the run encoder: compiled = reference = the producer's per-record path ----

runs = st.lists(
    st.tuples(
        st.none() | st.binary(max_size=200),
        st.none() | st.binary(max_size=200),
        st.integers(min_value=0, max_value=2**50),
    ),
    min_size=1,
    max_size=60,
)


def run_arguments(
    rows: list[tuple[bytes | None, bytes | None, int]],
    with_keys: bool,
    with_stamps: bool,
    limit: int,
) -> tuple[Any, ...]:
    keys = pa.array([r[0] for r in rows], pa.binary())
    values = pa.array([r[1] for r in rows], pa.binary())
    stamps = pa.array([r[2] for r in rows], pa.int64())
    key_validity, key_offsets, key_data = keys.buffers()
    value_validity, value_offsets, value_data = values.buffers()
    return (
        len(rows),
        limit,
        rows[0][2] if with_stamps else NOW_MS,
        stamps.buffers()[1] if with_stamps else None,
        key_offsets if with_keys else None,
        key_data if with_keys else None,
        key_validity if with_keys else None,
        0,
        value_offsets,
        value_data,
        value_validity,
        0,
    )


@settings(max_examples=300, deadline=None)
@given(runs, st.booleans(), st.booleans(), st.integers(min_value=0, max_value=3000))
def test_the_run_encoder_matches_the_per_record_path(
    rows: list[tuple[bytes | None, bytes | None, int]],
    with_keys: bool,
    with_stamps: bool,
    limit: int,
) -> None:
    arguments = run_arguments(rows, with_keys, with_stamps, limit)
    expected = encode_arrow_records_py(*arguments)
    if compiled is not None:
        assert compiled(*arguments) == expected
    records, count, max_timestamp = expected
    # The producer's path: one append per row into a batch of the same size limit.
    builder = BatchBuilder(batch_size_bytes=limit)
    appended = 0
    for key, value, stamp in rows:
        if not builder.append(stamp if with_stamps else NOW_MS, key if with_keys else None, value):
            break
        appended += 1
    assert count == appended
    fast = BatchBuilder(batch_size_bytes=limit)
    fast.append_encoded(records, count, arguments[2], max_timestamp)
    assert fast.build() == builder.build()


@pytest.mark.parametrize("encoder", ENCODERS)
def test_bad_buffers_are_errors_not_reads_out_of_bounds(encoder: EncodeArrowRecords) -> None:
    good = run_arguments([(b"k", b"v", 1), (None, b"w", 2)], True, True, 1000)
    assert encoder(*good) == encode_arrow_records_py(*good)
    short_offsets = (*good[:8], b"\x00\x00\x00\x00", *good[9:])
    with pytest.raises(ValueError, match="shorter than the rows"):
        encoder(*short_offsets)
    wild = (0).to_bytes(4, "little") + (1000).to_bytes(4, "little") * 2
    with pytest.raises(ValueError, match="outside the data buffer"):
        encoder(*good[:8], wild, b"vw", None, 0)
    backwards = (5).to_bytes(4, "little") + (1).to_bytes(4, "little") * 2
    with pytest.raises(ValueError, match="outside the data buffer"):
        encoder(*good[:8], backwards, b"vwxyz", None, 0)
    with pytest.raises(ValueError, match="shorter than the rows"):
        encoder(*good[:3], b"\x00" * 8, *good[4:])  # one timestamp for two rows
    with pytest.raises(ValueError, match="rows"):
        encoder(0, *good[1:])


@pytest.mark.parametrize("encoder", ENCODERS)
def test_a_batch_fills_to_its_limit_exactly(encoder: EncodeArrowRecords) -> None:
    rows: list[tuple[bytes | None, bytes | None, int]] = [(None, b"x" * 10, 1)] * 5
    one = len(encode_arrow_records_py(*run_arguments(rows[:1], False, False, 0))[0])
    for limit, fitting in ((61 + 2 * one, 2), (61 + 2 * one - 1, 1), (61 + 5 * one, 5), (0, 1)):
        records, count, _ = encoder(*run_arguments(rows, False, False, limit))
        assert (count, len(records)) == (fitting, fitting * one)

"""Tests for odradek.records.columns and its compiled twin odradek._columns.

The Python ``PyColumnBuilder`` is the reference: the compiled ``ColumnBuilder`` must give the
same ``Columns`` (and the same next offset) for every input, and the same exception, message
included, for every input the reference rejects (an OverflowError: the same class). Inputs:
hypothesis-built batches of every kind, hand-made malformed records, and thousands of randomly
mutated fetches (bytes parsed from the network: a crash there would take down a Spark
executor).
"""

from __future__ import annotations

import mmap
import random
import shutil
import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests._batch_inputs import (
    OVERLONG_VARLONG,
    REJECTED_HEADERS,
    batch_specs,
    build_fetch,
    mutated_fetches,
    random_batches,
    raw_batch,
    raw_record,
)

from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    CompressionType,
    TimestampType,
)
from odradek.records.codec import build_batch
from odradek.records.columns import COMPILED_MODULE, Columns, PyColumnBuilder, columns_builder
from odradek.records.record import SimpleRecord

try:
    from odradek import _columns
except ImportError:  # no C compiler where this was installed
    _columns = None  # type: ignore[assignment]

needs_compiled = pytest.mark.skipif(_columns is None, reason="odradek._columns is not built")

Outcome = tuple[str, Any, Any]


# ---- helpers ----


def run(
    make: Callable[[bool], Any],
    chunks: Sequence[tuple[Any, int, int, bool]],
    include_headers: bool,
) -> Outcome:
    """Feeds ``chunks`` (data, min, end, check_crcs) to a new builder; the outcome."""
    builder = make(include_headers)
    results = []
    for data, min_offset, end_offset, check_crcs in chunks:
        try:
            next_offset = builder.add_batches(data, min_offset, end_offset, check_crcs)
        except Exception as error:
            if isinstance(error, OverflowError):
                return ("error", type(error), None)  # the reference's state is half-updated
            # The records added before the error are kept, by both.
            kept = (results, builder.count, builder.finish())
            return ("error", type(error), kept, str(error))
        results.append((next_offset, builder.count))
    return ("ok", [offset for offset, _count in results], builder.finish())


def assert_same(
    chunks: Sequence[tuple[Any, int, int, bool]], include_headers: bool = True
) -> Outcome:
    """Both builders give the same outcome; returns the reference's."""
    expected = run(PyColumnBuilder, chunks, include_headers)
    if _columns is not None:
        actual = run(_columns.ColumnBuilder, chunks, include_headers)
        assert actual == expected
    return expected


def decode(
    data: Any,
    min_offset: int = 0,
    end_offset: int = 2**62,
    check_crcs: bool = True,
    include_headers: bool = True,
) -> Outcome:
    return assert_same([(data, min_offset, end_offset, check_crcs)], include_headers)


def le(typecode: str, values: Sequence[int]) -> bytes:
    items = array(typecode, values)
    if sys.byteorder != "little":
        items.byteswap()
    return items.tobytes()


# ---- hypothesis batches ----

_batch_specs = batch_specs(st.binary(min_size=200, max_size=3000))


# ---- the compiled builder is there ----


def test_the_compiled_builder_is_built_where_there_is_a_compiler() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the Python builder is the fallback")
    assert _columns is not None, f"{COMPILED_MODULE} was not built (see the pip install log)"
    assert isinstance(columns_builder(True), _columns.ColumnBuilder)


# ---- the same columns ----


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # fmt: skip
@given(
    specs=_batch_specs,
    window=st.tuples(st.integers(0, 80), st.integers(0, 80)),
    cut=st.integers(min_value=0, max_value=200),
    include_headers=st.booleans(),
    check_crcs=st.booleans(),
)
def test_same_columns_as_the_reference(
    specs: Sequence[Any],
    window: tuple[int, int],
    cut: int,
    include_headers: bool,
    check_crcs: bool,
) -> None:
    data, end = build_fetch(specs)
    # Sometimes the whole range, sometimes a window that cuts batches; a truncated tail batch.
    min_offset, end_offset = (0, end + 5) if window[0] > 60 else window
    data = data[: len(data) - cut] if cut < 100 else data
    outcome = decode(data, min_offset, end_offset, check_crcs, include_headers)
    assert outcome[0] == "ok"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=_batch_specs, include_headers=st.booleans(), splits=st.integers(1, 4))
def test_same_columns_over_several_fetches(
    specs: Sequence[Any], include_headers: bool, splits: int
) -> None:
    """add_batches called repeatedly, each fetch starting at the offset the last returned."""
    data, end = build_fetch(specs)
    step = max(1, len(data) // splits)
    chunks = []
    pos = 0
    while pos < len(data):
        chunks.append((data[pos : pos + step], 0, end, True))
        pos += step
    assert_same(chunks, include_headers)


def test_the_columns_layout() -> None:
    """Golden values, independent of either builder's code."""
    data = build_batch(
        [
            SimpleRecord(1_000, b"k", b"v", [("h", b"x"), ("n", None)]),
            SimpleRecord(1_005, None, b"vv"),
        ],
        base_offset=5,
    ) + build_batch([SimpleRecord(7, b"", None)], base_offset=7, control=True)
    outcome = decode(data)
    assert outcome[0] == "ok"
    assert outcome[1] == [8]
    assert outcome[2] == Columns(
        count=2,
        offsets=le("q", [5, 6]),
        timestamps=le("q", [1_000, 1_005]),
        timestamp_types=le("i", [0, 0]),
        key_validity=b"\x01",
        key_offsets=le("i", [0, 1, 1]),
        key_data=b"k",
        value_validity=None,
        value_offsets=le("i", [0, 1, 3]),
        value_data=b"vvv",
        header_offsets=le("i", [0, 2, 2]),
        header_count=2,
        header_key_offsets=le("i", [0, 1, 2]),
        header_key_data=b"hn",
        header_value_validity=b"\x01",
        header_value_offsets=le("i", [0, 1, 1]),
        header_value_data=b"x",
    )


@pytest.mark.parametrize("compression", list(CompressionType))
def test_log_append_time_gives_every_record_the_max_timestamp(
    compression: CompressionType,
) -> None:
    records = [SimpleRecord(100 + i, b"k", b"v") for i in range(3)]
    data = bytearray(
        build_batch(records, compression=compression, timestamp_type=TimestampType.LOG_APPEND_TIME)
    )
    outcome = decode(data)
    assert outcome[0] == "ok"
    columns = outcome[2]
    assert columns.timestamps == le("q", [102] * 3)
    assert columns.timestamp_types == le("i", [1] * 3)


def test_many_records_with_late_nulls() -> None:
    """Buffers grow many times; the first null comes after whole bitmap bytes of valid ones."""
    rng = random.Random(7)
    records = []
    for i in range(3_000):
        key = None if i in (1_001, 2_500) else rng.randbytes(rng.randrange(0, 30))
        value = None if i >= 2_990 else rng.randbytes(100)
        headers = [("h", None if i == 1_500 else b"x")] if i % 3 == 0 else []
        records.append(SimpleRecord(i, key, value, headers))
    data = b"".join(
        build_batch(records[i : i + 150], base_offset=i) for i in range(0, len(records), 150)
    )
    for include_headers in (True, False):
        outcome = decode(data, include_headers=include_headers)
        assert outcome[0] == "ok"
        assert outcome[2].count == 3_000


@pytest.mark.parametrize(
    "kind", [bytes, bytearray, memoryview, "mmap"], ids=["bytes", "bytearray", "view", "mmap"]
)
def test_every_readable_buffer(kind: Any) -> None:
    data = build_batch([SimpleRecord(1, b"k", b"v" * 50)] * 5, base_offset=3)
    if kind == "mmap":
        buffer: Any = mmap.mmap(-1, len(data))
        buffer[:] = data
    else:
        buffer = kind(data)
    assert decode(buffer) == decode(data)


# ---- offsets ----


def test_no_whole_batch_returns_min_offset() -> None:
    data = build_batch([SimpleRecord(1, b"k", b"v")] * 3, base_offset=10)
    for cut in (1, len(data) - 11, len(data) - 1):
        assert decode(data[:cut], 10, 100) == ("ok", [10], decode(b"", 10, 100)[2])


def test_stops_at_end_offset_without_reading_further() -> None:
    first = build_batch([SimpleRecord(1, b"k", b"v")] * 3, base_offset=0)
    corrupt = bytearray(build_batch([SimpleRecord(1, b"k", b"v")] * 3, base_offset=3))
    corrupt[-1] ^= 0xFF  # a CRC mismatch nobody reads: end_offset is reached before it
    outcome = decode(first + bytes(corrupt), 0, 3)
    assert outcome[0] == "ok"
    assert outcome[1] == [3]
    assert decode(first + bytes(corrupt), 0, 4)[:2] == ("error", CorruptRecordError)


def test_control_batches_are_skipped_but_move_the_next_offset() -> None:
    data = build_batch([SimpleRecord(1, b"k", b"v")], base_offset=4, control=True)
    assert decode(data, 0, 10)[:2] == ("ok", [5])


@pytest.mark.parametrize(
    ("base_offset", "min_offset", "end_offset"),
    [
        (2**63 - 5, 0, 2**63),  # the offsets past int64 are never kept
        (2**63 - 5, 2**63 - 5, 2**64),  # ... unless asked for: OverflowError, as the arrays
        (2**63 - 5, 2**70, 2**71),  # both bounds past int64
        (2**63 - 5, 2**71, 2**70),
        (-(2**63), -(2**70), -(2**63) + 3),
        (-(2**63), -(2**70), -(2**69)),
        (0, -(2**64), 2**64),
    ],
)
def test_offsets_at_the_ends_of_int64(base_offset: int, min_offset: int, end_offset: int) -> None:
    data = bytearray(build_batch([SimpleRecord(1, b"k", b"v")] * 10, base_offset=0))
    struct.pack_into(">q", data, 0, base_offset)  # the CRC does not cover it
    decode(bytes(data), min_offset, end_offset)


def test_timestamps_past_int64_raise_overflow_error() -> None:
    records = raw_record(0, ts_delta=2**63 - 1)
    data = raw_batch(records, 1, base_timestamp=10)
    assert decode(data)[:2] == ("error", OverflowError)


# ---- malformed input ----


def test_corrupt_crc() -> None:
    data = bytearray(build_batch([SimpleRecord(1, b"k", b"value")] * 3))
    data[-2] ^= 0x01
    assert decode(data, check_crcs=True)[:2] == ("error", CorruptRecordError)
    assert decode(data, check_crcs=False)[0] == "ok"


@pytest.mark.parametrize(
    ("records", "count", "error"),
    [
        (raw_record(0, length=100), 1, CorruptRecordError),  # the length overruns the batch
        (raw_record(0, length=-1), 1, CorruptRecordError),
        (raw_record(0) + raw_record(1, length=3), 2, CorruptRecordError),
        (raw_record(0, headers=[(None, b"x")]), 1, CorruptRecordError),  # a null header key
        (raw_record(0, b"key", length=7), 1, CorruptRecordError),  # fields overrun the record
        (raw_record(0) + b"\x00", 1, CorruptRecordError),  # bytes after the records counted
        (raw_record(0, length=9) + b"\x00", 1, CorruptRecordError),  # a record not filled
        (raw_record(0, header_count=-3), 1, CorruptRecordError),  # a negative header count
        (raw_record(0, headers=[(b"\xff", b"x")]), 1, CorruptRecordError),  # a key not UTF-8
        (raw_record(0, headers=[(b"\xc3\xa9", None)]), 1, None),  # a key in UTF-8
        (raw_record(0, length=0), 1, CorruptRecordError),
        (raw_record(0, header_count=5), 1, CorruptRecordError),
        (raw_record(0, key=None, value=None), 1, None),
        (raw_record(0) * 2, 3, CorruptRecordError),  # fewer records than counted
        (b"\x80", 1, CorruptRecordError),  # a truncated varint
        (b"\x80\x80\x80\x80\x80\x01", 1, CorruptRecordError),  # an overlong varint
        (OVERLONG_VARLONG, 1, CorruptRecordError),
        (b"", 0, None),  # no records (last offset delta 0)
    ],
)
def test_malformed_records(records: bytes, count: int, error: type[Exception] | None) -> None:
    outcome = decode(raw_batch(records, count))
    assert outcome[:2] == (("ok", [max(count, 1)]) if error is None else ("error", error))


def test_varints_at_their_limits() -> None:
    records = raw_record(2**31 - 1, ts_delta=-(2**63)) + raw_record(-(2**31), ts_delta=2**62)
    data = raw_batch(records, 2, base_offset=2**40, base_timestamp=0)
    decode(data, 0, 2**63)
    decode(data, -(2**63), 2**63)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        *REJECTED_HEADERS,
        ({"attributes": 5}, UnsupportedCompressionTypeError),  # codec bits 5-7: undefined
        ({"attributes": 7 | 0x20}, None),  # ... unless the batch is a control batch
    ],
)
def test_unusual_headers(change: dict[str, int], error: type[Exception] | None) -> None:
    data = raw_batch(raw_record(0), 1, **change)
    for check_crcs in (True, False):
        outcome = decode(data, check_crcs=check_crcs)
        assert outcome[:2] == (("ok", [1]) if error is None else ("error", error))


def test_negative_records_count() -> None:
    data = bytearray(raw_batch(raw_record(0), 1))
    struct.pack_into(">i", data, HEADER_SIZE - 4, -1)
    assert decode(data, check_crcs=False)[:2] == ("error", CorruptRecordError)


def test_corrupt_compressed_payload() -> None:
    data = bytearray(
        build_batch([SimpleRecord(1, b"k", b"v" * 100)] * 5, compression=CompressionType.GZIP)
    )
    data[HEADER_SIZE + 20] ^= 0xFF
    assert decode(data, check_crcs=False)[:2] == ("error", CorruptRecordError)


@pytest.mark.parametrize("seed", range(4))
def test_random_mutations_never_crash_and_agree(seed: int) -> None:
    rng = random.Random(seed)
    for data in mutated_fetches(rng, 2_500):
        # Mostly without the CRC check, which would stop nearly every mutation at the header.
        check_crcs = rng.random() < 0.1
        min_offset = rng.choice((0, 0, 2, 5))
        end_offset = rng.choice((2**62, 4, 100))
        assert_same([(data, min_offset, end_offset, check_crcs)], rng.random() < 0.8)


@pytest.mark.parametrize("seed", range(2))
def test_random_records_never_crash_and_agree(seed: int) -> None:
    rng = random.Random(100 + seed)
    for data in random_batches(rng, 1_500):
        assert_same([(data, 0, 2**62, rng.random() < 0.5)], rng.random() < 0.8)


# ---- the compiled builder's own contract ----


@needs_compiled
def test_finish_releases_the_builder() -> None:
    builder = _columns.ColumnBuilder(True)
    builder.add_batches(build_batch([SimpleRecord(1, b"k", b"v")]), 0, 10, True)
    assert builder.finish().count == 1
    assert builder.count == 1
    with pytest.raises(RuntimeError):
        builder.finish()
    with pytest.raises(RuntimeError):
        builder.add_batches(b"", 0, 10, True)


@needs_compiled
def test_a_builder_never_initialised_refuses_calls() -> None:
    builder = _columns.ColumnBuilder.__new__(_columns.ColumnBuilder)
    with pytest.raises(RuntimeError):
        builder.add_batches(b"", 0, 10, True)
    with pytest.raises(RuntimeError):
        builder.finish()


@needs_compiled
def test_a_column_past_its_int32_offsets_raises_before_the_record_is_added() -> None:
    data = build_batch([SimpleRecord(1, b"k", b"v" * 100, [("h", b"x")])] * 3)
    previous = _columns._set_max_column_bytes(250)
    try:
        builder = _columns.ColumnBuilder(True)
        with pytest.raises(OverflowError):
            builder.add_batches(data, 0, 10, False)
        assert builder.count == 2  # the third value would pass 250 bytes
        columns = builder.finish()
        assert columns.value_offsets == le("i", [0, 100, 200])
        assert columns.header_offsets == le("i", [0, 1, 2])
        _columns._set_max_column_bytes(15)
        data = build_batch([SimpleRecord(1, b"k", b"v", [("h", b"x" * 10)])] * 3)
        builder = _columns.ColumnBuilder(True)
        with pytest.raises(OverflowError):
            builder.add_batches(data, 0, 10, False)
        assert builder.count == 1  # the second header value would pass 15 bytes
    finally:
        _columns._set_max_column_bytes(previous)


@needs_compiled
def test_bad_arguments() -> None:
    with pytest.raises(TypeError):
        _columns.ColumnBuilder()  # type: ignore[call-arg]
    builder = _columns.ColumnBuilder(False)
    with pytest.raises(TypeError):
        builder.add_batches("text", 0, 10, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        builder.add_batches(b"", 0.5, 10, True)  # type: ignore[arg-type]
    assert builder.add_batches(data=b"", min_offset=3, end_offset=10, check_crcs=False) == 3


def test_the_crc_covers_attributes_to_the_end() -> None:
    """The CRC check runs over the bytes the batch module says (attributes .. end)."""
    data = bytearray(raw_batch(raw_record(0), 1))
    data[ATTRIBUTES_OFFSET - 1] ^= 0xFF  # inside the stored CRC: a mismatch
    assert decode(data)[:2] == ("error", CorruptRecordError)
    data = bytearray(raw_batch(raw_record(0), 1))
    data[LOG_OVERHEAD] ^= 0xFF  # the leader epoch, not covered
    assert decode(data)[0] == "ok"

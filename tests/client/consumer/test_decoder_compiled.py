"""``client.consumer.decoder``: ``decode`` (the compiled loop of ``odradek._records`` with the
reference for what it declines) against ``py_decode`` (the reference) — the same records, field
by field and type by type, and the same errors, message included, on hypothesis batches (every
codec, headers, null keys and values, control batches, records before the fetch offset, cut-off
tails), hand-made malformed records and random mutations; and the compiled loop declines no
valid batch."""

from __future__ import annotations

import gc
import random
import shutil
import struct
from collections.abc import Sequence
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
    with_crc,
)

from odradek.client.consumer.decoder import (
    COMPILED_MODULE,
    compiled_decoder,
    decode,
    py_decode,
)
from odradek.client.consumer.record import ConsumerRecord
from odradek.errors import (
    CorruptRecordError,
    UnsupportedCompressionTypeError,
)
from odradek.records.batch import HEADER_SIZE, LOG_OVERHEAD, CompressionType, TimestampType
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.records.varint import encode_varint

compiled = compiled_decoder()
needs_compiled = pytest.mark.skipif(compiled is None, reason=f"{COMPILED_MODULE} is not built")

Outcome = tuple[Any, ...]

# ---- helpers ----


def outcome(function: Any, data: bytes, fetch_offset: int, check_crcs: bool) -> Outcome:
    """What ``function`` gives: the records with every field's type, or the error and message."""
    try:
        records = function("t", 3, data, fetch_offset, check_crcs=check_crcs)
    except Exception as error:
        return ("error", type(error), str(error))
    assert all(type(record) is ConsumerRecord for record in records)
    return ("ok", records, [tuple(type(field) for field in record) for record in records])


def assert_same(data: bytes, fetch_offset: int = 0, check_crcs: bool = True) -> Outcome:
    """Both decoders agree; returns the reference's outcome."""
    expected = outcome(py_decode, data, fetch_offset, check_crcs)
    assert outcome(decode, data, fetch_offset, check_crcs) == expected
    return expected


def assert_no_decline(data: bytes, fetch_offset: int, check_crcs: bool) -> None:
    """The compiled loop alone goes through every whole batch of valid data."""
    if compiled is None:
        return
    out: list[ConsumerRecord] = []
    stop = compiled(out, data, 0, fetch_offset, check_crcs, "t", 3, ConsumerRecord)
    end = len(data)
    if end - stop >= LOG_OVERHEAD:
        (size,) = struct.unpack_from(">i", data, stop + 8)
        assert stop + size + LOG_OVERHEAD > end, f"declined a valid batch at {stop}"
    assert out == py_decode(
        "t", 3, data, fetch_offset, check_crcs=check_crcs
    )  # fmt: skip


# ---- hypothesis batches ----

_batch_specs = batch_specs(
    st.binary(min_size=100, max_size=9000)  # lengths of two and three varint bytes
)


# ---- the compiled loop is there ----


def test_the_compiled_decoder_is_built_where_there_is_a_compiler() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the Python decoder is the fallback")
    assert compiled is not None, f"{COMPILED_MODULE} was not built (see the pip install log)"


# ---- the same records ----


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=_batch_specs,
    base_offset=st.sampled_from([0, 1_000, 2**40, 2**63 - 2**20]),
    fetch_from=st.integers(-5, 70),
    cut=st.integers(min_value=0, max_value=200),
    check_crcs=st.booleans(),
)
def test_same_records_as_the_reference(
    specs: Sequence[Any], base_offset: int, fetch_from: int, cut: int, check_crcs: bool
) -> None:
    data, _end = build_fetch(specs, base_offset)
    # Sometimes whole, sometimes with the last batch cut off (the broker's size limit).
    data = data[: len(data) - cut] if cut < 100 else data
    fetch_offset = base_offset + fetch_from
    result = assert_same(data, fetch_offset, check_crcs)
    assert result[0] == "ok"
    assert all(record.offset >= fetch_offset for record in result[1])
    assert_no_decline(data, fetch_offset, check_crcs)


def test_record_fields() -> None:
    records = raw_record(0, b"key", None, [(b"h\xc3\xa9", b"xy"), (b"n", None)], ts_delta=5)
    records += raw_record(2, None, b"value", ts_delta=-3)
    data = raw_batch(records, 2, base_offset=40, partition_leader_epoch=9)
    result = assert_same(data)
    assert result[1] == [
        ConsumerRecord(
            "t", 3, 40, 1_005, TimestampType.CREATE_TIME, b"key", None,
            (("hé", b"xy"), ("n", None)), 3, -1, 3 + 2 + 1, 9,
        ),
        ConsumerRecord(
            "t", 3, 42, 997, TimestampType.CREATE_TIME, None, b"value", (), -1, 5, -1, 9
        ),
    ]  # fmt: skip
    assert result[1][0].timestamp_type is TimestampType.CREATE_TIME


@pytest.mark.parametrize("compression", list(CompressionType))
def test_log_append_time_gives_every_record_the_max_timestamp(
    compression: CompressionType,
) -> None:
    data = build_batch(
        [SimpleRecord(1, None, b"a"), SimpleRecord(5, b"k", b"b")],
        base_offset=3,
        compression=compression,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    result = assert_same(data)
    assert [(r.timestamp, r.timestamp_type) for r in result[1]] == [
        (5, TimestampType.LOG_APPEND_TIME),
        (5, TimestampType.LOG_APPEND_TIME),
    ]
    assert_no_decline(data, 0, True)


def test_control_batches_and_records_before_the_fetch_offset_are_skipped() -> None:
    data = build_batch([SimpleRecord(1, None, b"x")] * 3, control=True) + build_batch(
        [SimpleRecord(1, None, str(i).encode()) for i in range(10)],
        base_offset=3,
        compression=CompressionType.LZ4,
    )
    result = assert_same(data, fetch_offset=8)
    assert [r.offset for r in result[1]] == [8, 9, 10, 11, 12]
    assert assert_same(data, fetch_offset=13)[1] == []
    assert_no_decline(data, 8, True)


def test_a_zero_header_count_written_long_is_no_headers() -> None:
    record = raw_record(0)
    # The header count 0 as two bytes (0x80 0x00): the record is one byte longer.
    body = record[1:-1] + b"\x80\x00"
    data = raw_batch(encode_varint(len(body)) + body, 1)
    result = assert_same(data)
    assert result[1][0].headers == ()
    assert result[1][0].serialized_header_size == -1


def test_offsets_and_timestamps_past_int64_go_to_the_reference() -> None:
    near = 2**63 - 2
    records = raw_record(0) + raw_record(1) + raw_record(5)
    data = raw_batch(records, 3, base_offset=near, last_offset_delta=5)
    result = assert_same(data, fetch_offset=near)
    assert [r.offset for r in result[1]] == [near, near + 1, near + 5]
    data = raw_batch(raw_record(0, ts_delta=2**62), 1, base_timestamp=2**62 + 2**61)
    assert assert_same(data)[1][0].timestamp == 2**63 + 2**61
    data = raw_batch(raw_record(0, ts_delta=-(2**63)), 1, base_timestamp=-5)
    assert assert_same(data)[1][0].timestamp == -(2**63) - 5
    # A batch past int64 but before the fetch offset is skipped, not declined.
    for fetch_offset in (2**63 - 1, 2**63, 2**70, -(2**70)):
        assert_same(raw_batch(raw_record(0), 1, base_offset=near), fetch_offset)


def test_varints_at_their_limits() -> None:
    records = raw_record(2**31 - 1, ts_delta=-(2**63)) + raw_record(-(2**31), ts_delta=2**62)
    data = raw_batch(records, 2, base_offset=2**40, base_timestamp=0)
    assert len(assert_same(data)[1]) == 2
    assert_no_decline(data, 0, True)


# ---- the same errors ----


@pytest.mark.parametrize(
    "records_and_count",
    [
        (raw_record(0, length=100), 1),  # the length overruns the batch
        (raw_record(0, length=-1), 1),
        (raw_record(0, length=0), 1),
        (raw_record(0) + raw_record(1, length=3), 2),
        (raw_record(0, headers=[(None, b"x")]), 1),  # a null header key
        (raw_record(0, headers=[(b"\xff", b"x")]), 1),  # a header key that is not UTF-8
        (raw_record(0, headers=[(b"k", b"x")], header_count=-1), 1),
        (raw_record(0, header_count=5), 1),
        (raw_record(0, header_count=2**30), 1),
        (raw_record(0, b"key", length=7), 1),  # fields overrun the record
        (raw_record(0) + b"\x00", 1),  # bytes after records_count records
        (raw_record(0, length=9) + b"\x00", 1),  # a record not filled
        (raw_record(0) * 2, 3),  # fewer records than counted
        (b"\x80", 1),  # a truncated varint
        (b"\x80\x80\x80\x80\x80\x01", 1),  # an overlong varint
        (OVERLONG_VARLONG, 1),  # an overlong varlong
        (b"", 0),  # no records
        (b"\x00", 0),
    ],
)
def test_malformed_records(records_and_count: tuple[bytes, int]) -> None:
    records, count = records_and_count
    for check_crcs in (True, False):
        result = assert_same(raw_batch(records, count), check_crcs=check_crcs)
        assert result[0] == ("ok" if records == b"" else "error")
    # After a good batch: its records are not kept by either.
    assert_same(build_batch([SimpleRecord(1, None, b"v")]) + raw_batch(records, count, 1))


def test_key_and_value_lengths_below_minus_one() -> None:
    for key, value in ((-2, 1), (1, -2)):
        body = b"\x00\x00\x00" + encode_varint(key) + encode_varint(value) + b"v\x00"
        result = assert_same(raw_batch(encode_varint(len(body)) + body, 1))
        assert result[:2] == ("error", CorruptRecordError)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        *REJECTED_HEADERS,
        ({"attributes": 5}, UnsupportedCompressionTypeError),  # codec bits 5-7
        ({"attributes": 7 | 0x20}, None),  # ... unless the batch is a control batch
    ],
)
def test_unusual_headers(change: dict[str, int], error: type[Exception] | None) -> None:
    data = raw_batch(raw_record(0), 1, **change)
    for check_crcs in (True, False):
        result = assert_same(data, check_crcs=check_crcs)
        assert result[:2] == (("ok", []) if error is None else ("error", error))


def test_negative_records_count_and_short_lengths() -> None:
    data = bytearray(raw_batch(raw_record(0), 1))
    struct.pack_into(">i", data, HEADER_SIZE - 4, -1)
    assert assert_same(bytes(data), check_crcs=False)[:2] == ("error", CorruptRecordError)
    for batch_length in (1, 20, HEADER_SIZE - LOG_OVERHEAD - 1):
        short = bytearray(raw_batch(raw_record(0), 1))
        struct.pack_into(">i", short, 8, batch_length)
        for check_crcs in (True, False):
            assert assert_same(bytes(short), check_crcs=check_crcs)[0] == "error"
    for batch_length in (0, -1, -(2**31)):  # no batch at all: nothing decoded, no error
        empty = bytearray(raw_batch(raw_record(0), 1))
        struct.pack_into(">i", empty, 8, batch_length)
        assert assert_same(bytes(empty))[:2] == ("ok", [])


def test_corrupt_crc_and_compressed_payload() -> None:
    data = bytearray(build_batch([SimpleRecord(1, b"k", b"v" * 100)] * 5))
    data[-3] ^= 0xFF
    assert assert_same(bytes(data))[:2] == ("error", CorruptRecordError)
    assert assert_same(bytes(data), check_crcs=False)[0] == "ok"
    for compression in list(CompressionType)[1:]:
        data = bytearray(
            build_batch([SimpleRecord(1, b"k", b"v" * 100)] * 5, compression=compression)
        )
        data[HEADER_SIZE + 5 : HEADER_SIZE + 25] = b"\x17" * 20
        for check_crcs in (True, False):
            assert assert_same(with_crc(data), check_crcs=check_crcs)[0] == "error"


# ---- random mutations ----


@pytest.mark.parametrize("seed", range(4))
def test_random_mutations_never_crash_and_agree(seed: int) -> None:
    rng = random.Random(seed)
    for data in mutated_fetches(rng, 2_500):
        # Mostly without the CRC check, which would stop nearly every mutation at the header.
        assert_same(data, rng.choice((0, 0, 2, 5)), check_crcs=rng.random() < 0.1)
        if rng.random() < 0.1:
            # Mutations of the records only, under a correct CRC.
            assert_same(with_crc(data), 0)


@pytest.mark.parametrize("seed", range(2))
def test_random_records_never_crash_and_agree(seed: int) -> None:
    rng = random.Random(100 + seed)
    for data in random_batches(rng, 1_500, more_items=[b"\xc3\xa9"], header_counts=True):
        assert_same(data, rng.choice((0, 0, 1, 3)), check_crcs=rng.random() < 0.5)


# ---- the compiled loop's own contract ----


@needs_compiled
def test_records_are_kept_out_of_the_cyclic_gc() -> None:
    data = build_batch([SimpleRecord(1, b"k", b"v", [("h", b"x")])] * 3)
    records = decode("t", 0, data, 0, check_crcs=True)  # fmt: skip
    assert records
    assert not any(gc.is_tracked(record) for record in records)
    gc.collect()
    assert records == py_decode("t", 0, data, 0, check_crcs=True)  # fmt: skip


@needs_compiled
def test_decode_batches_checks_its_arguments() -> None:
    assert compiled is not None
    data = build_batch([SimpleRecord(1, None, b"v")])
    with pytest.raises(TypeError):
        compiled([], data, 0, 0, True, "t", 0)
    with pytest.raises(TypeError):
        compiled((), data, 0, 0, True, "t", 0, ConsumerRecord)
    with pytest.raises(TypeError):
        compiled([], data, 0, 0, True, "t", 0, dict)
    with pytest.raises(TypeError):
        compiled([], "not bytes", 0, 0, True, "t", 0, ConsumerRecord)
    with pytest.raises(ValueError, match="pos"):
        compiled([], data, len(data) + 1, 0, True, "t", 0, ConsumerRecord)
    with pytest.raises(OverflowError):
        compiled([], data, 0, 2**63, True, "t", 0, ConsumerRecord)
    out: list[Any] = ["kept"]
    assert compiled(out, data, 0, 0, True, "t", 0, ConsumerRecord) == len(data)
    assert out[0] == "kept"
    assert len(out) == 2


@needs_compiled
def test_a_declined_batch_leaves_no_records_behind() -> None:
    assert compiled is not None
    good = build_batch([SimpleRecord(1, None, b"v")] * 2)
    bad = raw_batch(raw_record(0) + raw_record(1) + raw_record(2, length=2), 3, base_offset=2)
    out: list[Any] = []
    assert compiled(out, good + bad + good, 0, 0, True, "t", 0, ConsumerRecord) == len(good)
    assert [r.offset for r in out] == [0, 1]

"""``records.record_format``, the one Python reference for the records of a v2 batch, and every
reader held to it.

The reference's own contract (visitor calls, the offset window, errors, visitor errors passed
through), then the readers built on it or twinned with it — the codec (``Record``), the
consumer's decoder in Python and compiled (``odradek._records``), the column builder in Python
and compiled (``odradek._columns``) — on hypothesis batches of every kind and on thousands of
random malformed records: each reader gives the records the reference visits, and raises the
reference's error, class and message (the consumer puts ``topic-partition: `` before it).
"""

from __future__ import annotations

import random
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests._batch_inputs import batch_specs, build_fetch, random_batches, raw_batch, raw_record

from odradek.client.consumer import decoder
from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records import columns
from odradek.records.batch import LOG_OVERHEAD, parse_header, validate_batch
from odradek.records.codec import build_batch, decode_records
from odradek.records.record import Header, SimpleRecord
from odradek.records.record_format import read_batch_records, read_records
from odradek.records.varint import encode_varint

Fields = tuple[int, int, bytes | None, bytes | None, tuple[Header, ...]]
Outcome = tuple[Any, ...]
END = 2**62

# ---- the reference's own contract ----


def visited(
    data: bytes, count: int, min_offset: int = -(2**64), end_offset: int = 2**64
) -> list[Fields]:
    out: list[Fields] = []
    read_records(
        data, 0, len(data), count=count, base_offset=100, base_timestamp=1_000,
        log_append_time=None, visit=lambda *fields: out.append(fields),
        min_offset=min_offset, end_offset=end_offset,
    )  # fmt: skip
    return out


def test_the_visitor_gets_each_records_fields_in_order() -> None:
    data = raw_record(0, b"k", None, [(b"h\xc3\xa9", b"x"), (b"n", None)], ts_delta=5)
    data += raw_record(3, None, b"", ts_delta=-7)
    assert visited(data, 2) == [
        (100, 1_005, b"k", None, (("hé", b"x"), ("n", None))),
        (103, 993, None, b"", ()),
    ]


def test_log_append_time_gives_every_record_that_time() -> None:
    out: list[Fields] = []
    data = raw_record(0, ts_delta=5) + raw_record(1, ts_delta=9)
    read_records(data, 0, len(data), count=2, base_offset=0, base_timestamp=1,
                 log_append_time=77, visit=lambda *f: out.append(f))  # fmt: skip
    assert [fields[1] for fields in out] == [77, 77]


def test_only_records_in_the_window_are_visited_but_all_are_checked() -> None:
    data = b"".join(raw_record(i, str(i).encode()) for i in range(5))
    assert [f[0] for f in visited(data, 5, 101, 103)] == [101, 102]
    with pytest.raises(CorruptRecordError, match="invalid header count -1"):
        visited(data[:-1] + b"\x01", 5, 101, 103)  # a bad record after the window


def test_a_visitors_own_error_passes_through_unchanged() -> None:
    """An IndexError from the visitor is the visitor's, not a truncated record."""

    def visit(*_fields: object) -> None:
        raise IndexError("the visitor's")

    data = raw_record(0)
    with pytest.raises(IndexError, match="the visitor's"):
        read_records(data, 0, len(data), count=1, base_offset=0, base_timestamp=0,
                     log_append_time=None, visit=visit)  # fmt: skip


@pytest.mark.parametrize(
    ("records", "count", "message"),
    [
        (raw_record(0, length=0), 1, "record 0 declares 0 bytes"),
        (raw_record(0, length=40), 1, "record 0 declares 40 bytes"),
        (raw_record(0) + b"\x00", 1, "1 bytes remain after the 1 records"),
        (raw_record(0, header_count=-1), 1, "invalid header count -1"),
        (raw_record(0, headers=[(None, b"v")]), 1, "invalid header key length -1"),
        (raw_record(0, headers=[(b"\xff", b"v")]), 1, "not valid UTF-8"),
        (raw_record(0, length=9) + b"\x00", 1, "declares 9 bytes but its fields take 8"),
        (encode_varint(5) + b"\x00\x00\x00" + encode_varint(100) + b"k", 1, "truncated record 0"),
        (encode_varint(4) + b"\x00\x00\x00" + encode_varint(-2), 1, "key length -2"),
    ],
)
def test_malformed_records_raise_corrupt_record_error(
    records: bytes, count: int, message: str
) -> None:
    with pytest.raises(CorruptRecordError, match=message):
        visited(records, count)


def test_an_unknown_codec_raises_unsupported_compression_type() -> None:
    data = raw_batch(raw_record(0), 1, attributes=6)
    with pytest.raises(UnsupportedCompressionTypeError, match="codec 6"):
        read_batch_records(data, parse_header(data), 0, lambda *f: None)


# ---- every reader against the reference ----


def wanted_batches(data: bytes, fetch_offset: int, check_crcs: bool) -> Iterator[tuple[int, Any]]:
    """(position, header) of the whole batches of ``data`` whose records a fetch from
    ``fetch_offset`` wants (not control batches, not batches before it), as every reader
    frames them: a batch cut off at the end of the bytes ends the fetch."""
    pos = 0
    while len(data) - pos >= LOG_OVERHEAD:
        size = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True) + LOG_OVERHEAD
        if size <= LOG_OVERHEAD or pos + size > len(data):
            break
        header = validate_batch(data, pos) if check_crcs else parse_header(data, pos)
        if not header.is_control and header.last_offset >= fetch_offset:
            yield pos, header
        pos += size


def reference(data: bytes, fetch_offset: int, check_crcs: bool) -> Outcome:
    """The records the reference visits in the wanted batches of ``data``, or its error."""
    out: list[Fields] = []
    try:
        for pos, header in wanted_batches(data, fetch_offset, check_crcs):
            read_batch_records(data, header, pos, lambda *f: out.append(f), min_offset=fetch_offset)
    except Exception as error:
        return ("error", type(error), str(error))
    return ("ok", out)


def by_consumer(function: Callable[..., Any]) -> Callable[[bytes, int, bool], Outcome]:
    def run(data: bytes, fetch_offset: int, check_crcs: bool) -> Outcome:
        try:
            records = function("t", 3, data, fetch_offset, check_crcs=check_crcs)  # fmt: skip
        except Exception as error:
            return ("error", type(error), str(error).removeprefix("t-3: "))
        return ("ok", [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records])

    return run


def by_codec(data: bytes, fetch_offset: int, check_crcs: bool) -> Outcome:
    out: list[Fields] = []
    try:
        for pos, header in wanted_batches(data, fetch_offset, check_crcs):
            out += [
                (r.offset, r.timestamp, r.key, r.value, r.headers)
                for r in decode_records(data, header, pos)
                if r.offset >= fetch_offset
            ]
    except Exception as error:
        return ("error", type(error), str(error))
    return ("ok", out)


def _ints(typecode: str, buffer: bytes) -> list[int]:
    items = array(typecode, buffer)
    if sys.byteorder != "little":
        items.byteswap()
    return list(items)


def _binary(validity: bytes | None, offsets: bytes, data: bytes) -> list[bytes | None]:
    ends = _ints("i", offsets)
    return [
        None if validity is not None and not validity[i >> 3] >> (i & 7) & 1
        else data[ends[i] : ends[i + 1]]
        for i in range(len(ends) - 1)
    ]  # fmt: skip


def by_columns(make: Callable[[bool], Any]) -> Callable[[bytes, int, bool], Outcome]:
    def run(data: bytes, fetch_offset: int, check_crcs: bool) -> Outcome:
        builder = make(True)
        try:
            builder.add_batches(data, fetch_offset, END, check_crcs)
        except Exception as error:
            return ("error", type(error), str(error))
        c = builder.finish()
        header_keys = _binary(None, c.header_key_offsets, c.header_key_data)
        header_values = _binary(c.header_value_validity, c.header_value_offsets,
                                c.header_value_data)  # fmt: skip
        starts = _ints("i", c.header_offsets)
        headers = [
            tuple((header_keys[h].decode(), header_values[h])  # type: ignore[union-attr]
                  for h in range(starts[i], starts[i + 1]))
            for i in range(c.count)
        ]  # fmt: skip
        return ("ok", list(zip(
            _ints("q", c.offsets), _ints("q", c.timestamps),
            _binary(c.key_validity, c.key_offsets, c.key_data),
            _binary(c.value_validity, c.value_offsets, c.value_data), headers, strict=True,
        )))  # fmt: skip

    return run


_compiled_columns = columns._compiled()
READERS: dict[str, Callable[[bytes, int, bool], Outcome]] = {
    "codec": by_codec,
    "consumer (Python)": by_consumer(decoder.py_decode),
    "columns (Python)": by_columns(columns.PyColumnBuilder),
}
if decoder.compiled_decoder() is not None:
    READERS["consumer (compiled)"] = by_consumer(decoder.decode)
if _compiled_columns is not None:
    READERS["columns (compiled)"] = by_columns(_compiled_columns)


def test_both_compiled_readers_are_held_to_the_reference_where_built() -> None:
    assert ("consumer (compiled)" in READERS) == (decoder.compiled_decoder() is not None)
    assert ("columns (compiled)" in READERS) == (_compiled_columns is not None)


def assert_all_agree(data: bytes, fetch_offset: int = 0, check_crcs: bool = True) -> Outcome:
    expected = reference(data, fetch_offset, check_crcs)
    for name, read in READERS.items():
        assert read(data, fetch_offset, check_crcs) == expected, name
    return expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=batch_specs(st.binary(min_size=100, max_size=9000)),
    fetch_from=st.integers(-3, 60),
    cut=st.integers(min_value=0, max_value=200),
    check_crcs=st.booleans(),
)
def test_every_reader_gives_the_records_the_reference_visits(
    specs: Sequence[Any], fetch_from: int, cut: int, check_crcs: bool
) -> None:
    data, _end = build_fetch(specs, 1_000)
    data = data[: len(data) - cut] if cut < 100 else data  # a cut-off tail batch
    outcome = assert_all_agree(data, 1_000 + fetch_from, check_crcs)
    assert outcome[0] == "ok"


@pytest.mark.parametrize("seed", range(3))
def test_every_reader_raises_the_references_error_for_malformed_records(seed: int) -> None:
    rng = random.Random(300 + seed)
    errors = 0
    for data in random_batches(rng, 1_500, more_items=[b"\xc3\xa9", b"\xff"], header_counts=True):
        errors += assert_all_agree(data, rng.choice((0, 0, 1, 3)), rng.random() < 0.5)[0] == "error"
    assert errors > 300  # the inputs do exercise the error paths


@pytest.mark.parametrize(
    "body",
    [
        b"\x00\x00\x00" + encode_varint(-2) + b"\x02v\x00",  # a key length below -1
        b"\x00\x00\x00\x00" + encode_varint(-2) + b"\x00",  # a value length below -1
        b"\x00\x00\x00\x00\x00\x02\x02h" + encode_varint(-2),  # a header value length below -1
        b"\x00\x00\x00\x00\x00\x01",  # a header count of -1
        b"\x00\x00\x00\x00\x00\x02\x04\xed\xa0\x00",  # a surrogate in a header key
        b"\x00\x00\x00\x00\x00\x02\x04\xc3\xa9\x00",  # "é": accepted
    ],
)
def test_every_reader_on_hand_made_records(body: bytes) -> None:
    data = raw_batch(encode_varint(len(body)) + body, 1)
    outcome = assert_all_agree(data)
    assert outcome[0] == ("ok" if body.endswith(b"\xc3\xa9\x00") else "error")


def test_every_reader_on_an_unknown_codec_and_trailing_bytes() -> None:
    for data in (
        raw_batch(raw_record(0), 1, attributes=5),
        raw_batch(raw_record(0) + b"\x00", 1),
        build_batch([SimpleRecord(1, b"k", b"v")]) + raw_batch(raw_record(0) + b"\x00", 1, 1),
    ):
        assert assert_all_agree(data)[0] == "error"

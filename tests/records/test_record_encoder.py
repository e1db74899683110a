"""Tests for odradek._record_encoder, the compiled twin of ``record_format.encode_record``.

The Python encoder is the reference: for every argument list the compiled one must return the
same bytes, or raise the same exception (class and message). It encodes the common arguments
itself and hands everything else to the reference; both kinds are covered here, the common
ones by hypothesis, the handed-over ones by hand.
"""

from __future__ import annotations

import shutil
from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.records import codec, record_format
from odradek.records.codec import (
    COMPILED_ENCODER_MODULE,
    build_batch,
    compiled_encode_record,
    decode_batch,
)
from odradek.records.record import SimpleRecord
from odradek.records.varint import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

compiled = compiled_encode_record()
needs_compiled = pytest.mark.skipif(
    compiled is None, reason=f"{COMPILED_ENCODER_MODULE} is not built"
)
reference = record_format.encode_record


def outcome(function: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", function(*args))
    except Exception as error:
        return ("error", (type(error), str(error)))


def assert_same(*args: Any) -> tuple[str, Any]:
    expected = outcome(reference, *args)
    assert compiled is not None
    assert outcome(compiled, *args) == expected
    return expected


def test_the_compiled_encoder_is_built_where_there_is_a_compiler() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the Python encoder is the fallback")
    assert compiled is not None, f"{COMPILED_ENCODER_MODULE} was not built (see the pip log)"
    assert codec._encode_record is compiled


# ---- the arguments it encodes itself ----

fields = st.none() | st.binary(max_size=300)
header_keys = st.text(max_size=20)  # any str hypothesis makes: surrogates included
headers = st.lists(st.tuples(header_keys, fields), max_size=20)


@needs_compiled
@settings(max_examples=1500, deadline=None)
@given(
    offset_delta=st.integers(INT32_MIN, INT32_MAX),
    timestamp_delta=st.integers(INT64_MIN, INT64_MAX),
    key=fields,
    value=fields,
    record_headers=headers,
    as_tuple=st.booleans(),
)
def test_same_bytes_as_the_reference(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    record_headers: list[tuple[str, bytes | None]],
    as_tuple: bool,
) -> None:
    chosen: Any = tuple(record_headers) if as_tuple else record_headers
    assert_same(offset_delta, timestamp_delta, key, value, chosen)


@needs_compiled
@pytest.mark.parametrize(
    ("offset_delta", "timestamp_delta"),
    [
        (0, 0),
        (63, -64),
        (64, 63),
        (-65, 64),
        (INT32_MAX, INT64_MAX),
        (INT32_MIN, INT64_MIN),
        (8191, 1 << 40),
        (-(1 << 20), -(1 << 56)),
    ],
)
def test_varint_edges(offset_delta: int, timestamp_delta: int) -> None:
    assert assert_same(offset_delta, timestamp_delta, b"k", b"v", ())[0] == "ok"


@needs_compiled
def test_many_headers_and_header_pairs() -> None:
    pair = namedtuple("pair", "key value")  # a tuple subclass, as typed header pairs are
    many = [(f"h{i}", bytes([i]) * i) for i in range(100)]  # past the inline header room
    for chosen in (many, tuple(many), [pair("k", b"v"), pair("é", None)], [("", b"")]):
        assert assert_same(1, 2, None, b"value", chosen)[0] == "ok"


@needs_compiled
def test_large_fields() -> None:
    big = bytes(range(256)) * 4096  # 1 MB: a length of three varint bytes
    assert assert_same(0, 0, big, big, [("key", big)])[0] == "ok"


# ---- the arguments it hands to the reference ----


class IntLike(int):
    pass


class Text(str):
    pass


HANDED_OVER = [
    pytest.param((INT32_MAX + 1, 0, None, None, ()), id="offset delta past int32"),
    pytest.param((INT32_MIN - 1, 0, None, None, ()), id="offset delta below int32"),
    pytest.param((0, INT64_MAX + 1, None, None, ()), id="timestamp delta past int64"),
    pytest.param((0, INT64_MIN - 1, None, None, ()), id="timestamp delta below int64"),
    pytest.param((0, 1 << 80, None, None, ()), id="timestamp delta far past int64"),
    pytest.param((True, False, None, None, ()), id="bools"),
    pytest.param((IntLike(3), IntLike(4), None, None, ()), id="int subclasses"),
    pytest.param((1.0, 0, None, None, ()), id="float delta"),
    pytest.param((0, "1", None, None, ()), id="str delta"),
    pytest.param((0, 0, bytearray(b"key"), memoryview(b"value"), ()), id="other buffers"),
    pytest.param((0, 0, "key", None, ()), id="str key"),
    pytest.param((0, 0, None, 5, ()), id="int value"),
    pytest.param((0, 0, None, None, [("\udc80", b"v")]), id="lone surrogate header key"),
    pytest.param((0, 0, None, None, [(Text("k"), b"v")]), id="str subclass header key"),
    pytest.param((0, 0, None, None, [(b"k", b"v")]), id="bytes header key"),
    pytest.param((0, 0, None, None, [("k", bytearray(b"v"))]), id="bytearray header value"),
    pytest.param((0, 0, None, None, [("k", "v")]), id="str header value"),
    pytest.param((0, 0, None, None, [("k", b"v", b"w")]), id="three-item header"),
    pytest.param((0, 0, None, None, [["k", b"v"]]), id="list header pair"),
    pytest.param((0, 0, None, None, [None]), id="None header"),
    pytest.param((0, 0, None, None, iter([("k", b"v")])), id="iterator of headers"),
    pytest.param((0, 0, None, None, {"k": b"v"}), id="mapping of headers"),
    pytest.param((0, 0, None, None, None), id="None headers"),
    pytest.param((0, 0, None, None, 7), id="int headers"),
]


@needs_compiled
@pytest.mark.parametrize("args", HANDED_OVER)
def test_anything_else_answers_as_the_reference(args: tuple[Any, ...]) -> None:
    if isinstance(args[4], type(iter([]))):  # an iterator is spent by the first call
        expected = outcome(reference, *args[:4], iter([("k", b"v")]))
        assert outcome(compiled, *args[:4], iter([("k", b"v")])) == expected
        return
    assert_same(*args)


@needs_compiled
def test_argument_count() -> None:
    assert compiled is not None
    with pytest.raises(TypeError, match="takes 5 arguments"):
        compiled(0, 0, None, None)


# ---- through the codec ----


@needs_compiled
def test_batches_built_with_it_decode_to_their_records() -> None:
    records = [
        SimpleRecord(
            1_700_000_000_000 + i,
            None if i % 3 == 0 else b"k%d" % i,
            b"v" * i,
            (("h", b"x"), ("n", None)) if i % 2 else (),
        )
        for i in range(200)
    ]
    decoded = decode_batch(build_batch(records, base_offset=40))
    assert [
        (record.offset, record.timestamp, record.key, record.value, record.headers)
        for record in decoded.records
    ] == [(40 + i, s.timestamp_ms, s.key, s.value, tuple(s.headers)) for i, s in enumerate(records)]

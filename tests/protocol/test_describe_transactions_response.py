"""The hand-written DescribeTransactions v0 response reader: the same fields as kio's reader
for any answer kio can read, the start time -1 Kafka answers for an id with no open
transaction (which kio refuses), and malformed frames refused as ``ProtocolError``."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_response_schema
from kio.serial import entity_reader
from kio.serial.errors import SerialError

from odradek.errors import ProtocolError
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.builder import build_response
from odradek.protocol.client_codec import _plain, decode_response
from odradek.protocol.codec import encode_response
from odradek.protocol.describe_transactions_response import decode_describe_transactions_v0

_KEY = ApiKey.DESCRIBE_TRANSACTIONS
_CORRELATION_ID = 7
_names = st.text(min_size=1, max_size=12)
_int32 = st.integers(0, 2**31 - 1)


def _frame(body: dict[str, Any]) -> bytes:
    """The response frame (no size prefix) as the broker sends it: correlation id, the v1
    header's empty tagged fields, the body."""
    return encode_response(1, _CORRELATION_ID, build_response(_KEY, 0, body))[4:]


def _state(start_time: int, topics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "error_code": 0,
        "transactional_id": "writer",
        "transaction_state": "Empty",
        "transaction_timeout": 60_000,
        "transaction_start_time": start_time,
        "producer_id": 4,
        "producer_epoch": 1,
        "topics": topics or [],
    }


_states = st.builds(
    lambda error, tid, state, timeout, start, pid, epoch, topics: {
        "error_code": error,
        "transactional_id": tid,
        "transaction_state": state,
        "transaction_timeout": timeout,
        "transaction_start_time": start,
        "producer_id": pid,
        "producer_epoch": epoch,
        "topics": topics,
    },
    st.sampled_from([0, 15, 16, 105]),
    _names,
    st.sampled_from(["Empty", "Ongoing", "PrepareCommit", "CompleteAbort"]),
    _int32,
    st.integers(0, 2**41),
    st.integers(-1, 2**40),
    st.integers(-1, 2**15 - 1),
    st.lists(
        st.builds(
            lambda topic, partitions: {"topic": topic, "partitions": partitions},
            _names,
            st.lists(_int32, max_size=4),
        ),
        max_size=3,
    ),
)


@given(st.lists(_states, max_size=4), _int32)
def test_reads_what_kio_reads(states: list[dict[str, Any]], throttle_time: int) -> None:
    frame = _frame({"throttle_time": throttle_time, "transaction_states": states})
    schema = load_response_schema(_KEY, 0)
    expected, _ = entity_reader(schema)(frame, 5)
    assert decode_describe_transactions_v0(frame, 5) == _plain(expected)


def test_a_start_time_of_minus_one_is_read_as_it_is() -> None:
    topics = [{"topic": "ledger", "partitions": [0, 2]}]
    frame = _frame({"throttle_time": 0, "transaction_states": [_state(-1, topics)]})
    correlation_id, body = decode_response(_KEY, 0, frame)
    assert correlation_id == _CORRELATION_ID
    assert body["transaction_states"] == [_state(-1, topics)]


def test_the_generic_reader_refuses_that_answer() -> None:
    """Why the hand-written reader exists: if kio starts reading -1, it can go."""
    frame = _frame({"throttle_time": 0, "transaction_states": [_state(-1)]})
    schema = load_response_schema(_KEY, 0)
    with pytest.raises(SerialError, match="negative"):
        entity_reader(schema)(frame, 5)


def test_truncated_and_trailing_bytes_are_refused() -> None:
    topics = [{"topic": "ledger", "partitions": [0, 2]}]
    frame = _frame({"throttle_time": 0, "transaction_states": [_state(-1, topics)]})
    for end in range(5, len(frame)):
        with pytest.raises(ProtocolError, match="malformed DESCRIBE_TRANSACTIONS"):
            decode_response(_KEY, 0, frame[:end])
    with pytest.raises(ProtocolError, match="after the response"):
        decode_response(_KEY, 0, frame + b"\x00")


def test_a_count_past_the_end_is_refused_before_reading() -> None:
    # throttle time, then a compact array announcing 2**20 states in a frame of 10 bytes.
    frame = struct.pack(">i", _CORRELATION_ID) + b"\x00" + struct.pack(">i", 0) + b"\x81\x80\x40"
    with pytest.raises(ProtocolError, match="truncated"):
        decode_response(_KEY, 0, frame)

"""log_validator: parsing an append's batches, the limits and offset checks, and the in-place
rewrites of a leader's batches (base offsets, leader epoch, LogAppendTime), as pure functions.
``test_log`` and ``test_log_append_paths`` cover them through ``Log.append``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from odradek._types import TopicPartition
from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
    RecordBatchTooLargeError,
)
from odradek.records.batch import TimestampType, iter_batches, validate_batch
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.log_validator import (
    batch_totals,
    check_follower_offsets,
    check_keys,
    parse_batches,
    prepare_payload,
)

if TYPE_CHECKING:
    from tests.storage.conftest import BatchFactory

TP = TopicPartition("orders", 0)
START = 1_700_000_000_000
CONFIG = LogConfig()


def prepare(data: bytes | bytearray, **overrides: object) -> tuple[object, list]:
    arguments: dict[str, object] = {
        "assign": True,
        "log_end_offset": 100,
        "config": CONFIG,
        "leader_epoch": None,
        "log_append_time_ms": -1,
        "topic_partition": TP,
    }
    arguments.update(overrides)
    return prepare_payload(data, parse_batches(data), **arguments)  # type: ignore[arg-type]


def test_parse_batches(make_batch: BatchFactory) -> None:
    one = make_batch(2)
    two = one + make_batch(3, base_offset=2)
    assert [(b.position, b.header.records_count) for b in parse_batches(one)] == [(0, 2)]
    assert [(b.position, b.header.records_count) for b in parse_batches(two)] == [
        (0, 2),
        (len(one), 3),
    ]
    with pytest.raises(InvalidRecordError):
        parse_batches(b"")
    damaged = bytearray(two)
    damaged[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        parse_batches(damaged)


def test_one_immutable_leader_batch_is_not_copied(make_batch: BatchFactory) -> None:
    data = make_batch(3)
    payload, batches = prepare(data, leader_epoch=7)
    assert isinstance(payload, tuple)
    head, rest = payload
    assert bytes(rest) == data[len(head) :]
    written = bytes(head) + bytes(rest)
    header = validate_batch(written, 0)
    assert (header.base_offset, header.partition_leader_epoch) == (100, 7)
    assert batches[0].header == header
    assert validate_batch(data, 0).base_offset == 0  # the caller's bytes are untouched


def test_a_bytearray_is_rewritten_in_place(make_batch: BatchFactory) -> None:
    data = bytearray(make_batch(2) + make_batch(1))
    payload, batches = prepare(
        data, log_append_time_ms=START + 5, config=LogConfig(message_timestamp_type="LogAppendTime")
    )
    assert payload is data
    headers = [header for _position, header in iter_batches(data)]
    assert [h.base_offset for h in headers] == [100, 102]
    assert all(h.max_timestamp == START + 5 for h in headers)
    assert all(h.timestamp_type is TimestampType.LOG_APPEND_TIME for h in headers)
    assert [b.header for b in batches] == headers


def test_follower_batches_keep_their_offsets(make_batch: BatchFactory) -> None:
    data = make_batch(2, base_offset=100) + make_batch(1, base_offset=105)
    payload, batches = prepare(data, assign=False)
    assert payload is data
    assert [b.header.base_offset for b in batches] == [100, 105]
    with_epoch = bytearray(data)
    prepare(with_epoch, assign=False, leader_epoch=3)
    assert [h.partition_leader_epoch for _p, h in iter_batches(with_epoch)] == [3, 3]
    with pytest.raises(InvalidRecordError, match="below the next expected offset 100"):
        prepare(make_batch(1, base_offset=99), assign=False)
    backwards = parse_batches(make_batch(2, base_offset=100) + make_batch(1, base_offset=101))
    with pytest.raises(InvalidRecordError, match="below the next expected offset 102"):
        check_follower_offsets(backwards, 100, TP)


def test_limits(make_batch: BatchFactory) -> None:
    data = bytearray(make_batch(3))
    original = bytes(data)
    with pytest.raises(RecordBatchTooLargeError):
        prepare(data, config=LogConfig(segment_bytes=len(data) - 1))
    with pytest.raises(MessageTooLargeError):
        prepare(data, config=LogConfig(max_message_bytes=len(data) - 1))
    assert data == original


def test_check_keys() -> None:
    keyed = build_batch([SimpleRecord(START, b"k", b"v")])
    check_keys(keyed, parse_batches(keyed), TP)
    keyless = build_batch([SimpleRecord(START, b"k", b"v"), SimpleRecord(START, None, b"v")])
    with pytest.raises(InvalidRecordError, match="offset delta 1"):
        check_keys(keyless, parse_batches(keyless), TP)


def test_batch_totals(make_batch: BatchFactory) -> None:
    one = make_batch(timestamps=[START + 3, START + 1])
    assert batch_totals(parse_batches(one)) == (START + 3, 2)
    two = one + make_batch(timestamps=[START + 9], base_offset=2)
    assert batch_totals(parse_batches(two)) == (START + 9, 3)

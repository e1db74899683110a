"""batch_filter: which records survive, the delete horizon (KIP-534), and the rewritten batch
(offsets, codec, producer fields and timestamps kept; valid CRC; decodable by the codec)."""

from __future__ import annotations

import pytest

from odradek.records.batch import CompressionType, TimestampType, validate_batch
from odradek.records.codec import build_batch, decode_batch, decode_batch_records
from odradek.records.record import SimpleRecord
from odradek.storage.cleaner.batch_filter import (
    DELETE_HORIZON_BIT,
    Outcome,
    delete_horizon,
    encode_record,
    filter_batch,
)

T = 1_700_000_000_000
NOW = T + 5_000


def latest(mapping: dict[bytes, int]) -> object:
    return lambda key: mapping.get(key, -1)


def batch(
    *records: tuple[bytes | None, bytes | None], base_offset: int = 100, **kw: object
) -> bytes:
    simple = [
        SimpleRecord(T + n, key, value, (("h", b"v"),)) for n, (key, value) in enumerate(records)
    ]
    return build_batch(simple, base_offset=base_offset, **kw)  # type: ignore[arg-type]


def run(data: bytes, mapping: dict[bytes, int], **kw: object):  # type: ignore[no-untyped-def]
    return filter_batch(
        data,
        validate_batch(data),
        latest(mapping),  # type: ignore[arg-type]
        now_ms=kw.pop("now_ms", NOW),  # type: ignore[arg-type]
        delete_retention_ms=kw.pop("delete_retention_ms", 1_000),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def test_a_batch_whose_records_all_survive_is_kept_byte_for_byte() -> None:
    data = batch((b"a", b"1"), (b"b", b"2"))
    result = run(data, {b"a": 100, b"b": 101})
    assert result.outcome is Outcome.KEPT
    assert result.data is data


@pytest.mark.parametrize("codec", list(CompressionType))
def test_superseded_and_keyless_records_go_and_the_rest_keep_their_offsets(
    codec: CompressionType,
) -> None:
    data = batch((b"a", b"1"), (None, b"x"), (b"b", b"2"), (b"a", b"3"), compression=codec)
    original = validate_batch(data)
    # a@100 superseded by a@103; b@102 superseded by a later b@200 elsewhere.
    result = run(data, {b"a": 103, b"b": 200})
    assert result.outcome is Outcome.REWRITTEN
    assert result.data is not None
    decoded = decode_batch(result.data)
    header = decoded.header
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 103, 1)
    assert header.compression_bits == codec
    assert (header.max_timestamp, header.base_timestamp) == (
        original.max_timestamp,
        original.base_timestamp,
    )
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded.records] == [
        (103, T + 3, b"a", b"3", (("h", b"v"),))
    ]
    assert result.records_removed == 3
    assert result.header == header


def test_producer_fields_and_timestamp_type_are_kept() -> None:
    data = batch(
        (b"a", b"1"),
        (b"a", b"2"),
        producer_id=7,
        producer_epoch=3,
        base_sequence=40,
        partition_leader_epoch=5,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    result = run(data, {b"a": 101})
    assert result.data is not None
    header = decode_batch(result.data).header
    original = validate_batch(data)
    assert header._replace(batch_length=0, crc=0, records_count=0) == original._replace(
        batch_length=0, crc=0, records_count=0
    )
    assert [r.offset for r in decode_batch_records(result.data)] == [101]


def test_a_kept_tombstone_gets_a_delete_horizon_and_goes_once_it_passes() -> None:
    data = batch((b"a", None), (b"b", b"2"))
    result = run(data, {}, now_ms=NOW, delete_retention_ms=1_000)
    assert result.outcome is Outcome.REWRITTEN
    assert result.tombstone_horizon_ms == NOW + 1_000
    assert result.data is not None
    header = validate_batch(result.data)
    assert header.has_delete_horizon
    assert header.attributes & DELETE_HORIZON_BIT
    assert delete_horizon(header) == header.base_timestamp == NOW + 1_000
    # Record timestamps are kept though their deltas are now taken from the horizon.
    assert [(r.timestamp, r.value) for r in decode_batch_records(result.data)] == [
        (T, None),
        (T + 1, b"2"),
    ]
    # A later pass before the horizon keeps it as it is; at the horizon the tombstone goes.
    again = run(result.data, {}, now_ms=NOW + 999)
    assert again.outcome is Outcome.KEPT
    assert again.tombstone_horizon_ms == NOW + 1_000
    expired = run(result.data, {}, now_ms=NOW + 1_000)
    assert expired.outcome is Outcome.REWRITTEN
    assert expired.data is not None
    assert [r.key for r in decode_batch_records(expired.data)] == [b"b"]
    assert expired.tombstone_horizon_ms == -1


def test_a_superseded_tombstone_goes_at_once() -> None:
    data = batch((b"a", None))
    assert run(data, {b"a": 500}).outcome is Outcome.REMOVED


def test_a_batch_left_empty_disappears_or_stays_as_an_empty_header() -> None:
    data = batch((b"a", b"1"), (b"a", b"2"), compression=CompressionType.GZIP)
    removed = run(data, {b"a": 999})
    assert (removed.outcome, removed.data, removed.records_removed) == (Outcome.REMOVED, None, 2)
    kept = run(data, {b"a": 999}, keep_empty=True)
    assert kept.outcome is Outcome.EMPTIED
    assert kept.data is not None
    header = validate_batch(kept.data)
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 101, 0)
    assert header.compression_bits == CompressionType.NONE
    assert len(kept.data) == 61
    assert decode_batch_records(kept.data) == []


@pytest.mark.parametrize("kind", ["control", "transactional"])
def test_control_and_transactional_batches_are_kept_as_they_are(kind: str) -> None:
    data = batch((b"a", None), (b"a", b"1"), producer_id=1, **{kind: True})
    result = run(data, {b"a": 999}, now_ms=NOW + 10**9)
    assert result.outcome is Outcome.KEPT
    assert result.data is data


def test_encode_record_matches_the_codec() -> None:
    encoded = encode_record(3, -7, b"k", None, [("h", None), ("i", b"x")])
    built = build_batch([SimpleRecord(T, b"k", None, [("h", None), ("i", b"x")])])
    # The codec's record for offset delta 0 / timestamp delta 0 differs only in those fields.
    assert encode_record(0, 0, b"k", None, [("h", None), ("i", b"x")]) == built[61:]
    assert len(encoded) == len(built[61:])

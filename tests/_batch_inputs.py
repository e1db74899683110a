"""Record-batch inputs for the tests that hold a compiled reader of record batches against its
Python reference (``tests/client/consumer/test_decoder_compiled.py``, the consumer's decoder;
``tests/records/test_columns.py``, the column builder): records and batches encoded by hand
(lengths, counts and header fields free to be wrong), hypothesis batches of every kind, and
random mutations of both."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator, Sequence
from typing import Any

from hypothesis import strategies as st

from odradek.errors import CorruptRecordError, UnsupportedForMessageFormatError
from odradek.records.batch import (
    CRC_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CompressionType,
    TimestampType,
    compute_crc,
    encode_header,
)
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.records.varint import encode_varint, encode_varlong

# ---- hand-made records and batches ----


def with_crc(batch: bytes | bytearray) -> bytes:
    """``batch`` with its CRC field set to the CRC of its bytes."""
    out = bytearray(batch)
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out, 0, len(out)))
    return bytes(out)


def raw_record(
    offset_delta: int,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: Sequence[tuple[bytes | None, bytes | None]] = (),
    ts_delta: int = 0,
    length: int | None = None,
    header_count: int | None = None,
) -> bytes:
    """One record, hand-encoded; ``length`` and ``header_count`` override the true ones."""

    def field(item: bytes | None) -> bytes:
        return encode_varint(-1) if item is None else encode_varint(len(item)) + item

    body = b"\x00" + encode_varlong(ts_delta) + encode_varint(offset_delta)
    body += field(key) + field(value)
    body += encode_varint(len(headers) if header_count is None else header_count)
    for hk, hv in headers:
        body += field(hk) + field(hv)
    return encode_varint(len(body) if length is None else length) + body


def raw_batch(
    records: bytes,
    records_count: int,
    base_offset: int = 0,
    last_offset_delta: int | None = None,
    attributes: int = 0,
    magic: int = 2,
    base_timestamp: int = 1_000,
    max_timestamp: int = 2_000,
    partition_leader_epoch: int = 7,
) -> bytes:
    """A batch around hand-made record bytes, with a correct CRC."""
    header = BatchHeader(
        base_offset=base_offset,
        batch_length=HEADER_SIZE - LOG_OVERHEAD + len(records),
        partition_leader_epoch=partition_leader_epoch,
        magic=magic,
        crc=0,
        attributes=attributes,
        last_offset_delta=(
            max(records_count - 1, 0) if last_offset_delta is None else last_offset_delta
        ),
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=records_count,
    )
    return with_crc(encode_header(header) + records)


#: A record whose timestamp delta is a varlong of 10 bytes, the last one too large.
OVERLONG_VARLONG = encode_varint(20) + b"\x00" + b"\xff" * 9 + b"\x02" + b"\x00" * 9

#: ``raw_batch`` arguments for batch headers that every reader rejects, and the error it raises.
REJECTED_HEADERS: list[tuple[dict[str, int], type[Exception]]] = [
    ({"magic": 0}, UnsupportedForMessageFormatError),
    ({"magic": 1}, UnsupportedForMessageFormatError),
    ({"magic": 3}, CorruptRecordError),
    ({"last_offset_delta": -1}, CorruptRecordError),
]


# ---- hypothesis batches ----


def batch_specs(long_bytes: st.SearchStrategy[bytes]) -> st.SearchStrategy[list[Any]]:
    """Specs for ``build_fetch``: one to five batches of every codec and timestamp type, control
    batches among them, offset gaps and leader epochs; keys, values and header values are null,
    empty, short or drawn from ``long_bytes``."""
    bytes_or_none = st.one_of(st.none(), st.just(b""), st.binary(max_size=20), long_bytes)
    headers = st.lists(
        st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=12))), max_size=4
    )
    records = st.lists(
        st.builds(
            SimpleRecord,
            timestamp_ms=st.integers(min_value=-1, max_value=2**42),
            key=bytes_or_none,
            value=bytes_or_none,
            headers=headers,
        ),
        min_size=1,
        max_size=12,
    )
    return st.lists(
        st.tuples(
            records,
            st.sampled_from(list(CompressionType)),
            st.sampled_from([TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]),
            st.booleans(),  # control
            st.integers(min_value=0, max_value=3),  # gap before the batch (compacted offsets)
            st.integers(min_value=-1, max_value=2**31 - 1),  # partition leader epoch
        ),
        min_size=1,
        max_size=5,
    )


def build_fetch(specs: Sequence[Any], base_offset: int = 0) -> tuple[bytes, int]:
    """Batches back to back from ``batch_specs``; (bytes, next offset)."""
    out = bytearray()
    offset = base_offset
    for records, compression, timestamp_type, control, gap, epoch in specs:
        offset += gap
        out += build_batch(
            records,
            base_offset=offset,
            compression=compression,
            timestamp_type=timestamp_type,
            control=control,
            partition_leader_epoch=epoch,
        )
        offset += len(records)
    return bytes(out), offset


# ---- random mutations ----


def mutate(rng: random.Random, data: bytes) -> bytes:
    """``data`` with a few bytes replaced, bit-flipped, cut out or put in."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        roll = rng.random()
        pos = rng.randrange(len(out))
        if roll < 0.6:
            out[pos] = rng.randrange(256)
        elif roll < 0.8:
            out[pos] ^= 1 << rng.randrange(8)
        elif roll < 0.9:
            out[pos : pos + rng.randrange(1, 6)] = b""
        else:
            out[pos:pos] = rng.randbytes(rng.randrange(1, 6))
        if not out:
            break
    return bytes(out)


def fuzz_corpus() -> list[bytes]:
    """The valid fetches that ``mutated_fetches`` starts from (always the same ones)."""
    rng = random.Random(1)
    records = [
        SimpleRecord(
            1_000 + i,
            None if i % 5 == 0 else rng.randbytes(rng.randrange(0, 12)),
            None if i % 7 == 0 else rng.randbytes(rng.randrange(0, 40)),
            [("h", None), ("k2", b"v")] if i % 3 == 0 else [],
        )
        for i in range(12)
    ]
    # Uncompressed and gzip only: a mutated LZ4 or zstd frame may declare a huge content size,
    # and both readers would ask the codec for it (the codec is not what is under test).
    return [
        build_batch(records[:4]) + build_batch(records[4:], base_offset=4),
        build_batch(records, timestamp_type=TimestampType.LOG_APPEND_TIME),
        build_batch(records[:3], control=True) + build_batch(records[3:], base_offset=3),
        build_batch(records, compression=CompressionType.GZIP),
        raw_batch(raw_record(0, b"", None, [(b"", b"")]) + raw_record(1, None, b""), 2),
    ]


def mutated_fetches(rng: random.Random, count: int) -> Iterator[bytes]:
    """``count`` mutations of fetches from ``fuzz_corpus``, drawn from ``rng`` one at a time (so
    that the caller may draw its own choices from ``rng`` between them)."""
    corpus = fuzz_corpus()
    for _ in range(count):
        yield mutate(rng, rng.choice(corpus))


def random_records(
    rng: random.Random, *, more_items: Sequence[bytes] = (), header_counts: bool = False
) -> tuple[bytes, int]:
    """A records section of near-valid records: lengths and counts a little off, random bytes.
    Keys, values and headers are null, empty, random or one of ``more_items``; with
    ``header_counts``, some records also state a wrong header count."""
    out = b""
    count = rng.randrange(6)
    for i in range(count):
        roll = rng.random()
        if roll < 0.1:
            out += rng.randbytes(rng.randrange(1, 12))
            continue

        def item() -> bytes | None:
            return rng.choice((None, b"", rng.randbytes(rng.randrange(1, 9)), *more_items))

        fields: dict[str, Any] = {
            "offset_delta": rng.choice((i, -1, 2**31 - 1)),
            "key": item(),
            "value": item(),
            "headers": [(item(), item()) for _ in range(rng.randrange(3))],
            "ts_delta": rng.choice((0, 1, -(2**40))),
        }
        record = raw_record(**fields)
        if roll < 0.3:
            body_length = len(record) - len(encode_varint(len(record)))
            record = raw_record(**fields, length=body_length + rng.randrange(-3, 4))
        elif roll < 0.4:
            record = record[: rng.randrange(len(record))]
        elif roll < 0.5 and header_counts:
            record = raw_record(**fields, header_count=rng.choice((-1, 0, 1, 3)))
        out += record
    return out, count


def random_batches(
    rng: random.Random, count: int, *, more_items: Sequence[bytes] = (), header_counts: bool = False
) -> Iterator[bytes]:
    """``count`` batches around ``random_records`` (the same options), some with a records count
    one off, some marked log-append-time or control; drawn from ``rng`` one at a time."""
    for _ in range(count):
        records, records_count = random_records(
            rng, more_items=more_items, header_counts=header_counts
        )
        attributes = rng.choice((0, 0, 0x08, 0x20))
        yield raw_batch(
            records, records_count + rng.choice((0, 0, 0, -1, 1)), attributes=attributes
        )

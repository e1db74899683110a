"""The sink's fast path: one Arrow record batch of the sink's columns → v2 record batches, one
run of rows per target topic-partition, encoded straight from the Arrow buffers
(``_arrow_encoder``), ready for ``Producer.send_encoded``.

Each row becomes the record ``Producer.send`` would make of it (``_rows_to_records`` says how
columns map to fields), in the same partition the producer would pick, with these rules:

- the partition: the ``partition`` column where it is not null; else a keyed row goes to
  ``toPositive(murmur2(key)) % partitions`` (the default partitioner's choice); else the
  topic's sticky partition for this Arrow batch (``sticky_partition``: the default
  partitioner's sticky choice moves when a batch is full; here it moves once per Arrow batch,
  the same spread over time);
- the timestamp: the ``timestamp`` column where it is not null, else ``now_ms``;
- the rows of one topic-partition keep their order, in batches of at most ``limit_bytes``
  (``batch.size``; a first record always fits).

``encode_arrow_batch`` answers ``None`` — use the per-row path — for every row the per-row
path would fail or treat specially, so failures keep its messages: a partition out of range, a
topic without metadata, a negative timestamp, a record over ``max_record_bytes``, a column
type other than Spark's (large or view binaries). It raises for what the per-row path raises
before sending (a null topic, a null header or header key: ``ValueError``).

Rows with headers are encoded one record at a time (the record codec's ``encode_record``);
rows without, a run at a time in C.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from odradek.records.batch import HEADER_SIZE
from odradek.records.codec import compiled_encode_record
from odradek.records.record import Header
from odradek.records.record_format import encode_record
from odradek.spark._arrow_encoder import EncodeArrowRecords, encode_arrow_records
from odradek.spark._rows_to_records import (
    NULL_TOPIC_MESSAGE,
    SinkColumns,
    as_binary,
    row_headers,
    timestamps_ms_array,
)

__all__ = ["EncodedBatch", "encode_arrow_batch"]

_encode_record: Final = compiled_encode_record() or encode_record
#: ``(key, value, headers)`` → bytes, the producer's ``estimated_record_size``.
RecordSize = Callable[[bytes | None, bytes | None, Sequence[Header]], int]
#: Group keys: topic index × this + partition (partitions are int32).
_TOPIC_STRIDE: Final = 2**32


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """The records of one batch for ``Producer.send_encoded``."""

    topic: str
    partition: int
    records: bytes
    count: int
    base_timestamp_ms: int
    max_timestamp_ms: int


def encode_arrow_batch(
    batch: pa.RecordBatch,
    columns: SinkColumns,
    topic_option: str | None,
    *,
    partition_count: Callable[[str], int | None],
    sticky_partition: Callable[[str, int], int],
    key_partition: Callable[[bytes, int], int],
    record_size: RecordSize,
    now_ms: int,
    limit_bytes: int,
    max_record_bytes: int,
    encoder: EncodeArrowRecords = encode_arrow_records,
) -> list[EncodedBatch] | None:
    """``batch``'s rows as encoded batches (see the module docstring), or None.

    Args:
        partition_count: a topic's partition count, None when unknown.
        sticky_partition: ``(topic, partition_count)`` → the partition of unkeyed rows.
        key_partition: ``(key, partition_count)`` → the partition of a keyed row.
        record_size: the producer's estimate of a record's size (``max_record_bytes`` bounds
            it).
        encoder: the run encoder (the reference in tests).

    Raises:
        ValueError: a null topic (Spark's message), a null header or header key.
    """
    rows = batch.num_rows
    if columns.topic is not None:
        topic_array = batch.column(columns.topic)
        if topic_array.null_count:
            raise ValueError(NULL_TOPIC_MESSAGE)
        encoded_topics = pc.dictionary_encode(topic_array)
        topics: list[str] = encoded_topics.dictionary.to_pylist()
        topic_ids: pa.Array | None = encoded_topics.indices if len(topics) > 1 else None
    else:
        assert topic_option is not None
        topics, topic_ids = [topic_option], None
    headers = None if columns.headers is None else row_headers(batch.column(columns.headers))
    values = as_binary(batch.column(columns.value))
    keys = None if columns.key is None else as_binary(batch.column(columns.key))
    if values.type != pa.binary() or (keys is not None and keys.type != pa.binary()):
        return None
    if keys is not None and keys.null_count == rows:
        keys = None
    timestamps = None
    if columns.timestamp is not None:
        stamps = batch.column(columns.timestamp)
        if stamps.null_count < rows:
            timestamps = timestamps_ms_array(stamps, columns.timestamp_seconds).fill_null(now_ms)
            if pc.min(timestamps).as_py() < 0:
                return None
    if _largest_record(keys, values, headers, record_size) > max_record_bytes:
        return None
    counts: list[int] = []
    for topic in topics:
        count = partition_count(topic)
        if count is None or count <= 0:
            return None
        counts.append(count)
    partitions = _partitions(
        batch, columns, keys, topics, topic_ids, counts, sticky_partition, key_partition, rows
    )
    if partitions is None:
        return None
    out: list[EncodedBatch] = []
    for topic, partition, indices in _groups(topics, topic_ids, partitions):
        run_keys, run_values, run_stamps = keys, values, timestamps
        run_headers = headers
        if indices is not None:
            run_values = values.take(indices)
            run_keys = None if keys is None else keys.take(indices)
            run_stamps = None if timestamps is None else timestamps.take(indices)
            if headers is not None:
                run_headers = [headers[i] for i in indices.to_pylist()]
        if run_headers is None:
            _encode_runs(
                out,
                topic,
                partition,
                run_keys,
                run_values,
                run_stamps,
                now_ms,
                limit_bytes,
                encoder,
            )
        else:
            _encode_with_headers(
                out,
                topic,
                partition,
                run_keys,
                run_values,
                run_stamps,
                run_headers,
                now_ms,
                limit_bytes,
            )
    return out


def _largest_record(
    keys: pa.Array | None,
    values: pa.Array,
    headers: Sequence[Sequence[Header]] | None,
    record_size: RecordSize,
) -> int:
    """The largest ``record_size`` among the rows (what the producer checks)."""
    if headers is not None:
        key_list = [None] * len(values) if keys is None else keys.to_pylist()
        return max(map(record_size, key_list, values.to_pylist(), headers), default=0)
    sizes = pc.binary_length(values).fill_null(0)
    if keys is not None:
        sizes = pc.add(sizes, pc.binary_length(keys).fill_null(0))
    largest = pc.max(sizes).as_py()
    return record_size(None, None, ()) + (largest or 0)


def _partitions(
    batch: pa.RecordBatch,
    columns: SinkColumns,
    keys: pa.Array | None,
    topics: list[str],
    topic_ids: pa.Array | None,
    counts: list[int],
    sticky_partition: Callable[[str, int], int],
    key_partition: Callable[[bytes, int], int],
    rows: int,
) -> pa.Array | int | None:
    """Each row's partition (an int32 array, or one int for every row), None when one is out
    of range."""
    column = None if columns.partition is None else batch.column(columns.partition)
    if column is not None and column.null_count == rows:
        column = None
    if column is None and keys is None and topic_ids is None:
        return sticky_partition(topics[0], counts[0])
    if column is not None and column.null_count == 0:
        chosen = column.cast(pa.int32())
    else:
        given = [None] * rows if column is None else column.to_pylist()
        key_list = [None] * rows if keys is None else keys.to_pylist()
        ids = [0] * rows if topic_ids is None else topic_ids.to_pylist()
        sticky: dict[int, int] = {}
        picked: list[int] = []
        for partition, key, topic_id in zip(given, key_list, ids, strict=True):
            if partition is not None:
                picked.append(partition)
            elif key is not None:
                picked.append(key_partition(key, counts[topic_id]))
            else:
                if topic_id not in sticky:
                    sticky[topic_id] = sticky_partition(topics[topic_id], counts[topic_id])
                picked.append(sticky[topic_id])
        chosen = pa.array(picked, pa.int32())
    if pc.min(chosen).as_py() < 0:
        return None
    if topic_ids is None:
        if pc.max(chosen).as_py() >= counts[0]:
            return None
    else:
        limits = pa.array(counts, pa.int32()).take(topic_ids)
        if pc.any(pc.greater_equal(chosen, limits)).as_py():
            return None
    return chosen


def _groups(
    topics: list[str], topic_ids: pa.Array | None, partitions: pa.Array | int
) -> list[tuple[str, int, pa.Array | None]]:
    """``(topic, partition, row indices)`` per target, rows in their order; indices None: every
    row."""
    if isinstance(partitions, int):
        return [(topics[0], partitions, None)]
    group = partitions.cast(pa.int64())
    if topic_ids is not None:
        group = pc.add(pc.multiply(topic_ids.cast(pa.int64()), _TOPIC_STRIDE), group)
    first = group[0].as_py()
    if pc.all(pc.equal(group, first)).as_py():
        return [(topics[first // _TOPIC_STRIDE], first % _TOPIC_STRIDE, None)]
    order = pc.sort_indices(group)  # stable: a partition's rows keep their order
    counted = pc.value_counts(group)
    by_value = pc.sort_indices(counted.field("values"))
    out: list[tuple[str, int, pa.Array | None]] = []
    start = 0
    for value, count in zip(
        counted.field("values").take(by_value).to_pylist(),
        counted.field("counts").take(by_value).to_pylist(),
        strict=True,
    ):
        out.append(
            (topics[value // _TOPIC_STRIDE], value % _TOPIC_STRIDE, order.slice(start, count))
        )
        start += count
    return out


def _encode_runs(
    out: list[EncodedBatch],
    topic: str,
    partition: int,
    keys: pa.Array | None,
    values: pa.Array,
    timestamps: pa.Array | None,
    now_ms: int,
    limit_bytes: int,
    encoder: EncodeArrowRecords,
) -> None:
    """Rows without headers: batches encoded by ``encoder`` from the buffers."""
    value_validity, value_offsets, value_data = values.buffers()
    if keys is not None:
        key_validity, key_offsets, key_data = keys.buffers()
        key_base = keys.offset
    else:
        key_validity = key_offsets = key_data = None
        key_base = 0
    stamp_data: memoryview | None = None
    if timestamps is not None:
        stamp_buffer = timestamps.buffers()[1]
        stamp_data = memoryview(stamp_buffer)[timestamps.offset * 8 :]
    rows = len(values)
    done = 0
    while done < rows:
        base_timestamp = (
            now_ms
            if stamp_data is None
            else int.from_bytes(stamp_data[done * 8 : done * 8 + 8], "little", signed=True)
        )
        records, count, max_timestamp = encoder(
            rows - done,
            limit_bytes,
            base_timestamp,
            None if stamp_data is None else stamp_data[done * 8 :],
            key_offsets,
            key_data,
            key_validity,
            key_base + done,
            value_offsets,
            value_data,
            value_validity,
            values.offset + done,
        )
        out.append(EncodedBatch(topic, partition, records, count, base_timestamp, max_timestamp))
        done += count


def _encode_with_headers(
    out: list[EncodedBatch],
    topic: str,
    partition: int,
    keys: pa.Array | None,
    values: pa.Array,
    timestamps: pa.Array | None,
    headers: Sequence[Sequence[Header]],
    now_ms: int,
    limit_bytes: int,
) -> None:
    """Rows with headers: a record at a time, batches cut at ``limit_bytes``."""
    rows = len(values)
    key_list: list[bytes | None] = [None] * rows if keys is None else keys.to_pylist()
    value_list: list[bytes | None] = values.to_pylist()
    stamps: list[int] = [now_ms] * rows if timestamps is None else timestamps.to_pylist()
    encoded: list[bytes] = []
    size = 0
    base = max_timestamp = 0
    for key, value, timestamp, row_headers_ in zip(
        key_list, value_list, stamps, headers, strict=True
    ):
        if encoded:
            record = _encode_record(len(encoded), timestamp - base, key, value, row_headers_)
            if HEADER_SIZE + size + len(record) > limit_bytes:
                out.append(
                    EncodedBatch(
                        topic, partition, b"".join(encoded), len(encoded), base, max_timestamp
                    )
                )
                encoded, size = [], 0
        if not encoded:
            base = max_timestamp = timestamp
            record = _encode_record(0, 0, key, value, row_headers_)
        encoded.append(record)
        size += len(record)
        max_timestamp = max(max_timestamp, timestamp)
    if encoded:
        out.append(
            EncodedBatch(topic, partition, b"".join(encoded), len(encoded), base, max_timestamp)
        )

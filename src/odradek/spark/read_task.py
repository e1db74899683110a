"""Executor side of a read: one offset range of one partition → Arrow record batches.

``read_range`` fetches ``[start, end)`` from the partition's leader with a simple consumer,
decodes each fetch column-wise (``odradek.records.columns``: compiled when built) and wraps the
buffers as one ``pyarrow.RecordBatch`` per fetch, in the data source's Arrow schema — no
per-record Python objects on the way. What it guarantees (what deterministic replay needs):

- every record of the range with an offset in ``[start, end)``, in offset order, once;
- offsets missing inside the range (compacted away, transaction markers, with
  ``isolation.level=read_committed`` the records of aborted transactions, which are dropped
  by the aborted-transaction list of each Fetch response, KIP-98) are not data loss;
- data loss — the range starts before the log start offset (retention, DeleteRecords), the
  log now ends before the range does (truncation, a recreated topic), or the topic is gone —
  raises ``DataLossError`` when ``fail_on_data_loss``, and otherwise skips what is lost and
  reads what remains.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Iterator, Mapping
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import InputPartition

from odradek.client import FetchRequest
from odradek.errors import KafkaError, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from odradek.records.aborted import drop_aborted_batches
from odradek.records.columns import Columns, columns_builder
from odradek.spark.clients import READ_FETCH_BYTES, shared_simple_consumer
from odradek.spark.options import SourceOptions
from odradek.spark.planning import OffsetRange
from odradek.spark.schema import HEADERS_ARROW_TYPE, arrow_read_schema

__all__ = [
    "DataLossError",
    "columns_to_arrow",
    "read_partition",
    "read_range",
    "report_data_loss",
]

logger = logging.getLogger(__name__)

#: Spark's advice when data is lost and ``failOnDataLoss`` is on.
FAIL_ON_DATA_LOSS_HINT: Final = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you don't want your streaming query to fail on such cases, set the "
    'source option "failOnDataLoss" to "false".'
)


class DataLossError(RuntimeError):
    """Records the read should return are no longer in the log."""


def read_range(
    r: OffsetRange,
    client_config: Mapping[str, str],
    *,
    include_headers: bool,
    fail_on_data_loss: bool,
) -> Iterator[pa.RecordBatch]:
    """The records of ``r`` as Arrow batches (see the module docstring).

    Raises:
        DataLossError: lost records, with ``fail_on_data_loss``.
        KafkaError: the broker's error (e.g. a corrupt batch), after the client's retries.
    """
    consumer = shared_simple_consumer(client_config)
    max_bytes = consumer.config.get_int("max.partition.fetch.bytes") or READ_FETCH_BYTES
    check_crcs = consumer.config.get_bool("check.crcs")
    offset = r.start
    while offset < r.end:
        request = FetchRequest(r.topic, r.partition, offset, max_bytes)
        [result] = consumer.multifetch_raw([request])
        if result.error is not None:
            offset = _after_error(r, offset, result.error, result.log_start_offset,
                                  fail_on_data_loss)  # fmt: skip
            continue
        builder = columns_builder(include_headers)
        records, fetched_end = result.records, -1
        if result.aborted_transactions:
            # read_committed: the aborted transactions' batches go before decoding; the rest
            # (and every fetch without an aborted transaction) takes the compiled decoder.
            records, fetched_end = drop_aborted_batches(records, result.aborted_transactions)
        next_offset = max(builder.add_batches(records, offset, r.end, check_crcs), fetched_end)
        if builder.count:
            yield columns_to_arrow(builder.finish(), r.topic, r.partition, include_headers)
        if next_offset > offset:
            offset = next_offset
            continue
        if result.records:
            # One batch larger than max_bytes that the broker still cut: fetch it whole.
            max_bytes *= 2
            continue
        # Nothing at all at this offset: the log ends before the range does.
        report_data_loss(
            f"{r.topic}-{r.partition}: offsets {offset}..{r.end - 1} are not in the log "
            f"(high watermark {result.high_watermark})",
            fail_on_data_loss,
        )
        return


def _after_error(
    r: OffsetRange, offset: int, error: KafkaError, log_start: int, fail_on_data_loss: bool
) -> int:
    """The offset to go on from after a fetch error, or raises."""
    where = f"{r.topic}-{r.partition}"
    if isinstance(error, OffsetOutOfRangeError):
        if 0 <= offset < log_start:
            report_data_loss(
                f"{where}: offsets {offset}..{min(log_start, r.end) - 1} were deleted "
                f"(log start offset is now {log_start})",
                fail_on_data_loss,
            )
            return min(log_start, r.end)
        report_data_loss(
            f"{where}: offset {offset} is past the end of the log ({error})", fail_on_data_loss
        )
        return r.end
    if isinstance(error, UnknownTopicOrPartitionError):
        report_data_loss(f"{where}: the topic or partition no longer exists", fail_on_data_loss)
        return r.end
    raise error


def report_data_loss(message: str, fail_on_data_loss: bool, outcome: str = "skipped") -> None:
    """Raises ``DataLossError`` (``message`` and Spark's advice) with ``fail_on_data_loss``;
    otherwise logs ``message`` and what is done about it (``outcome``)."""
    if fail_on_data_loss:
        raise DataLossError(f"{message}. {FAIL_ON_DATA_LOSS_HINT}")
    logger.warning("%s; %s (failOnDataLoss=false)", message, outcome)


def read_partition(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """``read()`` of both readers: the range a Spark input partition carries (none for Spark's
    placeholder partition of an empty plan)."""
    r = partition.value
    if not isinstance(r, OffsetRange):
        return
    yield from read_range(
        r,
        options.client_config,
        include_headers=options.include_headers,
        fail_on_data_loss=options.fail_on_data_loss,
    )


def columns_to_arrow(
    columns: Columns, topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    """Wraps decoded column buffers as a record batch of the data source's Arrow schema."""
    n = columns.count
    key = _binary(pa.binary(), n, columns.key_validity, columns.key_offsets, columns.key_data)
    value = _binary(
        pa.binary(), n, columns.value_validity, columns.value_offsets, columns.value_data
    )
    name = topic.encode()
    step = len(name)
    topic_offsets = (
        array("i", range(0, (n + 1) * step, step)) if step else array("i", [0]) * (n + 1)
    )
    topic_array = _binary(pa.string(), n, None, topic_offsets.tobytes(), name * n)
    partition_array = pa.Array.from_buffers(
        pa.int32(), n, [None, pa.py_buffer(array("i", [partition]).tobytes() * n)]
    )
    offsets = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(columns.offsets)])
    millis = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(columns.timestamps)])
    timestamps = pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC"))
    types = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(columns.timestamp_types)])
    arrays = [key, value, topic_array, partition_array, offsets, timestamps, types]
    if include_headers:
        arrays.append(_headers(columns))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_read_schema(include_headers))


def _binary(
    kind: pa.DataType, n: int, validity: bytes | None, offsets: bytes, data: bytes
) -> pa.Array:
    buffers = [
        None if validity is None else pa.py_buffer(validity),
        pa.py_buffer(offsets),
        pa.py_buffer(data),
    ]
    return pa.Array.from_buffers(kind, n, buffers)


def _headers(columns: Columns) -> pa.Array:
    assert columns.header_offsets is not None
    assert columns.header_key_offsets is not None
    assert columns.header_key_data is not None
    assert columns.header_value_offsets is not None
    assert columns.header_value_data is not None
    count = columns.header_count
    keys = _binary(pa.string(), count, None, columns.header_key_offsets, columns.header_key_data)
    values = _binary(
        pa.binary(),
        count,
        columns.header_value_validity,
        columns.header_value_offsets,
        columns.header_value_data,
    )
    entries = pa.StructArray.from_arrays([keys, values], fields=list(HEADERS_ARROW_TYPE.value_type))
    starts = pa.Array.from_buffers(
        pa.int32(), columns.count + 1, [None, pa.py_buffer(columns.header_offsets)]
    )
    return pa.ListArray.from_arrays(starts, entries, type=HEADERS_ARROW_TYPE)

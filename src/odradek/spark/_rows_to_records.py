"""The columns of Spark's Kafka sink, and Arrow record batches turned into what the producer sends.

Two steps, one per side of a write:

- on the driver, ``plan_columns`` checks the input schema with the rules and messages of Spark's
  Kafka sink (``KafkaWriter``) and returns ``SinkColumns``, the column positions (plain data:
  Spark pickles it into every task);
- on an executor, ``record_columns`` turns one ``pyarrow.RecordBatch`` into one Python list per
  column (``RecordColumns``): whole columns at a time, never a dict or a ``Row`` per row.

The columns (found by exact, case-sensitive name; the first column of a name wins; any other
column is ignored), in the order Spark checks them:

=========  ==========================================  =======================================
column     type                                        null means
=========  ==========================================  =======================================
topic      string; required unless the ``topic``       fails the task (Spark: "null topic
           option is given, which then wins (the       present in the data")
           column is not even checked)
key        string or binary                            no key
value      string or binary; required                  a null value (a tombstone)
headers    array<struct<key:string,value:binary>>      no headers (a header's value may be
                                                       null; a null header or key fails)
partition  int                                         the producer's partitioner picks
timestamp  timestamp, or double (seconds since the     the time of sending
           epoch) -- the newest Spark's sink column
=========  ==========================================  =======================================

Strings are sent as their UTF-8 bytes. Type checks ignore nullability (and the case of the
header struct's field names), as Spark's do. Schema errors are ``ValueError`` with Spark's text;
a batch that cannot be sent (null topic, null header) is a ``ValueError`` too, raised before
any of its rows is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    BinaryType,
    DataType,
    DoubleType,
    IntegerType,
    StringType,
    StructType,
    TimestampType,
)

from odradek.records.record import Header

__all__ = [
    "HEADERS_TYPE",
    "NULL_TOPIC_MESSAGE",
    "RecordColumns",
    "SinkColumns",
    "as_binary",
    "plan_columns",
    "record_columns",
    "row_headers",
    "timestamps_ms_array",
]

#: The ``headers`` column's type as Spark prints it (``catalogString``).
HEADERS_TYPE: Final = "array<struct<key:string,value:binary>>"
NULL_TOPIC_MESSAGE: Final = (
    "null topic present in the data. Use the topic option for setting a default topic."
)
_NO_TOPIC_MESSAGE: Final = (
    "topic option required when no 'topic' attribute is present. Use the topic option for "
    "setting a topic."
)
_MICROS_PER_MS: Final = 1000
#: Arrow timestamp unit → (multiply by, then divide by) to get milliseconds.
_TO_MS: Final = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


@dataclass(frozen=True, slots=True)
class SinkColumns:
    """Positions of the sink's columns in the input schema (``None``: absent).

    ``topic`` is ``None`` when the ``topic`` option gives the topic. ``timestamp_seconds`` says
    the ``timestamp`` column is a double (seconds), not a timestamp.
    """

    value: int
    key: int | None = None
    topic: int | None = None
    partition: int | None = None
    headers: int | None = None
    timestamp: int | None = None
    timestamp_seconds: bool = False


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """One record batch as per-column lists, all ``count`` long (``None``: the column is
    absent or entirely null, so every record has the default)."""

    count: int
    values: list[bytes | None]
    keys: list[bytes | None] | None
    topics: list[str] | None
    partitions: list[int | None] | None
    headers: list[Sequence[Header]] | None
    timestamps_ms: list[int | None] | None


# ----------------------------------------------------------------------------- driver side


def plan_columns(schema: StructType, topic_option: str | None) -> SinkColumns:
    """Checks ``schema`` as Spark's Kafka sink does; returns where each column is.

    Args:
        schema: the input DataFrame's schema.
        topic_option: the ``topic`` option (it overrides a ``topic`` column).

    Raises:
        ValueError: Spark's message for the first rule broken (``Required attribute 'value'
            not found``, ``topic option required when no 'topic' attribute is present...``,
            ``<column> attribute unsupported type <type>. <column> must be a(n) <types>``).
    """
    positions: dict[str, int] = {}
    for index, field in enumerate(schema.fields):
        positions.setdefault(field.name, index)

    def check(name: str, accepted: tuple[type[DataType], ...], desired: str) -> int | None:
        index = positions.get(name)
        if index is None:
            return None
        data_type = schema.fields[index].dataType
        if not isinstance(data_type, accepted):
            raise _unsupported(name, data_type, desired)
        return index

    topic: int | None = None
    if topic_option is None:
        topic = check("topic", (StringType,), "string")
        if topic is None:
            raise ValueError(_NO_TOPIC_MESSAGE)
    key = check("key", (StringType, BinaryType), "string or binary")
    value = check("value", (StringType, BinaryType), "string or binary")
    if value is None:
        raise ValueError("Required attribute 'value' not found")
    headers = positions.get("headers")
    if headers is not None:
        data_type = schema.fields[headers].dataType
        if data_type.simpleString().lower() != HEADERS_TYPE:
            raise _unsupported("headers", data_type, HEADERS_TYPE)
    partition = check("partition", (IntegerType,), "int")
    timestamp = check("timestamp", (DoubleType, TimestampType), "double or timestamp")
    return SinkColumns(
        value=value,
        key=key,
        topic=topic,
        partition=partition,
        headers=headers,
        timestamp=timestamp,
        timestamp_seconds=timestamp is not None
        and isinstance(schema.fields[timestamp].dataType, DoubleType),
    )


def _unsupported(name: str, data_type: DataType, desired: str) -> ValueError:
    return ValueError(
        f"{name} attribute unsupported type {data_type.simpleString()}. {name} must be a(n) "
        f"{desired}"
    )


# ----------------------------------------------------------------------------- executor side


def record_columns(batch: pa.RecordBatch, columns: SinkColumns) -> RecordColumns:
    """``batch``'s sink columns as Python lists (see ``RecordColumns``).

    Raises:
        ValueError: a null topic (Spark's message), or a null header or header key.
    """
    topics: list[str] | None = None
    if columns.topic is not None:
        topic_array = batch.column(columns.topic)
        if topic_array.null_count:
            raise ValueError(NULL_TOPIC_MESSAGE)
        topics = topic_array.to_pylist()
    headers = None if columns.headers is None else row_headers(batch.column(columns.headers))
    partitions = None
    if columns.partition is not None:
        partitions = _nullable_list(batch.column(columns.partition))
    timestamps = None
    if columns.timestamp is not None:
        timestamps = _timestamps_ms(batch.column(columns.timestamp), columns.timestamp_seconds)
    return RecordColumns(
        count=batch.num_rows,
        values=_bytes_list(batch.column(columns.value)),
        keys=None if columns.key is None else _nullable_list(as_binary(batch.column(columns.key))),
        topics=topics,
        partitions=partitions,
        headers=headers,
        timestamps_ms=timestamps,
    )


def as_binary(array: pa.Array) -> pa.Array:
    """A string array as binary (the same buffers: UTF-8 bytes); binary as it is."""
    kind = array.type
    if pa.types.is_string(kind):
        return array.cast(pa.binary())
    if pa.types.is_large_string(kind):
        return array.cast(pa.large_binary())
    if pa.types.is_string_view(kind):
        return array.cast(pa.binary_view())
    return array


def _bytes_list(array: pa.Array) -> list[bytes | None]:
    values: list[bytes | None] = as_binary(array).to_pylist()
    return values


def _nullable_list(array: pa.Array) -> list[Any] | None:
    """The values, or ``None`` when every one is null (the cheaper default path)."""
    if array.null_count == len(array):
        return None
    values: list[Any] = array.to_pylist()
    return values


def row_headers(array: pa.Array) -> list[Sequence[Header]] | None:
    """Each row's headers as a tuple of ``(key, value)`` pairs, from the flattened struct
    columns and the list lengths (no dict per header)."""
    if array.null_count == len(array):
        return None
    lengths = pc.list_value_length(array).fill_null(0).to_pylist()
    entries = array.flatten()
    if entries.null_count:
        raise ValueError("null header present in the data: a header must have a key")
    names = entries.field(0)
    if names.null_count:
        raise ValueError("null header key present in the data: a header must have a key")
    keys = names.to_pylist()
    values = entries.field(1).to_pylist()
    pairs = list(zip(keys, values, strict=True))
    out: list[Sequence[Header]] = []
    start = 0
    for end in accumulate(lengths):
        out.append(tuple(pairs[start:end]) if end > start else ())
        start = end
    return out


def _timestamps_ms(array: pa.Array, seconds: bool) -> list[int | None] | None:
    """Milliseconds since the epoch (``timestamps_ms_array``) as a list."""
    if array.null_count == len(array):
        return None
    values: list[int | None] = timestamps_ms_array(array, seconds).to_pylist()
    return values


def timestamps_ms_array(array: pa.Array, seconds: bool) -> pa.Array:
    """Milliseconds since the epoch as an int64 array, truncated toward zero as Spark's cast
    and division do (a double counts seconds; NaN and infinities become null, as Spark's cast
    makes them; a null stays null)."""
    if seconds:
        finite = pc.if_else(pc.is_finite(array), array, pa.scalar(None, array.type))
        micros = pc.multiply(finite, 1_000_000.0).cast(pa.int64(), safe=False)
        millis = pc.divide(micros, _MICROS_PER_MS)
    else:
        multiplier, divisor = _TO_MS[array.type.unit]
        millis = pc.divide(pc.multiply(array.cast(pa.int64()), multiplier), divisor)
    result: pa.Array = millis
    return result

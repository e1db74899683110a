"""The table schemas of the ``odradek`` data source: Spark's Kafka source schema, and its Arrow
form (what ``read()`` yields on the fast path).

Read schema (every field nullable, as in Spark's Kafka connector)::

    key binary, value binary, topic string, partition int, offset long,
    timestamp timestamp, timestampType int
    [, headers array<struct<key: string, value: binary>>]   -- with includeHeaders=true

``timestampType`` is 0 for CreateTime and 1 for LogAppendTime. The Arrow schema is exactly what
``pyspark.sql.pandas.types.to_arrow_schema(schema, timezone="UTC")`` gives for it: binary (not
large_binary), int32, int64, ``timestamp[us, tz=UTC]`` — Spark refuses any other.
"""

from __future__ import annotations

import functools
from typing import Final

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["HEADERS_ARROW_TYPE", "arrow_read_schema", "read_schema"]

_BASE_FIELDS: Final = (
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
)
_HEADERS_FIELD: Final = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
)

HEADERS_ARROW_TYPE: Final = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)

_BASE_ARROW: Final = (
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
)


def read_schema(include_headers: bool = False) -> StructType:
    """The Spark schema of a read (``headers`` last when ``include_headers``)."""
    fields = list(_BASE_FIELDS)
    if include_headers:
        fields.append(_HEADERS_FIELD)
    return StructType(fields)


@functools.cache
def arrow_read_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema ``read()`` batches carry for ``read_schema(include_headers)`` (built
    once: every batch of a read carries it)."""
    fields = list(_BASE_ARROW)
    if include_headers:
        fields.append(pa.field("headers", HEADERS_ARROW_TYPE))
    return pa.schema(fields)

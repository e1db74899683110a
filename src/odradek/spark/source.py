"""``OdradekDataSource``: the PySpark data source registered under the format name ``odradek``.

It reads and writes odradek (and any Kafka) topics with the schema and options of Spark's
Kafka connector (see ``options`` and ``schema``): batch and streaming reads (``reader`` and
``stream_reader``), batch and streaming writes (``writer``). Spark pickles the data source and
what it creates; everything it keeps is plain data (the options), and clients are made where
they are used.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from odradek.spark.batch_reader import BatchReader
from odradek.spark.options import parse_sink_options, parse_source_options
from odradek.spark.schema import read_schema
from odradek.spark.stream_reader import StreamReader
from odradek.spark.writer import BatchWriter, StreamWriter

__all__ = ["OdradekDataSource"]


class OdradekDataSource(DataSource):
    """``spark.read.format("odradek")``, ``readStream``, ``write`` and ``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "odradek"

    def schema(self) -> StructType:
        flag = {k.lower(): v for k, v in self.options.items()}.get("includeheaders", "false")
        return read_schema(include_headers=str(flag).strip().lower() == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return StreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return BatchWriter(parse_sink_options(self.options), schema, overwrite=overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        return StreamWriter(parse_sink_options(self.options), schema)

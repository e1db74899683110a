"""PySpark data source for odradek topics (needs the ``spark`` extra: pyspark and pyarrow).

``spark.read.format("odradek")`` works without any set-up once odradek is installed: Spark
discovers data sources in installed top-level modules named ``pyspark_*``, and the
``pyspark_odradek`` module shipped with odradek names ``OdradekDataSource``. ``register(spark)``
registers it explicitly (for sessions started before odradek was installed, or with data-source
discovery turned off).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.spark.source import OdradekDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["OdradekDataSource", "register"]


def register(spark: SparkSession) -> None:
    """Registers the ``odradek`` format with this session."""
    spark.dataSource.register(OdradekDataSource)

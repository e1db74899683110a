"""Spark's data-source discovery hook for odradek: PySpark imports every top-level module
named ``pyspark_*`` and registers its ``DefaultSource`` under ``DefaultSource.name()``."""

from odradek.spark.source import OdradekDataSource as DefaultSource

__all__ = ["DefaultSource"]

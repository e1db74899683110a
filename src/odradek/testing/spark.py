"""A local Spark session for tests and benchmarks (needs the ``spark`` extra)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from odradek.spark import register

__all__ = ["local_session"]


def local_session(
    app_name: str, *, master: str = "local[2]", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A Spark session on this machine with the odradek data source registered.

    Workers run this interpreter (``PYSPARK_PYTHON``, unless already set), the driver listens
    on 127.0.0.1 only, the web UI and the console progress bar are off, and Spark logs errors
    only. ``conf`` adds or overrides settings. Like ``SparkSession.builder.getOrCreate``, it
    returns the running session when there is one.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        **(conf or {}),
    }
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session

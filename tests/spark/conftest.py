"""Fixtures for the Spark tests: one real local SparkSession for the whole run (starting one
costs 10-15 s), and an embedded broker per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from odradek import Broker
from odradek.testing.spark import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session(
        "odradek-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config={"num.partitions": "1"}) as started:
        yield started

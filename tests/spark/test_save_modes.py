"""Batch-write save modes of the ``odradek`` sink, through a real local SparkSession.

Spark's Kafka sink takes Append and ErrorIfExists (the default) and refuses Overwrite and
Ignore. A Python data source cannot take ErrorIfExists (Spark refuses it before the source is
asked: ``spark.writer``'s docstring), so the README says ``.mode("append")``: these tests pin
what each mode does, so the README's advice stays true and a Spark that changes it is noticed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from odradek import AdminClient, Broker, NewTopic, SimpleConsumer
from odradek.spark.writer import OVERWRITE_REFUSED

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    yield client
    client.close()


def new_topic(admin: AdminClient) -> str:
    name = f"modes-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1, 1)]).all()
    return name


def end_offset(broker: Broker, topic: str) -> int:
    with SimpleConsumer({"bootstrap.servers": broker.bootstrap_servers}) as consumer:
        return consumer.latest_offset(topic, 0)


def rows(spark: SparkSession, count: int) -> DataFrame:
    return spark.range(count).selectExpr("CAST(id AS STRING) AS value")


def test_append_writes_every_row_each_time(
    spark: SparkSession, broker: Broker, admin: AdminClient
) -> None:
    topic = new_topic(admin)
    for _ in range(2):
        (
            rows(spark, 7)
            .write.format("odradek")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("topic", topic)
            .mode("append")
            .save()
        )
    assert end_offset(broker, topic) == 14


def test_overwrite_is_refused_with_kafkas_reason(
    spark: SparkSession, broker: Broker, admin: AdminClient
) -> None:
    topic = new_topic(admin)
    writer = (
        rows(spark, 3)
        .write.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic)
        .mode("overwrite")
    )
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for odradek") as caught:
        writer.save()
    assert OVERWRITE_REFUSED.split(":")[0] in str(caught.value)
    assert end_offset(broker, topic) == 0


@pytest.mark.parametrize(("mode", "name"), [(None, "ErrorIfExists"), ("ignore", "Ignore")])
def test_spark_refuses_errorifexists_and_ignore_before_the_source(
    spark: SparkSession, broker: Broker, admin: AdminClient, mode: str | None, name: str
) -> None:
    """Why the README says ``.mode("append")``. If a Spark release starts accepting the
    default mode for Python data sources, this fails: then the README can drop the advice."""
    topic = new_topic(admin)
    writer = (
        rows(spark, 3)
        .write.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic)
    )
    if mode is not None:
        writer = writer.mode(mode)
    with pytest.raises(AnalysisException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE") as caught:
        writer.save()
    assert name in str(caught.value)
    assert end_offset(broker, topic) == 0

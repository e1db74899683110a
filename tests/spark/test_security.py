"""Spark over SASL_SSL: a local SparkSession writes and reads back through ``format("odradek")``
with the security options Spark's Kafka connector passes to Kafka's clients
(``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config`` with a
``ScramLoginModule``, ``kafka.ssl.truststore.location`` of a PEM CA with
``kafka.ssl.truststore.type=PEM``); the driver's admin client, the write tasks' producers and
the read tasks' consumers all log in as the SCRAM user."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from odradek import Broker
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import (
    SCRAM_PASSWORD,
    SCRAM_USER,
    SecureBroker,
    add_scram_user,
    broker_settings,
)

pytestmark = [pytest.mark.spark]

COUNT = 50


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    with Broker(config={**broker_settings(certificates), "num.partitions": "2"}) as running:
        add_scram_user(running)
        yield SecureBroker(running, certificates)


def _options(secure: SecureBroker, password: str = SCRAM_PASSWORD) -> dict[str, str]:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{SCRAM_USER}" password="{password}";'
    )
    return {
        "kafka.bootstrap.servers": secure.address("SASL_SSL"),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": jaas,
        "kafka.ssl.truststore.location": str(secure.certificates.ca),
        "kafka.ssl.truststore.type": "PEM",
    }


def _authenticated_users(secure: SecureBroker) -> set[str]:
    server = secure.broker.app.server
    assert server is not None
    return {
        c.authenticator.principal.name
        for c in list(server._connections)
        if c.listener.name == "SASL_SSL" and c.authenticator.authenticated
    }


def test_spark_writes_and_reads_over_sasl_ssl(spark: SparkSession, secure: SecureBroker) -> None:
    topic = f"spark-sasl-{uuid.uuid4().hex[:8]}"
    rows = [(f"k{i % 5}", f"value-{i}") for i in range(COUNT)]
    frame = spark.createDataFrame(rows, ["key", "value"])
    writer = frame.write.format("odradek").option("topic", topic)
    for key, value in _options(secure).items():
        writer = writer.option(key, value)
    writer.mode("append").save()

    reader = spark.read.format("odradek").option("subscribe", topic)
    for key, value in _options(secure).items():
        reader = reader.option(key, value)
    read = reader.load().selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").collect()
    assert sorted((row.key, row.value) for row in read) == sorted(rows)
    assert SCRAM_USER in _authenticated_users(secure)

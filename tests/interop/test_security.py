"""Security interop, the successful paths: confluent-kafka, kafka-python, aiokafka, kcat and
kafkajs produce and read back over SSL, mutual TLS, SASL_PLAINTEXT and SASL_SSL with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512. The broker records the authenticated principal of each
connection (checked through its server). The failures (wrong password, refused certificates,
an unknown mechanism) are in test_security_failures."""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Callable
from typing import Any

import aiokafka
import confluent_kafka
import pytest

from odradek import Broker
from odradek.broker.principal import KafkaPrincipal
from odradek.testing.secure_broker import SecureBroker, add_scram_user, broker_settings

from ._secure_clients import (
    COUNT,
    aiokafka_config,
    credentials,
    kafka_python_config,
    kafkajs,
    kafkajs_security,
    kcat,
    librdkafka_config,
    new_topic,
    values_for,
)

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka

pytestmark = pytest.mark.interop

#: (listener, SASL mechanism) pairs every client is run over.
CASES = [
    ("SSL", None),
    ("MTLS", None),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
]


def _expected_principal(listener: str, mechanism: str | None) -> KafkaPrincipal:
    if mechanism is not None:
        return KafkaPrincipal("User", credentials(mechanism)[0])
    if listener == "MTLS":
        return KafkaPrincipal("User", "alice")  # the rule maps CN=alice,... to alice
    return KafkaPrincipal("User", "ANONYMOUS")


def _principals(secure: SecureBroker, listener: str) -> set[KafkaPrincipal]:
    server = secure.broker.app.server
    assert server is not None
    return {
        c.authenticator.principal
        for c in list(server._connections)
        if c.listener.name == listener and c.authenticator.authenticated
    }


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- confluent-kafka (librdkafka) ------------------------------------------------------------


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_confluent_kafka_round_trip(
    secure: SecureBroker, listener: str, mechanism: str | None
) -> None:
    topic, values = new_topic(), values_for("ck")
    conf = librdkafka_config(secure, listener, mechanism)
    producer = confluent_kafka.Producer(conf)
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0
    assert _expected_principal(listener, mechanism) in _principals(secure, listener)
    consumer = confluent_kafka.Consumer(
        {**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_large_fetches_over_tls_come_back_whole(secure: SecureBroker, listener: str) -> None:
    """Fetch slices of 64 KiB and more are read from the segment in chunks and written through
    the TLS transport (no sendfile under TLS): 2 MB in one partition read back byte for byte."""
    mechanism = "SCRAM-SHA-256" if listener == "SASL_SSL" else None
    conf = librdkafka_config(secure, listener, mechanism)
    topic = new_topic()
    values = [bytes([i % 251]) * 10_000 + i.to_bytes(4, "big") for i in range(200)]
    producer = confluent_kafka.Producer({**conf, "linger.ms": 20})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer(
        {**conf, "group.id": f"g-{topic}", "fetch.max.bytes": 4_000_000,
         "max.partition.fetch.bytes": 4_000_000}
    )  # fmt: skip
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < len(values) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert got == values


def test_confluent_admin_manages_scram_credentials(secure: SecureBroker) -> None:
    from confluent_kafka import admin as ck_admin  # noqa: PLC0415 (only this test needs it)

    client = ck_admin.AdminClient(librdkafka_config(secure, "SASL_SSL", "PLAIN"))
    info = ck_admin.ScramCredentialInfo(ck_admin.ScramMechanism.SCRAM_SHA_512, 5000)
    results = client.alter_user_scram_credentials(
        [ck_admin.UserScramCredentialUpsertion("carol", info, b"carol-secret")]
    )
    assert results["carol"].result() is None
    described = client.describe_user_scram_credentials(["carol"])["carol"].result()
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ck_admin.ScramMechanism.SCRAM_SHA_512, 5000)
    ]
    producer = confluent_kafka.Producer(
        librdkafka_config(
            secure,
            "SASL_SSL",
            "SCRAM-SHA-512",
            **{"sasl.username": "carol", "sasl.password": "carol-secret"},
        )
    )
    producer.produce(new_topic(), value=b"by carol")
    assert producer.flush(30) == 0
    results = client.alter_user_scram_credentials(
        [ck_admin.UserScramCredentialDeletion("carol", ck_admin.ScramMechanism.SCRAM_SHA_512)]
    )
    assert results["carol"].result() is None
    with pytest.raises(confluent_kafka.KafkaException) as info:
        client.describe_user_scram_credentials(["carol"])["carol"].result()
    assert info.value.args[0].code() == confluent_kafka.KafkaError.RESOURCE_NOT_FOUND


def test_confluent_kafka_re_authenticates_on_the_same_connection(secure: SecureBroker) -> None:
    """KIP-368: with connections.max.reauth.ms the broker tells librdkafka the session
    lifetime; librdkafka logs in again on the open connection before it ends, and produces
    on."""
    settings = {**broker_settings(secure.certificates), "connections.max.reauth.ms": "1500"}
    with Broker(config=settings) as broker:
        add_scram_user(broker)
        server = broker.app.server
        assert server is not None
        again = SecureBroker(broker, secure.certificates)
        producer = confluent_kafka.Producer(
            librdkafka_config(again, "SASL_PLAINTEXT", "SCRAM-SHA-256")
        )
        topic = new_topic()

        def reauthenticated() -> bool:
            producer.produce(topic, value=b"x")
            producer.poll(0.1)
            return any(
                c.authenticator.reauthentications > 0
                for c in list(server._connections)
                if c.listener.name == "SASL_PLAINTEXT"
            )

        _wait_for(reauthenticated, "a re-authentication")
        assert producer.flush(30) == 0


# --- kafka-python ----------------------------------------------------------------------------


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kafka_python_round_trip(
    secure: SecureBroker, listener: str, mechanism: str | None
) -> None:
    topic, values = new_topic(), values_for("kp")
    conf = kafka_python_config(secure, listener, mechanism)
    producer = kafka.KafkaProducer(**conf)
    try:
        for value in values:
            producer.send(topic, value=value)
        producer.flush(30)
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(
        topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **conf
    )
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < COUNT and time.monotonic() < deadline:
            for batch in consumer.poll(500).values():
                got.extend(record.value for record in batch)
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)


# --- aiokafka --------------------------------------------------------------------------------


async def _aiokafka_round_trip(
    conf: dict[str, Any], topic: str, values: list[bytes]
) -> list[bytes]:
    producer = aiokafka.AIOKafkaProducer(**conf)
    await producer.start()
    try:
        for value in values:
            await producer.send(topic, value=value)
        await producer.flush()
    finally:
        await producer.stop()
    consumer = aiokafka.AIOKafkaConsumer(
        topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **conf
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        async with asyncio.timeout(30):
            while len(got) < len(values):
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(record.value for record in batch if record.value is not None)
    finally:
        await consumer.stop()
    return got


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_aiokafka_round_trip(secure: SecureBroker, listener: str, mechanism: str | None) -> None:
    topic, values = new_topic(), values_for("aio")
    got = asyncio.run(
        _aiokafka_round_trip(aiokafka_config(secure, listener, mechanism), topic, values)
    )
    assert sorted(got) == sorted(values)


# --- kcat ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kcat_round_trip(secure: SecureBroker, listener: str, mechanism: str | None) -> None:
    topic, values = new_topic(), values_for("kcat")
    conf = librdkafka_config(secure, listener, mechanism)
    produced = kcat(conf, "-P", "-t", topic, stdin=b"\n".join(values) + b"\n")
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = kcat(conf, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert sorted(consumed.stdout.split()) == sorted(values)


# --- kafkajs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kafkajs_round_trip(secure: SecureBroker, listener: str, mechanism: str | None) -> None:
    answer = kafkajs(secure, listener, kafkajs_security(secure, listener, mechanism))
    assert "error" not in answer, answer.get("error")
    assert sorted(answer["values"]) == sorted(answer["sent"])

"""odradek's own clients over SSL, mutual TLS, SASL_PLAINTEXT and SASL_SSL (PLAIN, both SCRAM
mechanisms, credentials given directly or in sasl.jaas.config), and what a wrong password or
an untrusted broker does to them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from odradek import Broker
from odradek.broker.principal import KafkaPrincipal
from odradek.client import AdminClient, NewTopic
from odradek.client.config import ADMIN, PRODUCER, SIMPLE_CONSUMER
from odradek.client.consumer import Consumer
from odradek.client.producer import Producer
from odradek.client.security import ClientSecurity
from odradek.errors import ConfigError, ErrorCode, KafkaError
from odradek.spark.clients import client_settings
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SCRAM_USER,
    SecureBroker,
    add_scram_user,
    broker_settings,
)

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="{PLAIN_USER}" password="{PLAIN_PASSWORD}";'
)


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    with Broker(config=broker_settings(certificates)) as broker:
        add_scram_user(broker)
        yield SecureBroker(broker, certificates)


def _conf(secure: SecureBroker, listener: str, **extra: str) -> dict[str, Any]:
    certs = secure.certificates
    protocol = {"MTLS": "SSL"}.get(listener, listener)
    conf: dict[str, Any] = {
        "bootstrap.servers": secure.address(listener),
        "security.protocol": protocol,
    }
    if "SSL" in protocol:
        conf["ssl.ca.location"] = str(certs.ca)
    if listener == "MTLS":
        conf["ssl.certificate.location"] = str(certs.client_cert)
        conf["ssl.key.location"] = str(certs.client_key)
    conf.update(extra)
    return conf


CASES = [
    ("SSL", {}),
    ("MTLS", {}),
    ("SASL_PLAINTEXT", {"sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS}),
    (
        "SASL_PLAINTEXT",
        {"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": SCRAM_USER,
         "sasl.password": SCRAM_PASSWORD},
    ),
    (
        "SASL_SSL",
        {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": SCRAM_USER,
         "sasl.password": SCRAM_PASSWORD},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("listener", "extra"), CASES)
def test_producer_consumer_and_admin_round_trip(
    secure: SecureBroker, listener: str, extra: dict[str, str]
) -> None:
    conf = _conf(secure, listener, **extra)
    topic = f"client-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    try:
        assert admin.create_topics([NewTopic(topic, 2, 1)])[topic] is None
    finally:
        admin.close()
    values = [f"v{i}".encode() for i in range(50)]
    producer = Producer(conf)
    try:
        for value in values:
            producer.send(topic, value=value)
        producer.flush(30)
    finally:
        producer.close()
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            got.extend(r.value for r in consumer.poll(500) if r.value is not None)
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)


def test_a_wrong_password_fails_requests(secure: SecureBroker) -> None:
    conf = _conf(
        secure, "SASL_SSL", **{"sasl.mechanism": "PLAIN", "sasl.username": PLAIN_USER,
                               "sasl.password": "wrong", "request.timeout.ms": "2000",
                               "default.api.timeout.ms": "3000"}
    )  # fmt: skip
    admin = AdminClient(conf)
    try:
        with pytest.raises(KafkaError):
            admin.list_topics(timeout_ms=3000)
    finally:
        admin.close()
    server = secure.broker.app.server
    assert server is not None
    assert KafkaPrincipal("User", PLAIN_USER) not in {
        c.authenticator.principal for c in server._connections if c.listener.name == "SASL_SSL"
    }


def test_a_producer_with_a_wrong_password_fails_its_send_with_the_login_error(
    secure: SecureBroker,
) -> None:
    # max.block.ms is far away: the send must fail on the refused login, as Kafka's producer
    # does, not wait for the topic's metadata until the block time is out.
    conf = _conf(
        secure, "SASL_PLAINTEXT", **{"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": SCRAM_USER,
                                     "sasl.password": "wrong", "max.block.ms": "120000"}
    )  # fmt: skip
    producer = Producer(conf)
    try:
        future = producer.send("any-topic", value=b"v")  # a send's failure is its future's
        error = future.exception(timeout=90)
    finally:
        producer.close()
    assert isinstance(error, KafkaError)
    assert error.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"sasl\.mechanism"):
        ClientSecurity.from_config({"security.protocol": "SASL_PLAINTEXT"})
    with pytest.raises(ConfigError, match="GSSAPI"):
        ClientSecurity.from_config(
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}
        )
    with pytest.raises(ConfigError, match=r"security\.protocol"):
        ClientSecurity.from_config({"security.protocol": "TLS"})
    with pytest.raises(ConfigError, match="cannot load"):
        ClientSecurity.from_config(
            {"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}
        )
    from_jaas = ClientSecurity.from_config(
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS}
    )
    assert (from_jaas.username, from_jaas.password) == (PLAIN_USER, PLAIN_PASSWORD)
    assert from_jaas.uses_tls
    assert from_jaas.uses_sasl


def test_spark_passes_the_java_clients_security_options_through() -> None:
    options = {
        "bootstrap.servers": "127.0.0.1:1",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": JAAS,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
    }
    for client_type in (ADMIN, SIMPLE_CONSUMER, PRODUCER):
        assert client_settings(options, client_type) == options
    with pytest.raises(ConfigError, match="only PEM"):
        ClientSecurity.from_config({"security.protocol": "SSL", "ssl.truststore.type": "JKS"})

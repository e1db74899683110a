"""Security interop, the failures: for confluent-kafka, kafka-python, aiokafka, kcat and
kafkajs, a wrong password, a client certificate the broker refuses (expired, or from a CA it
does not trust) on the mTLS listener, a broker certificate the client does not trust, and a
mechanism the listener does not offer each fail with the error that client reports for it.

Every client can express every case: kcat is librdkafka underneath and reports the failed
SaslHandshake (UNSUPPORTED_SASL_MECHANISM) as confluent-kafka does, and kafka-python, aiokafka
and kafkajs each surface the broker's error code. What no client can do is tell an expired
client certificate from an untrusted one: under TLS 1.3 a client finishes its side of the
handshake before the broker checks its certificate, and the broker (asyncio's TLS transport)
closes the connection without sending a TLS alert, so every client reports a connection closed
during its first request (librdkafka: "unexpected eof" in state APIVERSION_QUERY). The tests
check that error and that no connection was ever authenticated as the refused certificate's
subject.

The Python clients that fail run in a child process (``_secure_clients.failing_client``);
timeouts are short (kafka-python gives up bootstrapping after 3 s, kcat's metadata request
after 3 s, kafkajs after 3 retries), so the whole module runs in well under a minute.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

from odradek.broker.principal import KafkaPrincipal
from odradek.testing.secure_broker import SecureBroker

from ._secure_clients import (
    aiokafka_config,
    failing_client,
    kafka_python_config,
    kafkajs,
    kafkajs_security,
    kcat,
    librdkafka_config,
    raised,
)

pytestmark = pytest.mark.interop

#: The refused client certificates: (certificate, key) of ``CertificateFiles`` by case, and the
#: principal each would map to if it were ever accepted.
REFUSED = ("expired", "untrusted")
REFUSED_PRINCIPALS = {KafkaPrincipal("User", "mallory"), KafkaPrincipal("User", "eve")}


def _client_files(secure: SecureBroker, which: str) -> tuple[Path, Path]:
    certs = secure.certificates
    if which == "expired":
        return certs.expired_cert, certs.expired_key
    return certs.untrusted_cert, certs.untrusted_key


def _authenticated(secure: SecureBroker, listener: str) -> set[KafkaPrincipal]:
    server = secure.broker.app.server
    assert server is not None
    return {
        c.authenticator.principal
        for c in list(server._connections)
        if c.listener.name == listener and c.authenticator.authenticated
    }


def _assert_none_refused_authenticated(secure: SecureBroker) -> None:
    assert not REFUSED_PRINCIPALS & _authenticated(secure, "MTLS")


# --- confluent-kafka (librdkafka) ------------------------------------------------------------


def _librdkafka_errors(conf: dict[str, Any]) -> list[confluent_kafka.KafkaError]:
    errors: list[confluent_kafka.KafkaError] = []
    producer = confluent_kafka.Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "the client reported no error"
    return errors


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_wrong_password(secure: SecureBroker, mechanism: str) -> None:
    errors = _librdkafka_errors(
        librdkafka_config(secure, "SASL_SSL", mechanism, **{"sasl.password": "wrong"})
    )
    assert errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION
    assert "Authentication failed" in errors[0].str()


def test_confluent_kafka_unknown_mechanism(secure: SecureBroker) -> None:
    errors = _librdkafka_errors(librdkafka_config(secure, "LIMITED", "SCRAM-SHA-256"))
    assert errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION
    assert "Unsupported SASL mechanism" in errors[0].str()


@pytest.mark.parametrize("which", [*REFUSED, "none"])
def test_confluent_kafka_refused_client_certificate(secure: SecureBroker, which: str) -> None:
    conf = librdkafka_config(secure, "MTLS", None)
    del conf["ssl.certificate.location"], conf["ssl.key.location"]
    if which != "none":
        cert, key = _client_files(secure, which)
        conf.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    errors = _librdkafka_errors(conf)
    assert {e.code() for e in errors} <= {
        confluent_kafka.KafkaError._SSL,
        confluent_kafka.KafkaError._TRANSPORT,
        confluent_kafka.KafkaError._ALL_BROKERS_DOWN,
    }
    _assert_none_refused_authenticated(secure)


def test_confluent_kafka_refuses_a_broker_it_does_not_trust(secure: SecureBroker) -> None:
    conf = librdkafka_config(
        secure, "SSL", None, **{"ssl.ca.location": str(secure.certificates.untrusted_ca)}
    )
    errors = _librdkafka_errors(conf)
    assert errors[0].code() in (
        confluent_kafka.KafkaError._SSL,
        confluent_kafka.KafkaError._TRANSPORT,
    )
    assert "certificate verify failed" in errors[0].str()
    assert "SSL_HANDSHAKE" in errors[0].str()


# --- kafka-python ----------------------------------------------------------------------------


def test_kafka_python_wrong_password(secure: SecureBroker) -> None:
    conf = kafka_python_config(
        secure, "SASL_PLAINTEXT", "SCRAM-SHA-256", sasl_plain_password="wrong"
    )
    log = failing_client("kafka-python", conf)
    assert "SaslAuthenticationFailedError" in log
    assert "invalid credentials" in log


def test_kafka_python_unknown_mechanism(secure: SecureBroker) -> None:
    log = failing_client("kafka-python", kafka_python_config(secure, "LIMITED", "SCRAM-SHA-512"))
    assert raised(log)[0] == "KafkaTimeoutError"
    assert "UnsupportedSaslMechanismError" in log


@pytest.mark.parametrize("which", REFUSED)
def test_kafka_python_refused_client_certificate(secure: SecureBroker, which: str) -> None:
    cert, key = _client_files(secure, which)
    conf = kafka_python_config(secure, "MTLS", None, ssl_certfile=str(cert), ssl_keyfile=str(key))
    log = failing_client("kafka-python", conf)
    name, message = raised(log)
    assert name == "KafkaTimeoutError"
    assert "Unable to bootstrap" in message
    assert "KafkaConnectionError: socket disconnected" in log
    _assert_none_refused_authenticated(secure)


def test_kafka_python_refuses_a_broker_it_does_not_trust(secure: SecureBroker) -> None:
    conf = kafka_python_config(
        secure, "SSL", None, ssl_cafile=str(secure.certificates.untrusted_ca)
    )
    log = failing_client("kafka-python", conf)
    name, message = raised(log)
    assert name == "KafkaTimeoutError"
    assert "Unable to bootstrap" in message
    assert "[SSL: CERTIFICATE_VERIFY_FAILED]" in log


# --- aiokafka --------------------------------------------------------------------------------


def test_aiokafka_wrong_password(secure: SecureBroker) -> None:
    conf = aiokafka_config(
        secure, "SASL_SSL", "SCRAM-SHA-512", ssl_files=True, sasl_plain_password="wrong"
    )
    log = failing_client("aiokafka", conf)
    assert raised(log)[0] == "KafkaConnectionError"
    assert "Authentication failed" in log


def test_aiokafka_unknown_mechanism(secure: SecureBroker) -> None:
    log = failing_client("aiokafka", aiokafka_config(secure, "LIMITED", "SCRAM-SHA-256"))
    name, message = raised(log)
    assert name == "KafkaConnectionError"
    assert "Unable to bootstrap" in message
    assert "UnsupportedSaslMechanismError" in log


@pytest.mark.parametrize("which", REFUSED)
def test_aiokafka_refused_client_certificate(secure: SecureBroker, which: str) -> None:
    cert, key = _client_files(secure, which)
    conf = aiokafka_config(secure, "MTLS", None, ssl_files=True)
    conf["ssl"].update(certfile=str(cert), keyfile=str(key))
    log = failing_client("aiokafka", conf)
    name, message = raised(log)
    assert name == "KafkaConnectionError"
    assert "Unable to bootstrap" in message
    assert "closed" in log
    _assert_none_refused_authenticated(secure)


def test_aiokafka_refuses_a_broker_it_does_not_trust(secure: SecureBroker) -> None:
    conf = aiokafka_config(secure, "SSL", None, ssl_files=True)
    conf["ssl"]["cafile"] = str(secure.certificates.untrusted_ca)
    log = failing_client("aiokafka", conf)
    name, message = raised(log)
    assert name == "KafkaConnectionError"
    assert "Unable to bootstrap" in message
    assert "[SSL: CERTIFICATE_VERIFY_FAILED]" in log


# --- kcat ------------------------------------------------------------------------------------


def _kcat_metadata(conf: dict[str, Any]) -> str:
    """Asks kcat for metadata (3 s); fails the test unless kcat exited with an error."""
    result = kcat(conf, "-L", "-m", "3")
    assert result.returncode != 0, result.stdout.decode()
    return result.stderr.decode()


def test_kcat_wrong_password(secure: SecureBroker) -> None:
    conf = librdkafka_config(secure, "SASL_PLAINTEXT", "PLAIN", **{"sasl.password": "wrong"})
    assert "Authentication failed" in _kcat_metadata(conf)


def test_kcat_unknown_mechanism(secure: SecureBroker) -> None:
    stderr = _kcat_metadata(librdkafka_config(secure, "LIMITED", "SCRAM-SHA-512"))
    assert "SASL SCRAM-SHA-512 mechanism handshake failed" in stderr
    assert "Unsupported SASL mechanism: broker's supported mechanisms: PLAIN" in stderr


@pytest.mark.parametrize("which", REFUSED)
def test_kcat_refused_client_certificate(secure: SecureBroker, which: str) -> None:
    cert, key = _client_files(secure, which)
    conf = librdkafka_config(
        secure,
        "MTLS",
        None,
        **{"ssl.certificate.location": str(cert), "ssl.key.location": str(key)},
    )
    stderr = _kcat_metadata(conf)
    assert "unexpected eof while reading" in stderr
    assert "Failed to acquire metadata: Local: Broker transport failure" in stderr
    _assert_none_refused_authenticated(secure)


def test_kcat_refuses_a_broker_it_does_not_trust(secure: SecureBroker) -> None:
    conf = librdkafka_config(
        secure, "SSL", None, **{"ssl.ca.location": str(secure.certificates.untrusted_ca)}
    )
    stderr = _kcat_metadata(conf)
    assert "SSL handshake failed" in stderr
    assert "certificate verify failed" in stderr


# --- kafkajs ---------------------------------------------------------------------------------


def _kafkajs_error(secure: SecureBroker, listener: str, security: dict[str, Any]) -> Any:
    answer = kafkajs(secure, listener, security)
    assert "error" in answer, "kafkajs connected"
    return answer["error"]


def test_kafkajs_wrong_password(secure: SecureBroker) -> None:
    security = kafkajs_security(secure, "SASL_SSL", "SCRAM-SHA-256")
    security["sasl"]["password"] = "wrong"
    error = _kafkajs_error(secure, "SASL_SSL", security)
    assert error["name"] == "KafkaJSSASLAuthenticationError"
    assert "invalid credentials" in error["message"]


def test_kafkajs_unknown_mechanism(secure: SecureBroker) -> None:
    error = _kafkajs_error(secure, "LIMITED", kafkajs_security(secure, "LIMITED", "SCRAM-SHA-256"))
    assert error["name"] == "KafkaJSProtocolError"
    assert error["type"] == "UNSUPPORTED_SASL_MECHANISM"


@pytest.mark.parametrize("which", REFUSED)
def test_kafkajs_refused_client_certificate(secure: SecureBroker, which: str) -> None:
    cert, key = _client_files(secure, which)
    error = _kafkajs_error(
        secure, "MTLS", kafkajs_security(secure, "MTLS", None, cert=cert, key=key)
    )
    assert error["name"] == "KafkaJSNumberOfRetriesExceeded"
    assert error["message"] == "Closed connection"
    _assert_none_refused_authenticated(secure)


def test_kafkajs_refuses_a_broker_it_does_not_trust(secure: SecureBroker) -> None:
    security = kafkajs_security(secure, "SSL", None, ca=secure.certificates.untrusted_ca)
    error = _kafkajs_error(secure, "SSL", security)
    assert error["name"] == "KafkaJSNumberOfRetriesExceeded"
    assert error["message"] == "Connection error: self-signed certificate in certificate chain"

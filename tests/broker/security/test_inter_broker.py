"""The client side of broker → broker connections (``broker.security.inter_broker``): the
context read from a broker's own listener settings, and real logins to a secured embedded
broker's SASL_SSL listener through the blocking driver (the controller's channel), the
asyncio driver (``BrokerConnection``: fetchers, markers, forwarding), with PLAIN and SCRAM,
a wrong password and an untrusted certificate refused with a clear error."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from odradek import Broker
from odradek.broker.broker_connection import (
    BrokerAuthenticationError,
    BrokerConnection,
)
from odradek.broker.security.inter_broker import (
    InterBrokerAuthenticationError,
    InterBrokerSecurity,
)
from odradek.broker.security.listeners import SecurityConfig
from odradek.controller.channel import BrokerRequest, ControllerChannel
from odradek.errors import ConfigError
from odradek.protocol import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.testing.certificates import CertificateFiles
from odradek.testing.secure_broker import (
    SCRAM_PASSWORD,
    SCRAM_USER,
    SecureBroker,
    add_scram_user,
    broker_settings,
)

_SIZE = struct.Struct(">i")


@pytest.fixture(scope="module")
def secure(certificates: CertificateFiles) -> Iterator[SecureBroker]:
    with Broker(config=broker_settings(certificates)) as broker:
        add_scram_user(broker)
        yield SecureBroker(broker, certificates)


def _jaas(module: str, username: str, password: str) -> str:
    return f'{module} required username="{username}" password="{password}";'


def _security(
    certificates: CertificateFiles,
    *,
    mechanism: str = "PLAIN",
    username: str = "admin",
    password: str = "admin-secret",
    truststore: str | None = None,
) -> InterBrokerSecurity:
    """The context a broker whose inter-broker listener is SASL_SSL would build."""
    module = (
        "org.apache.kafka.common.security.plain.PlainLoginModule"
        if mechanism == "PLAIN"
        else "org.apache.kafka.common.security.scram.ScramLoginModule"
    )
    settings = {
        "listener.security.protocol.map": "INTERNAL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": mechanism,
        f"listener.name.internal.{mechanism.lower()}.sasl.jaas.config": _jaas(
            module, username, password
        ),
        "ssl.keystore.location": str(certificates.broker_keystore),
        "ssl.key.password": certificates.key_password,
        "ssl.truststore.location": truststore or str(certificates.ca),
    }
    return InterBrokerSecurity.from_config(SecurityConfig.from_settings(settings, ["INTERNAL"]))


def _metadata(sock: socket.socket) -> dict[str, Any]:
    """A Metadata v1 request on a ready connection (refused before a login: the broker
    closes a SASL connection that sends anything else first)."""
    sock.sendall(encode_request(ApiKey.METADATA, 1, 99, "test", {"topics": []}))
    (size,) = _SIZE.unpack(_recv(sock, 4))
    correlation_id, body = decode_response(ApiKey.METADATA, 1, _recv(sock, size))
    assert correlation_id == 99
    return body


def _recv(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return data


# --- the context -----------------------------------------------------------------------------


def test_a_plaintext_inter_broker_listener_needs_nothing() -> None:
    security = InterBrokerSecurity.from_config(SecurityConfig.from_settings({}, ["PLAINTEXT"]))
    assert security.plaintext
    assert security.login("x") is None


def test_the_credentials_come_from_the_listeners_jaas_entry_for_the_mechanism() -> None:
    settings = {
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,CLIENTS:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": _jaas(
            "org.apache.kafka.common.security.scram.ScramLoginModule", "broker", "s3cret"
        ),
    }
    config = SecurityConfig.from_settings(settings, ["CLIENTS", "INTERNAL"])
    security = InterBrokerSecurity.from_config(config)
    assert (security.listener_name, security.security_protocol) == ("INTERNAL", "SASL_PLAINTEXT")
    assert (security.mechanism, security.username, security.password) == (
        "SCRAM-SHA-512",
        "broker",
        "s3cret",
    )
    assert not security.plaintext
    assert "s3cret" not in repr(security)


def test_a_sasl_inter_broker_listener_without_credentials_is_a_config_error() -> None:
    settings = {
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        "inter.broker.listener.name": "INTERNAL",
        # PLAIN's users only: nothing for SCRAM-SHA-256 to log in with.
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
        'required user_admin="x";',
    }
    config = SecurityConfig.from_settings(settings, ["INTERNAL"])
    with pytest.raises(ConfigError, match=r"listener\.name\.internal\.scram-sha-256\.sasl"):
        InterBrokerSecurity.from_config(config)


# --- blocking sockets (the controller's channel) ---------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "username", "password"),
    [("PLAIN", "admin", "admin-secret"), ("SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD)],
)
def test_a_blocking_login_over_sasl_ssl_is_served(
    secure: SecureBroker, mechanism: str, username: str, password: str
) -> None:
    security = _security(
        secure.certificates, mechanism=mechanism, username=username, password=password
    )
    port = secure.broker.listener_port("SASL_SSL")
    with security.connect("127.0.0.1", port, 10.0, "controller-9") as sock:
        assert sock.version() is not None  # TLS
        assert _metadata(sock)["brokers"]


def test_a_wrong_password_is_refused_with_a_clear_error(secure: SecureBroker) -> None:
    security = _security(
        secure.certificates, mechanism="SCRAM-SHA-256", username=SCRAM_USER, password="nope"
    )
    port = secure.broker.listener_port("SASL_SSL")
    with pytest.raises(InterBrokerAuthenticationError, match="SCRAM-SHA-256 login as 'bob'"):
        security.connect("127.0.0.1", port, 10.0, "controller-9")


def test_an_untrusted_broker_certificate_is_refused(secure: SecureBroker) -> None:
    certificates = secure.certificates
    security = _security(certificates, truststore=str(certificates.untrusted_ca))
    port = secure.broker.listener_port("SASL_SSL")
    with pytest.raises(InterBrokerAuthenticationError, match="TLS with broker"):
        security.connect("127.0.0.1", port, 10.0, "controller-9")


def test_the_controller_channel_keeps_one_tls_connection_between_rounds(
    secure: SecureBroker,
) -> None:
    security = _security(secure.certificates)
    connects: list[socket.socket] = []

    def connect(host: str, port: int, timeout_s: float) -> socket.socket:
        connects.append(security.connect(host, port, timeout_s, "controller-9"))
        return connects[-1]

    channel = ControllerChannel(9, timeout_s=10.0, connect=connect)
    port = secure.broker.listener_port("SASL_SSL")
    request = BrokerRequest("127.0.0.1", port, ApiKey.METADATA, 1, {"topics": []})
    try:
        for _ in range(3):
            answer = channel.send({0: request})[0]
            assert answer is not None
            assert answer["brokers"]
        assert len(connects) == 1
    finally:
        channel.close()


def test_the_controller_channel_gets_no_answer_from_a_broker_refusing_its_login(
    secure: SecureBroker,
) -> None:
    security = _security(secure.certificates, password="wrong")
    channel = ControllerChannel(9, timeout_s=10.0, connect=security.connector("controller-9"))
    port = secure.broker.listener_port("SASL_SSL")
    try:
        request = BrokerRequest("127.0.0.1", port, ApiKey.METADATA, 1, {"topics": []})
        assert channel.send({0: request}) == {0: None}
    finally:
        channel.close()


# --- asyncio (BrokerConnection) ----------------------------------------------------------------


def test_a_broker_connection_logs_in_once_and_keeps_the_connection(secure: SecureBroker) -> None:
    port = secure.broker.listener_port("SASL_SSL")

    async def run() -> int:
        connection = BrokerConnection(
            "replica-fetcher-9", timeout_s=10.0, security=_security(secure.certificates)
        )
        try:
            for _ in range(3):
                answer = await connection.request(
                    "127.0.0.1", port, ApiKey.METADATA, 1, {"topics": []}
                )
                assert answer["brokers"]
            return connection.connects
        finally:
            await connection.aclose()

    assert asyncio.run(run()) == 1


def test_a_broker_connection_refused_its_login_raises_an_authentication_error(
    secure: SecureBroker,
) -> None:
    port = secure.broker.listener_port("SASL_SSL")
    security = _security(secure.certificates, password="wrong")

    async def run() -> None:
        connection = BrokerConnection("replica-fetcher-9", timeout_s=10.0, security=security)
        try:
            await connection.request("127.0.0.1", port, ApiKey.METADATA, 1, {"topics": []})
        finally:
            await connection.aclose()

    with pytest.raises(BrokerAuthenticationError, match="PLAIN login as 'admin'"):
        asyncio.run(run())


def test_security_inter_broker_protocol_picks_the_listener_of_that_protocol() -> None:
    settings = {
        "listener.security.protocol.map": "CLIENTS:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "listener.name.internal.plain.sasl.jaas.config": _jaas(
            "org.apache.kafka.common.security.plain.PlainLoginModule", "broker", "pw"
        ),
    }
    security = InterBrokerSecurity.from_config(
        SecurityConfig.from_settings(settings, ["CLIENTS", "INTERNAL"])
    )
    assert (security.listener_name, security.mechanism, security.username) == (
        "INTERNAL",
        "PLAIN",
        "broker",
    )


def test_an_ssl_inter_broker_listener_has_tls_and_no_login(secure: SecureBroker) -> None:
    certificates = secure.certificates
    settings = {
        "listener.security.protocol.map": "INTERNAL:SSL",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.location": str(certificates.broker_keystore),
        "ssl.key.password": certificates.key_password,
        "ssl.truststore.location": str(certificates.ca),
    }
    security = InterBrokerSecurity.from_config(SecurityConfig.from_settings(settings, ["INTERNAL"]))
    assert security.mechanism is None
    assert not security.plaintext
    with security.connect("127.0.0.1", secure.broker.listener_port("SSL"), 10.0, "c") as sock:
        assert _metadata(sock)["brokers"]

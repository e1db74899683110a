"""The server's side of authentication on real sockets: before a SASL login only ApiVersions
and SASL pass (anything else, or a frame over sasl.server.max.receive.size, closes the
connection without an answer); after it the connection is served with the user's principal;
a plaintext listener answers the SASL APIs ILLEGAL_SASL_STATE; KIP-368 re-authentication."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from tests._blocking_connection import BlockingConnection

from odradek import Broker
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey
from odradek.protocol.sasl import PlainClient

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    settings = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.sasl.server.max.receive.size": "1024",
        "connections.max.reauth.ms": "600000",
    }
    with Broker(config=settings) as started:
        yield started


def _sasl(broker: Broker) -> BlockingConnection:
    return BlockingConnection(f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}", timeout_s=5)


def _closed(connection: BlockingConnection) -> bool:
    try:
        connection.request(ApiKey.API_VERSIONS, 0, {})
    except KafkaError as error:
        return error.error_code == ErrorCode.NETWORK_EXCEPTION
    return False


def _login(connection: BlockingConnection, password: str = "alice-secret") -> dict[str, object]:
    handshake = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert handshake["error_code"] == 0
    assert list(handshake["mechanisms"]) == ["PLAIN"]
    token = PlainClient("alice", password).first_token()
    return connection.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


def test_api_versions_then_login_then_metadata(broker: Broker) -> None:
    with _sasl(broker) as connection:
        versions = connection.request(ApiKey.API_VERSIONS, 0, {})
        assert {k["api_key"] for k in versions["api_keys"]} >= {17, 36}
        answer = _login(connection)
        assert answer["error_code"] == 0
        assert answer["session_lifetime"] == 600000
        metadata = connection.request(ApiKey.METADATA, 1, {"topics": []})
        # The broker advertises the listener the client came in on.
        assert metadata["brokers"][0]["port"] == broker.listener_port("SASL_PLAINTEXT")


def test_a_request_before_login_closes_the_connection(broker: Broker) -> None:
    with _sasl(broker) as connection:
        connection.send(ApiKey.METADATA, 1, {"topics": []})
        assert _closed(connection)


def test_a_large_frame_before_login_closes_the_connection(broker: Broker) -> None:
    with _sasl(broker) as connection:
        connection._socket.sendall(struct.pack(">i", 4096) + b"\x00" * 64)
        assert _closed(connection)


def test_a_wrong_password_is_answered_then_closed(broker: Broker) -> None:
    with _sasl(broker) as connection:
        answer = _login(connection, "nope")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "Invalid username or password" in str(answer["error_message"])
        assert _closed(connection)


def test_re_authentication_keeps_the_connection(broker: Broker) -> None:
    with _sasl(broker) as connection:
        assert _login(connection)["error_code"] == 0
        assert _login(connection)["error_code"] == 0
        assert connection.request(ApiKey.METADATA, 1, {"topics": []})["brokers"]


def test_a_plaintext_listener_answers_sasl_with_illegal_state(broker: Broker) -> None:
    with BlockingConnection(broker.bootstrap_servers, timeout_s=5) as connection:
        answer = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert answer["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert connection.request(ApiKey.METADATA, 1, {"topics": []})["brokers"]

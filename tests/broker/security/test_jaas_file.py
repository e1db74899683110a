"""The static JAAS file (``java.security.auth.login.config``): its sections parsed as Java's
``ConfigFile`` reads them, the sections a listener takes PLAIN's users and its own credentials
from (``<listener>.KafkaServer``, then ``KafkaServer``, only the mechanism's login module;
inline ``sasl.jaas.config`` settings win), the setting's errors, and a PLAIN login against an
embedded broker whose users come from the file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests._blocking_connection import BlockingConnection

from odradek import Broker
from odradek.broker.security.jaas import parse_jaas_file
from odradek.broker.security.listeners import SecurityConfig
from odradek.errors import ConfigError
from odradek.protocol import ApiKey
from odradek.protocol.sasl import PlainClient

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
JAAS_FILE = f"""
// Kafka's broker JAAS file, as in its security docs
KafkaServer {{
    {PLAIN_MODULE} required
    username="admin"
    password="admin-secret" /* the broker's own login */
    user_admin="admin-secret"
    user_alice="alice // not a comment";
    {SCRAM_MODULE} required username="scram-admin" password="scram-secret";
}};

sasl_ssl.KafkaServer {{
    {PLAIN_MODULE} required user_carol="carol-secret";
}};
Client {{ org.apache.zookeeper.server.auth.DigestLoginModule required; }};
"""


def test_sections_entries_comments_and_quotes() -> None:
    sections = parse_jaas_file(JAAS_FILE, source="kafka_server_jaas.conf")
    assert list(sections) == ["KafkaServer", "sasl_ssl.KafkaServer", "Client"]
    plain, scram = sections["KafkaServer"]
    assert (plain.login_module, plain.flag) == (PLAIN_MODULE, "required")
    assert dict(plain.options) == {
        "username": "admin",
        "password": "admin-secret",
        "user_admin": "admin-secret",
        "user_alice": "alice // not a comment",
    }
    assert scram.option("username") == "scram-admin"
    assert [e.option("user_carol") for e in sections["sasl_ssl.KafkaServer"]] == ["carol-secret"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("KafkaServer { x required a=1; ", "has no closing '}'"),
        ("{ x required; };", "expected '<name> {'"),
        ("KafkaServer x required; };", "expected '<name> {'"),
        ("KafkaServer { x required; }; KafkaServer { y required; };", "given twice"),
        ("/* KafkaServer { x required; };", "unterminated /* comment"),
        ("KafkaServer { x required a=1 };", "an entry must end with ';'"),
        ("KafkaServer { };", "no login module"),
    ],
)
def test_a_malformed_file_is_refused_naming_it(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"jaas\.conf") as raised:
        parse_jaas_file(text, source="jaas.conf")
    assert message in str(raised.value)


def _security(path: Path, **more: str) -> SecurityConfig:
    return SecurityConfig.from_settings(
        {
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "listener.name.sasl_ssl.ssl.keystore.location": "/unused.pem",
            "java.security.auth.login.config": str(path),
            **more,
        },
        ["SASL_PLAINTEXT", "SASL_SSL"],
    )


def test_a_listener_takes_its_own_section_then_kafka_server(tmp_path: Path) -> None:
    path = tmp_path / "jaas.conf"
    path.write_text(JAAS_FILE)
    security = _security(path)
    plaintext, ssl = security.for_listener("SASL_PLAINTEXT"), security.for_listener("SASL_SSL")
    assert dict(plaintext.plain_users) == {
        "admin": "admin-secret",
        "alice": "alice // not a comment",
    }
    assert plaintext.client_credentials == {
        "PLAIN": ("admin", "admin-secret"),
        "SCRAM-SHA-256": ("scram-admin", "scram-secret"),
        "SCRAM-SHA-512": ("scram-admin", "scram-secret"),
    }
    assert dict(ssl.plain_users) == {"carol": "carol-secret"}
    assert ssl.client_credentials == {}


def test_inline_settings_win_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "jaas.conf"
    path.write_text(JAAS_FILE)
    inline = f'{PLAIN_MODULE} required user_dave="dave-secret";'
    security = _security(path, **{"listener.name.sasl_plaintext.plain.sasl.jaas.config": inline})
    assert dict(security.for_listener("SASL_PLAINTEXT").plain_users) == {"dave": "dave-secret"}
    assert dict(security.for_listener("SASL_SSL").plain_users) == {"carol": "carol-secret"}


def test_a_missing_or_bad_file_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read java\.security\.auth\.login\.config file"):
        _security(tmp_path / "missing.conf")
    bad = tmp_path / "bad.conf"
    bad.write_text("KafkaServer {")
    with pytest.raises(ConfigError, match=r"invalid JAAS file .*bad\.conf"):
        _security(bad)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    path = tmp_path_factory.mktemp("jaas") / "kafka_server_jaas.conf"
    path.write_text(JAAS_FILE)
    settings = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "java.security.auth.login.config": str(path),
    }
    with Broker(config=settings) as started:
        yield started


def login(port: int, user: str, password: str) -> int:
    """Logs in with PLAIN on a new connection: the SaslAuthenticate error code."""
    with BlockingConnection(f"127.0.0.1:{port}", timeout_s=5) as connection:
        handshake = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert handshake["error_code"] == 0
        token = PlainClient(user, password).first_token()
        answer = connection.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        return int(answer["error_code"])


def test_a_user_of_the_file_logs_in(broker: Broker) -> None:
    port = broker.listener_port("SASL_PLAINTEXT")
    assert login(port, "alice", "alice // not a comment") == 0
    assert login(port, "alice", "alice-secret") == 58  # SASL_AUTHENTICATION_FAILED
    assert login(port, "carol", "carol-secret") == 58  # sasl_ssl.KafkaServer's user only

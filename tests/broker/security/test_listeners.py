"""Listener security settings: JAAS text, the protocol map, per-listener overrides and the
errors that name the bad setting."""

from __future__ import annotations

import pytest

from odradek.broker.config import BrokerConfig
from odradek.broker.security.jaas import parse_jaas_config, plain_users
from odradek.broker.security.listeners import SecurityConfig, is_security_setting
from odradek.errors import ConfigError

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="a \\"quoted\\" pw";'
)


def test_jaas_users_and_options() -> None:
    [entry] = parse_jaas_config(PLAIN_JAAS)
    assert entry.login_module.endswith("PlainLoginModule")
    assert entry.flag == "required"
    assert entry.option("username") == "admin"
    assert plain_users([entry]) == {"admin": "admin-secret", "alice": 'a "quoted" pw'}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('PlainLoginModule required user_a="x"', "must end with ';'"),
        ('PlainLoginModule user_a="x";', "option before the control flag"),
        ("PlainLoginModule mandatory;", "control flag 'mandatory'"),
        ("", "no login module"),
        ('PlainLoginModule required a="unterminated;', "unexpected"),
    ],
)
def test_bad_jaas_text_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_jaas_config(text)


def test_names_given_per_listener_win() -> None:
    security = SecurityConfig.from_settings(
        {
            "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
            "inter.broker.listener.name": "internal",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.external.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.jaas.config": PLAIN_JAAS,
            "listener.name.internal.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'username="b" password="bp" user_b="bp";'
            ),
            "listener.name.external.connections.max.reauth.ms": "60000",
        },
        ["INTERNAL", "EXTERNAL"],
    )
    internal, external = security.for_listener("INTERNAL"), security.for_listener("EXTERNAL")
    assert security.inter_broker_listener_name == "INTERNAL"
    assert internal.sasl_mechanisms == ("PLAIN",)
    assert dict(internal.plain_users) == {"b": "bp"}
    assert internal.client_credentials["PLAIN"] == ("b", "bp")
    assert external.sasl_mechanisms == ("SCRAM-SHA-512",)
    assert external.connections_max_reauth_ms == 60000
    assert internal.connections_max_reauth_ms == 0
    assert internal.uses_sasl
    assert not internal.uses_tls


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"listeners": "INTERNAL://h:1"}, "INTERNAL has no security protocol"),
        (
            {"listeners": "A://h:1", "listener.security.protocol.map": "A:TLS"},
            "listener.security.protocol.map",
        ),
        ({"listeners": "SASL_PLAINTEXT://h:1", "sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI"),
        (
            {"listeners": "SSL://h:1", "ssl.keystore.type": "JKS", "ssl.keystore.location": "k"},
            "only PEM keystores",
        ),
        (
            {"listeners": "SSL://h:1", "ssl.keystore.location": "k", "ssl.client.auth": "yes"},
            "ssl.client.auth",
        ),
        (
            {"listeners": "SSL://h:1", "ssl.keystore.location": "k", "ssl.client.auth": "required"},
            "needs ssl.truststore",
        ),
        (
            {
                "listeners": "SSL://h:1",
                "ssl.keystore.location": "k",
                "ssl.enabled.protocols": "TLSv1.1",
            },
            "ssl.enabled.protocols",
        ),
        (
            {"listeners": "PLAINTEXT://h:1", "inter.broker.listener.name": "OTHER"},
            "inter.broker.listener.name",
        ),
        (
            {
                "listeners": "SSL://h:1",
                "ssl.keystore.location": "k",
                "ssl.principal.mapping.rules": "RULE:^CN=(.*$/$1/",
            },
            "ssl.principal.mapping.rules",
        ),
        (
            {"listeners": "SASL_PLAINTEXT://h:1", "sasl.jaas.config": "Module required x"},
            "sasl.jaas.config",
        ),
    ],
)
def test_bad_security_settings_name_the_setting(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_mapping(settings)


def test_security_settings_are_not_reported_as_unimplemented() -> None:
    config = BrokerConfig.from_mapping(
        {
            "listeners": "PLAINTEXT://h:1,SASL_SSL://h:2",
            "ssl.keystore.location": "/k.pem",
            "ssl.key.password": "x",
            "sasl.enabled.mechanisms": "PLAIN",
        }
    )
    assert config.unimplemented == ()
    assert config.security.for_listener("SASL_SSL").ssl is not None
    assert config.security.for_listener("PLAINTEXT").ssl is None
    assert is_security_setting("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config")
    assert not is_security_setting("listener.name.sasl_ssl.ssl.keymanager.algorithm")


def test_security_settings_are_described_as_given_and_passwords_hidden() -> None:
    config = BrokerConfig.from_mapping(
        {
            "listeners": "SASL_PLAINTEXT://h:1",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "sasl.enabled.mechanisms": "PLAIN",
        }
    )
    described = config.describe()
    mechanisms = described["sasl.enabled.mechanisms"]
    assert (mechanisms.value, mechanisms.implemented, mechanisms.is_default) == (
        "PLAIN",
        True,
        False,
    )
    jaas = described["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert jaas.sensitive
    assert jaas.implemented
    assert described["ssl.client.auth"].value == "none"
    assert described["ssl.client.auth"].is_default

"""Listener security as Kafka configures it: which security protocol each named listener speaks
and, per listener, its TLS and SASL settings.

Settings read here (Kafka's names and defaults):

- ``listener.security.protocol.map`` (``NAME:PROTOCOL,...``; by default each of PLAINTEXT,
  SSL, SASL_PLAINTEXT and SASL_SSL maps to itself, so a listener may be named after its
  protocol);
- ``inter.broker.listener.name`` (default: the listener named after
  ``security.inter.broker.protocol``, PLAINTEXT) and ``sasl.mechanism.inter.broker.protocol``;
- ``sasl.enabled.mechanisms`` (Kafka's default GSSAPI is not offered: odradek's default is
  PLAIN,SCRAM-SHA-256,SCRAM-SHA-512 on SASL listeners);
- ``sasl.jaas.config`` and ``listener.name.<l>.<mechanism>.sasl.jaas.config`` (PLAIN's users,
  and the credentials this broker presents to others);
- ``java.security.auth.login.config``: a static JAAS file, as a Kafka broker takes it from the
  JVM system property (``odradek serve`` sets it from ``--jaas-config`` or ``KAFKA_OPTS``). A
  listener with none of the settings above for a mechanism uses the file's
  ``<listener, lower case>.KafkaServer`` section, else its ``KafkaServer`` section, and of
  that section the entries of the mechanism's login module (PlainLoginModule for PLAIN,
  ScramLoginModule for SCRAM), as Kafka does. The file is read once, here;
- ``sasl.server.max.receive.size`` (524288): the largest frame before authentication;
- ``connections.max.reauth.ms`` (0: sessions never expire; KIP-368);
- ``connection.failed.authentication.delay.ms`` (100): how long a connection whose
  authentication failed stays open, unread, after the failure's answer (KIP-306);
- every ``ssl.*`` setting of ``security.tls``.

Each of those may be given per listener as ``listener.name.<listener, lower case>.<setting>``,
which wins over the plain name. ``SecurityConfig.from_settings`` validates values
and names the bad setting in a ``ConfigError``; files other than the JAAS file are read when
the server starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from odradek.broker.kafka_settings import kafka_setting_base
from odradek.broker.security.jaas import (
    KAFKA_SERVER_SECTION,
    JaasEntry,
    login_module_of,
    parse_jaas_config,
    parse_jaas_file,
    plain_users,
)
from odradek.broker.security.tls import SslSettings
from odradek.errors import ConfigError
from odradek.protocol.sasl import PLAIN, ScramMechanism

__all__ = [
    "JAAS_FILE_SETTING",
    "SECURITY_DEFAULTS",
    "SECURITY_PROTOCOLS",
    "SECURITY_SETTING_NAMES",
    "ListenerSecurity",
    "SecurityConfig",
    "described_default",
    "is_security_setting",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = {protocol: protocol for protocol in SECURITY_PROTOCOLS}
SUPPORTED_MECHANISMS = (PLAIN, *(m.mechanism_name for m in ScramMechanism))
DEFAULT_MECHANISMS = SUPPORTED_MECHANISMS
#: The JVM system property naming a Kafka broker's static JAAS file.
JAAS_FILE_SETTING = "java.security.auth.login.config"
#: Kafka's ``sasl.server.max.receive.size``.
DEFAULT_MAX_RECEIVE_SIZE = 524288

_GLOBAL_NAMES = frozenset(
    {
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "security.inter.broker.protocol",
        "sasl.mechanism.inter.broker.protocol",
        "connection.failed.authentication.delay.ms",
    }
)
_PER_LISTENER_NAMES = frozenset(
    {
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.server.max.receive.size",
        "connections.max.reauth.ms",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.certificates",
        "ssl.enabled.protocols",
        "ssl.client.auth",
        "ssl.cipher.suites",
        "ssl.principal.mapping.rules",
        "ssl.endpoint.identification.algorithm",
    }
)
#: Every plain (not per-listener) setting name read here.
SECURITY_SETTING_NAMES = _GLOBAL_NAMES | _PER_LISTENER_NAMES
#: odradek's defaults where they differ from Kafka's (PEM stores, no GSSAPI), or where
#: Kafka has none; DescribeConfigs reports these.
SECURITY_DEFAULTS: Mapping[str, str] = {
    "listener.security.protocol.map": ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS),
    "sasl.enabled.mechanisms": ",".join(DEFAULT_MECHANISMS),
    "sasl.mechanism.inter.broker.protocol": PLAIN,
    "ssl.keystore.type": "PEM",
    "ssl.truststore.type": "PEM",
}
_LISTENER_PREFIX = re.compile(r"listener\.name\.(?P<listener>[a-z0-9_]+)\.(?P<rest>.+)")
_MECHANISM_JAAS = re.compile(r"(?P<mechanism>[a-z0-9\-]+)\.sasl\.jaas\.config")


def described_default(name: str) -> str | None:
    """The default DescribeConfigs reports for a security setting: odradek's, else Kafka's."""
    kafka = kafka_setting_base(name)
    return SECURITY_DEFAULTS.get(name, kafka.default if kafka is not None else None)


def is_security_setting(name: str) -> bool:
    """Whether ``name`` is a setting this module reads (plain or per-listener; the JAAS file's
    system property too, which is no broker setting of Kafka's and so not described)."""
    if name == JAAS_FILE_SETTING or name in _GLOBAL_NAMES or name in _PER_LISTENER_NAMES:
        return True
    match = _LISTENER_PREFIX.fullmatch(name)
    if match is None:
        return False
    rest = match["rest"]
    return rest in _PER_LISTENER_NAMES or _MECHANISM_JAAS.fullmatch(rest) is not None


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """How one listener authenticates its clients.

    ``ssl`` is set for SSL and SASL_SSL; ``sasl_mechanisms`` is non-empty for SASL_*;
    ``plain_users`` are PLAIN's users; ``client_credentials`` what this broker presents as a
    client of this listener (``username``, ``password`` of its JAAS entries, by mechanism).
    """

    name: str
    security_protocol: str = "PLAINTEXT"
    ssl: SslSettings | None = None
    sasl_mechanisms: tuple[str, ...] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict)
    client_credentials: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE
    connections_max_reauth_ms: int = 0
    failed_authentication_delay_ms: int = 100

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """Every listener's security, by listener name, and the inter-broker choices."""

    listeners: Mapping[str, ListenerSecurity] = field(default_factory=dict)
    inter_broker_listener_name: str = "PLAINTEXT"
    sasl_mechanism_inter_broker_protocol: str = PLAIN

    def for_listener(self, name: str) -> ListenerSecurity:
        return self.listeners.get(name) or ListenerSecurity(name)

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, str], listener_names: Sequence[str]
    ) -> SecurityConfig:
        """Builds the listeners' security from the security settings given (plain strings).

        Raises:
            ConfigError: a listener with no protocol in the map, an unknown protocol or
                mechanism, an SSL listener without a key, malformed JAAS text or file, a JAAS
                file that cannot be read, an inter-broker listener that is not a listener;
                the message names the setting.
        """
        jaas_file = _read_jaas_file(settings.get(JAAS_FILE_SETTING))
        protocol_map = _protocol_map(settings.get("listener.security.protocol.map"))
        listeners: dict[str, ListenerSecurity] = {}
        for name in listener_names:
            protocol = protocol_map.get(name)
            if protocol is None:
                raise ConfigError(
                    f"listener {name} has no security protocol: add {name}:<protocol> to "
                    "listener.security.protocol.map"
                )
            listeners[name] = _listener(settings, name, protocol, jaas_file)
        inter_broker = settings.get("inter.broker.listener.name")
        if inter_broker is None:
            protocol = settings.get("security.inter.broker.protocol", "PLAINTEXT").upper()
            names = [n for n in listener_names if listeners[n].security_protocol == protocol]
            inter_broker = names[0] if names else listener_names[0]
        inter_broker = inter_broker.upper()
        if inter_broker not in listeners:
            raise ConfigError(
                f"invalid value {inter_broker!r} for inter.broker.listener.name: not one of "
                f"the listeners {sorted(listeners)}"
            )
        mechanism = settings.get("sasl.mechanism.inter.broker.protocol", PLAIN)
        if listeners[inter_broker].uses_sasl and mechanism not in SUPPORTED_MECHANISMS:
            raise ConfigError(
                f"invalid value {mechanism!r} for sasl.mechanism.inter.broker.protocol: "
                f"expected one of {list(SUPPORTED_MECHANISMS)}"
            )
        return cls(listeners, inter_broker, mechanism)


def _protocol_map(raw: str | None) -> dict[str, str]:
    if raw is None:
        return dict(DEFAULT_PROTOCOL_MAP)
    mapping: dict[str, str] = {}
    for entry in (part.strip() for part in raw.split(",") if part.strip()):
        name, sep, protocol = entry.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"invalid value {raw!r} for listener.security.protocol.map: expected "
                f"NAME:PROTOCOL entries with a protocol of {list(SECURITY_PROTOCOLS)}"
            )
        mapping[name.strip().upper()] = protocol
    return mapping


def _read_jaas_file(path: str | None) -> Mapping[str, list[JaasEntry]]:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {JAAS_FILE_SETTING} file {path}: {error}") from None
    return parse_jaas_file(text, source=path)


def _listener(
    settings: Mapping[str, str],
    name: str,
    protocol: str,
    jaas_file: Mapping[str, list[JaasEntry]],
) -> ListenerSecurity:
    prefix = f"listener.name.{name.lower()}."

    def get(setting: str, default: str | None = None) -> str | None:
        value = settings.get(prefix + setting)
        return settings.get(setting, default) if value is None else value

    ssl_settings = None
    if protocol in ("SSL", "SASL_SSL"):
        ssl_settings = _ssl_settings(get, name)
    mechanisms: tuple[str, ...] = ()
    users: dict[str, str] = {}
    credentials: dict[str, tuple[str, str]] = {}
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanisms = _list(get("sasl.enabled.mechanisms")) or DEFAULT_MECHANISMS
        for mechanism in mechanisms:
            if mechanism not in SUPPORTED_MECHANISMS:
                raise ConfigError(
                    f"invalid value {','.join(mechanisms)!r} for sasl.enabled.mechanisms "
                    f"(listener {name}): {mechanism} is not one of {list(SUPPORTED_MECHANISMS)}"
                )
            entries = _jaas(settings, prefix, mechanism, name, jaas_file)
            if mechanism == PLAIN:
                users = plain_users(entries)
            for entry in entries:
                username, password = entry.option("username"), entry.option("password")
                if username is not None and password is not None:
                    credentials[mechanism] = (username, password)
    return ListenerSecurity(
        name=name,
        security_protocol=protocol,
        ssl=ssl_settings,
        sasl_mechanisms=mechanisms,
        plain_users=users,
        client_credentials=credentials,
        max_receive_size=_int(get, "sasl.server.max.receive.size", DEFAULT_MAX_RECEIVE_SIZE),
        connections_max_reauth_ms=_int(get, "connections.max.reauth.ms", 0),
        failed_authentication_delay_ms=_int(
            lambda name, default=None: settings.get(name, default),
            "connection.failed.authentication.delay.ms",
            100,
        ),
    )


def _jaas(
    settings: Mapping[str, str],
    prefix: str,
    mechanism: str,
    listener: str,
    jaas_file: Mapping[str, list[JaasEntry]],
) -> list[JaasEntry]:
    for setting in (
        f"{prefix}{mechanism.lower()}.sasl.jaas.config",
        f"{prefix}sasl.jaas.config",
        "sasl.jaas.config",
    ):
        text = settings.get(setting)
        if text is not None:
            return parse_jaas_config(text, setting=setting)
    for section in (f"{listener.lower()}.{KAFKA_SERVER_SECTION}", KAFKA_SERVER_SECTION):
        entries = jaas_file.get(section)
        if entries is not None:
            module = login_module_of(mechanism)
            return [entry for entry in entries if entry.login_module == module]
    return []


def _ssl_settings(get: _Getter, name: str) -> SslSettings:
    keystore_type = (get("ssl.keystore.type", "PEM") or "PEM").upper()
    if keystore_type != "PEM":
        raise ConfigError(
            f"invalid value {keystore_type!r} for ssl.keystore.type (listener {name}): only "
            "PEM keystores are supported"
        )
    truststore_type = (get("ssl.truststore.type", "PEM") or "PEM").upper()
    if truststore_type != "PEM":
        raise ConfigError(
            f"invalid value {truststore_type!r} for ssl.truststore.type (listener {name}): only "
            "PEM truststores are supported"
        )
    settings = SslSettings(
        keystore_location=get("ssl.keystore.location") or None,
        keystore_key=get("ssl.keystore.key") or None,
        keystore_certificate_chain=get("ssl.keystore.certificate.chain") or None,
        key_password=get("ssl.key.password") or None,
        truststore_location=get("ssl.truststore.location") or None,
        truststore_certificates=get("ssl.truststore.certificates") or None,
        enabled_protocols=_list(get("ssl.enabled.protocols")) or ("TLSv1.2", "TLSv1.3"),
        client_auth=(get("ssl.client.auth", "none") or "none").lower(),
        cipher_suites=_list(get("ssl.cipher.suites")),
        principal_mapping_rules=get("ssl.principal.mapping.rules", "DEFAULT") or "DEFAULT",
        endpoint_identification_algorithm=get("ssl.endpoint.identification.algorithm", "https")
        or "",
    )
    settings.validate(name)
    return settings


class _Getter(Protocol):  # the shape of ``get`` in ``_listener``
    def __call__(self, setting: str, default: str | None = None) -> str | None: ...


def _list(raw: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (raw or "").split(",") if part.strip())


def _int(get: _Getter, setting: str, default: int) -> int:
    raw = get(setting)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"invalid value {raw!r} for {setting}: expected an integer") from None
    if value < 0:
        raise ConfigError(f"invalid value {raw!r} for {setting}: must be at least 0")
    return value

"""The client's side of Kafka security: TLS settings and the SASL login, by Kafka's names.

Settings (the Java client's and librdkafka's names; both are accepted where they differ):

- ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
- ``ssl.ca.location`` / ``ssl.truststore.location`` (PEM CA file; none: the system's CAs),
  ``ssl.truststore.certificates`` (inline PEM);
  ``ssl.certificate.location`` / ``ssl.key.location`` / ``ssl.key.password`` (a client
  certificate for mutual TLS; or ``ssl.keystore.location``, one PEM with key and chain);
  ``ssl.endpoint.identification.algorithm`` (``https``, the default: check the broker's
  host name; empty or ``none``: do not); ``ssl.truststore.type`` / ``ssl.keystore.type``
  must be PEM when given (their passwords are accepted and unused: PEM keys use
  ``ssl.key.password``), so the Java client's options Spark passes work unchanged;
- ``sasl.mechanism`` / ``sasl.mechanisms`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with
  ``sasl.username`` / ``sasl.password`` or a ``sasl.jaas.config`` holding
  ``username="..." password="..."``.

``ClientSecurity.from_config`` checks the combination; the connection asks it for an
``ssl.SSLContext`` and a fresh SASL exchange (``protocol.sasl``) per connection.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odradek.errors import ConfigError
from odradek.protocol.sasl import PLAIN, PlainClient, ScramClient, ScramMechanism

__all__ = ["SECURITY_KEYS", "ClientSecurity", "SaslClient"]

SaslClient = PlainClient | ScramClient

#: The setting names read here (registered as common client keys by ``client.config``).
SECURITY_KEYS = (
    "ssl.ca.location",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.keystore.location",
    "ssl.endpoint.identification.algorithm",
    "ssl.truststore.type",
    "ssl.keystore.type",
    "ssl.truststore.password",
    "ssl.keystore.password",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "sasl.jaas.config",
)
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_JAAS_OPTION = re.compile(r'(?P<key>username|password)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """A client's transport security and SASL credentials (immutable, shared by its
    connections)."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    check_hostname: bool = True
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @property
    def uses_tls(self) -> bool:
        return self.ssl_context is not None

    @property
    def uses_sasl(self) -> bool:
        return self.mechanism is not None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ClientSecurity:
        """Reads the security settings of a client configuration (values as coerced).

        Raises:
            ConfigError: an unknown protocol or mechanism, SASL without credentials, or TLS
                files that cannot be loaded; the message names the setting.
        """
        protocol = str(config.get("security.protocol") or "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise ConfigError(f"security.protocol: {protocol!r} is not one of {list(PROTOCOLS)}")
        for name in ("ssl.truststore.type", "ssl.keystore.type"):
            kind = str(config.get(name) or "PEM").upper()
            if kind != "PEM":
                raise ConfigError(f"{name}: only PEM files are supported, not {kind}")
        context = _ssl_context(config) if protocol in ("SSL", "SASL_SSL") else None
        algorithm = str(config.get("ssl.endpoint.identification.algorithm") or "https")
        check_hostname = algorithm.lower() not in ("", "none")
        if context is not None:
            context.check_hostname = check_hostname
        if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
            return cls(protocol, context, check_hostname)
        mechanism = str(config.get("sasl.mechanism") or config.get("sasl.mechanisms") or "")
        mechanism = mechanism.upper() or "GSSAPI"
        if mechanism != PLAIN and ScramMechanism.by_name(mechanism) is None:
            raise ConfigError(
                f"sasl.mechanism: {mechanism} is not supported (PLAIN, SCRAM-SHA-256, "
                "SCRAM-SHA-512)"
            )
        username = config.get("sasl.username")
        password = config.get("sasl.password")
        jaas = config.get("sasl.jaas.config")
        if jaas and (username is None or password is None):
            options = {m["key"]: m["value"] for m in _JAAS_OPTION.finditer(str(jaas))}
            username = options.get("username", username)
            password = options.get("password", password)
        if username is None or password is None:
            raise ConfigError(
                f"sasl.mechanism {mechanism} needs sasl.username and sasl.password (or a "
                "sasl.jaas.config with username and password)"
            )
        return cls(protocol, context, check_hostname, mechanism, str(username), str(password))

    def new_sasl_client(self) -> SaslClient:
        """A fresh exchange for one connection (only when ``uses_sasl``)."""
        assert self.mechanism is not None
        if self.mechanism == PLAIN:
            return PlainClient(self.username, self.password)
        scram = ScramMechanism.by_name(self.mechanism)
        assert scram is not None
        return ScramClient(scram, self.username, self.password)


def _ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    cafile = config.get("ssl.ca.location") or config.get("ssl.truststore.location")
    inline = config.get("ssl.truststore.certificates")
    certificate = config.get("ssl.certificate.location") or config.get("ssl.keystore.location")
    key = config.get("ssl.key.location")
    try:
        if cafile or inline:
            if cafile:
                context.load_verify_locations(cafile=str(cafile))
            if inline:
                context.load_verify_locations(cadata=str(inline))
        else:
            context.load_default_certs()
        if certificate:
            context.load_cert_chain(
                str(certificate),
                str(key) if key else None,
                password=config.get("ssl.key.password") or None,
            )
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"ssl.*: cannot load the TLS files: {error}") from None
    return context

"""TLS for the broker's SSL and SASL_SSL listeners: the server's ``ssl.SSLContext`` from Kafka's
``ssl.*`` settings (PEM only), and the principal of a client certificate.

Settings (Kafka's names, per listener with ``listener.name.<l>.`` in front):

- ``ssl.keystore.type`` must be ``PEM``; ``ssl.keystore.location`` is one PEM file holding
  the private key (encrypted with ``ssl.key.password`` or not) and the certificate chain, or
  ``ssl.keystore.key`` / ``ssl.keystore.certificate.chain`` hold them inline;
- ``ssl.truststore.location`` (a PEM file of CA certificates) or
  ``ssl.truststore.certificates`` (inline) — the CAs a client certificate must chain to;
- ``ssl.enabled.protocols`` (``TLSv1.2,TLSv1.3``): the range of versions allowed;
- ``ssl.client.auth``: ``required`` (mTLS), ``requested`` (checked when sent) or ``none``;
- ``ssl.cipher.suites``: OpenSSL cipher names for TLS 1.2 (empty: OpenSSL's defaults);
- ``ssl.principal.mapping.rules``: how a certificate's subject becomes the user name;
- ``ssl.endpoint.identification.algorithm`` (``https``): when this broker connects to another
  one through the listener (``client_ssl_context``), check the other's host name against its
  certificate (empty: do not).

The principal of an authenticated certificate is ``User:<mapped subject>``, where the subject
is written as Java's ``X500Principal.getName()`` writes it (RFC 2253: the most specific RDN
first, ``CN=alice,OU=eng,O=acme``). Without a client certificate the principal is ANONYMOUS.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from odradek.errors import ConfigError

__all__ = [
    "PrincipalMappingRules",
    "SslSettings",
    "client_ssl_context",
    "server_ssl_context",
    "subject_name",
]

_TLS_VERSIONS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}


@dataclass(frozen=True, slots=True)
class SslSettings:
    """One listener's ``ssl.*`` settings, validated (files are read when the context is built)."""

    keystore_location: str | None = None
    keystore_key: str | None = None
    keystore_certificate_chain: str | None = None
    key_password: str | None = None
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    client_auth: str = "none"
    cipher_suites: tuple[str, ...] = ()
    principal_mapping_rules: str = "DEFAULT"
    endpoint_identification_algorithm: str = "https"

    def validate(self, listener: str) -> None:
        """Raises ``ConfigError`` naming the setting when the listener cannot serve TLS."""
        if self.keystore_location is None and (
            self.keystore_key is None or self.keystore_certificate_chain is None
        ):
            raise ConfigError(
                f"listener {listener}: an SSL listener needs ssl.keystore.location (PEM) or "
                "ssl.keystore.key and ssl.keystore.certificate.chain"
            )
        unknown = [p for p in self.enabled_protocols if p not in _TLS_VERSIONS]
        if unknown or not self.enabled_protocols:
            raise ConfigError(
                f"invalid value {','.join(self.enabled_protocols)!r} for ssl.enabled.protocols: "
                f"expected some of {sorted(_TLS_VERSIONS)}"
            )
        if self.client_auth not in CLIENT_AUTH:
            raise ConfigError(
                f"invalid value {self.client_auth!r} for ssl.client.auth: expected one of "
                f"{sorted(CLIENT_AUTH)}"
            )
        if self.client_auth != "none" and not (
            self.truststore_location or self.truststore_certificates
        ):
            raise ConfigError(
                f"listener {listener}: ssl.client.auth={self.client_auth} needs "
                "ssl.truststore.location or ssl.truststore.certificates"
            )
        PrincipalMappingRules.parse(self.principal_mapping_rules)


def server_ssl_context(settings: SslSettings) -> ssl.SSLContext:
    """The server side TLS context of a listener.

    Raises:
        ConfigError: a key or certificate file that cannot be read or does not match, or a
            wrong ``ssl.key.password``.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_TLS_VERSIONS[p] for p in settings.enabled_protocols)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]
    if settings.cipher_suites:
        try:
            context.set_ciphers(":".join(settings.cipher_suites))
        except ssl.SSLError as error:
            raise ConfigError(f"invalid ssl.cipher.suites: {error}") from None
    try:
        if settings.keystore_location is not None:
            context.load_cert_chain(
                settings.keystore_location, password=settings.key_password or None
            )
        else:
            assert settings.keystore_key is not None
            assert settings.keystore_certificate_chain is not None
            _load_inline_chain(
                context,
                settings.keystore_certificate_chain,
                settings.keystore_key,
                settings.key_password,
            )
        if settings.truststore_location:
            context.load_verify_locations(cafile=settings.truststore_location)
        if settings.truststore_certificates:
            context.load_verify_locations(cadata=settings.truststore_certificates)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"cannot load the listener's TLS key or certificates: {error}") from None
    context.verify_mode = CLIENT_AUTH[settings.client_auth]
    return context


def client_ssl_context(settings: SslSettings) -> ssl.SSLContext:
    """The client side TLS context of a listener: what this broker uses to connect to another
    broker's listener of the same name (the truststore checks the other's certificate; the
    keystore's certificate is presented when the other asks for one).

    Raises:
        ConfigError: a key or certificate file that cannot be read or does not match.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    versions = sorted(_TLS_VERSIONS[p] for p in settings.enabled_protocols)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]
    if settings.cipher_suites:
        try:
            context.set_ciphers(":".join(settings.cipher_suites))
        except ssl.SSLError as error:
            raise ConfigError(f"invalid ssl.cipher.suites: {error}") from None
    try:
        if settings.truststore_location or settings.truststore_certificates:
            if settings.truststore_location:
                context.load_verify_locations(cafile=settings.truststore_location)
            if settings.truststore_certificates:
                context.load_verify_locations(cadata=settings.truststore_certificates)
        else:
            context.load_default_certs()
        if settings.keystore_location is not None:
            context.load_cert_chain(
                settings.keystore_location, password=settings.key_password or None
            )
        elif settings.keystore_key is not None and settings.keystore_certificate_chain:
            _load_inline_chain(
                context,
                settings.keystore_certificate_chain,
                settings.keystore_key,
                settings.key_password,
            )
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"cannot load the listener's TLS key or certificates: {error}") from None
    context.check_hostname = settings.endpoint_identification_algorithm.lower() == "https"
    return context


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    # ssl loads keys from files only: write both to a private temporary file and drop it.
    with tempfile.TemporaryDirectory(prefix="odradek-tls-") as directory:
        path = os.path.join(directory, "keystore.pem")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password or None)


# --- the principal of a client certificate --------------------------------------------------

#: Short names Java's RFC 2253 rendering uses (others are written by their OpenSSL name).
_SHORT_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _escape_value(value: str) -> str:
    escaped = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def subject_name(certificate: dict[str, Any]) -> str | None:
    """The subject of a peer certificate (``SSLSocket.getpeercert()``) as RFC 2253 text, most
    specific RDN first; ``None`` for an empty dict (no certificate)."""
    subject: Sequence[Sequence[tuple[str, str]]] = certificate.get("subject", ())
    if not subject:
        return None
    rdns = []
    for rdn in reversed(subject):
        rdns.append(
            "+".join(f"{_SHORT_NAMES.get(key, key)}={_escape_value(value)}" for key, value in rdn)
        )
    return ",".join(rdns)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str
    case: str  # "", "L" or "U"


class PrincipalMappingRules:
    """``ssl.principal.mapping.rules``: ``RULE:pattern/replacement/[LU]`` and ``DEFAULT``
    entries, separated by commas or new lines, tried in order; the first rule whose pattern
    matches the whole subject gives the name (``$1`` in the replacement is group 1; ``L`` / ``U``
    lowercase / uppercase it). ``DEFAULT`` gives the subject as it is. No rule matching is an
    error (Kafka refuses the connection)."""

    def __init__(self, rules: Sequence[_Rule]) -> None:
        self._rules = tuple(rules)

    @classmethod
    def parse(cls, text: str) -> PrincipalMappingRules:
        """Raises ``ConfigError`` for a malformed rule or a pattern that is not a regex."""
        rules: list[_Rule] = []
        position = 0
        text = text.strip()
        while position < len(text):
            while position < len(text) and text[position] in " \t\n,":
                position += 1
            if position >= len(text):
                break
            if text.startswith("DEFAULT", position):
                rules.append(_Rule(None, "", ""))
                position += len("DEFAULT")
                continue
            if not text.startswith("RULE:", position):
                raise ConfigError(
                    f"invalid ssl.principal.mapping.rules: expected RULE: or DEFAULT at "
                    f"{text[position:][:30]!r}"
                )
            position += len("RULE:")
            pattern, position = _until_slash(text, position)
            replacement, position = _until_slash(text, position)
            case = ""
            if position < len(text) and text[position] in "LU":
                case = text[position]
                position += 1
            try:
                compiled = re.compile(pattern)
            except re.error as error:
                raise ConfigError(
                    f"invalid ssl.principal.mapping.rules: pattern {pattern!r}: {error}"
                ) from None
            rules.append(_Rule(compiled, _python_replacement(replacement), case))
            while position < len(text) and text[position] not in ",\n":
                position += 1
        if not rules:
            raise ConfigError("invalid ssl.principal.mapping.rules: no rule")
        return cls(rules)

    def apply(self, subject: str) -> str:
        """The principal name of ``subject``.

        Raises:
            ValueError: no rule matches (Kafka: "No rules apply to ...").
        """
        for rule in self._rules:
            if rule.pattern is None:
                return subject
            match = rule.pattern.fullmatch(subject)
            if match is None:
                continue
            name = match.expand(rule.replacement)
            if rule.case == "L":
                return name.lower()
            if rule.case == "U":
                return name.upper()
            return name
        raise ValueError(f"no ssl.principal.mapping.rules rule applies to {subject!r}")


def _until_slash(text: str, position: int) -> tuple[str, int]:
    """Reads up to an unescaped ``/``; ``\\/`` stands for ``/``."""
    out: list[str] = []
    while position < len(text):
        char = text[position]
        if char == "\\" and text[position + 1 : position + 2] == "/":
            out.append("/")
            position += 2
            continue
        if char == "/":
            return "".join(out), position + 1
        out.append(char)
        position += 1
    raise ConfigError("invalid ssl.principal.mapping.rules: a RULE needs pattern/replacement/")


def _python_replacement(java: str) -> str:
    """Java's ``$1`` group references as Python's ``\\g<1>``; other backslashes kept literal."""
    out: list[str] = []
    position = 0
    while position < len(java):
        char = java[position]
        if char == "$" and position + 1 < len(java) and java[position + 1].isdigit():
            end = position + 1
            while end < len(java) and java[end].isdigit():
                end += 1
            out.append(f"\\g<{java[position + 1 : end]}>")
            position = end
            continue
        if char == "\\" and position + 1 < len(java):
            out.append("\\\\" if java[position + 1] == "\\" else java[position + 1])
            position += 2
            continue
        out.append(char)
        position += 1
    return "".join(out)

"""TLS helpers: Kafka's principal mapping rules, the RFC 2253 subject of a certificate, and
server contexts from PEM keystores (made by openssl)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from odradek.broker.security.tls import (
    PrincipalMappingRules,
    SslSettings,
    server_ssl_context,
    subject_name,
)
from odradek.errors import ConfigError
from odradek.testing.certificates import CertificateFiles

SUBJECT = "CN=alice,OU=eng,O=acme,C=NO"


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ("DEFAULT", SUBJECT),
        ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/", "alice@eng"),
        ("RULE:^CN=(.*?),.*$/$1/U", "ALICE"),
        ("RULE:^CN=bob,.*$/bob/, RULE:^CN=([^,]*),.*$/$1/L, DEFAULT", "alice"),
        ("RULE:^CN=nobody$/x/,DEFAULT", SUBJECT),
        ("RULE:^(.*)$/a\\/b $1/", f"a/b {SUBJECT}"),
    ],
)
def test_principal_mapping_rules(rules: str, expected: str) -> None:
    assert PrincipalMappingRules.parse(rules).apply(SUBJECT) == expected


def test_no_rule_applying_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"no ssl\.principal\.mapping\.rules rule"):
        PrincipalMappingRules.parse("RULE:^CN=bob$/bob/").apply(SUBJECT)


@pytest.mark.parametrize("rules", ["", "RULE:^CN=(.*)$", "SOMETHING", "RULE:([/x/"])
def test_malformed_rules_are_refused(rules: str) -> None:
    with pytest.raises(ConfigError):
        PrincipalMappingRules.parse(rules)


def test_subject_is_written_most_specific_first_with_escapes() -> None:
    certificate = {
        "subject": (
            (("countryName", "NO"),),
            (("organizationName", "acme, inc"),),
            (("commonName", "alice"), ("userId", "7")),
        )
    }
    assert subject_name(certificate) == "CN=alice+UID=7,O=acme\\, inc,C=NO"
    assert subject_name({}) is None


def test_a_pem_keystore_with_an_encrypted_key_loads(certificates: CertificateFiles) -> None:
    settings = SslSettings(
        keystore_location=str(certificates.broker_keystore),
        key_password=certificates.key_password,
        truststore_location=str(certificates.ca),
        client_auth="required",
        enabled_protocols=("TLSv1.3",),
    )
    context = server_ssl_context(settings)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3


def test_inline_keystore_and_truststore_load(certificates: CertificateFiles) -> None:
    settings = SslSettings(
        keystore_key=certificates.broker_key.read_text(),
        keystore_certificate_chain=certificates.broker_cert.read_text(),
        truststore_certificates=certificates.ca.read_text(),
        client_auth="requested",
    )
    assert server_ssl_context(settings).verify_mode == ssl.CERT_OPTIONAL


def test_a_wrong_key_password_is_a_config_error(certificates: CertificateFiles) -> None:
    settings = SslSettings(keystore_location=str(certificates.broker_keystore), key_password="no")
    with pytest.raises(ConfigError, match="cannot load"):
        server_ssl_context(settings)


def test_a_missing_keystore_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot load"):
        server_ssl_context(SslSettings(keystore_location=str(tmp_path / "none.pem")))

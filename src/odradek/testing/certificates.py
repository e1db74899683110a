"""Test certificates made with the ``openssl`` binary: a CA, a broker certificate for
127.0.0.1 / localhost, client certificates (one expired, one from an untrusted CA), in the PEM
files Kafka's ``ssl.keystore.type=PEM`` settings and every client read.

``make_certificates(directory)`` returns a ``CertificateFiles`` of paths. Keys are P-256 (fast
to make); the broker's key in ``broker_keystore`` is encrypted with ``key_password``, as a
Kafka PEM keystore with ``ssl.key.password`` holds it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CertificateFiles", "make_certificates"]

KEY_PASSWORD = "key-secret"  # noqa: S105 (a test key's password)


@dataclass(frozen=True, slots=True)
class CertificateFiles:
    """Paths of the PEM files (and the broker key's password)."""

    ca: Path
    broker_cert: Path
    broker_key: Path
    #: Encrypted key then certificate: ``ssl.keystore.location`` with ``ssl.key.password``.
    broker_keystore: Path
    key_password: str
    client_cert: Path
    client_key: Path
    client_subject: str
    expired_cert: Path
    expired_key: Path
    untrusted_ca: Path
    untrusted_cert: Path
    untrusted_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise FileNotFoundError("the openssl binary is needed to make test certificates")
    subprocess.run([openssl, *args], cwd=cwd, check=True, capture_output=True)  # noqa: S603


def _key_and_csr(directory: Path, name: str, subject: str) -> None:
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
        cwd=directory,
    )  # fmt: skip


def _ca(directory: Path, name: str, subject: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "30", "-subj", subject,
        cwd=directory,
    )  # fmt: skip


def _sign(directory: Path, name: str, ca: str, serial: int, days: int, ext: str = "") -> None:
    args = [
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
        "-set_serial", str(serial), "-days", str(days), "-out", f"{name}.pem",
    ]  # fmt: skip
    if ext:
        (directory / f"{name}.ext").write_text(ext)
        args += ["-extfile", f"{name}.ext"]
    _openssl(*args, cwd=directory)


def make_certificates(directory: Path) -> CertificateFiles:
    """Makes every file in ``directory`` (which must exist).

    Raises:
        subprocess.CalledProcessError: openssl failed.
    """
    _ca(directory, "ca", "/CN=odradek-test-ca")
    _ca(directory, "untrusted-ca", "/CN=someone-else")
    _key_and_csr(directory, "broker", "/CN=localhost/OU=brokers/O=odradek")
    _sign(
        directory, "broker", "ca", 2, 30,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
    )  # fmt: skip
    _openssl(
        "pkcs8", "-topk8", "-in", "broker.key", "-out", "broker-encrypted.key",
        "-v2", "aes-256-cbc", "-passout", f"pass:{KEY_PASSWORD}",
        cwd=directory,
    )  # fmt: skip
    keystore = directory / "broker-keystore.pem"
    keystore.write_text(
        (directory / "broker-encrypted.key").read_text() + (directory / "broker.pem").read_text()
    )
    subject = "/C=NO/O=acme/OU=eng/CN=alice"
    _key_and_csr(directory, "client", subject)
    _sign(directory, "client", "ca", 3, 30, "extendedKeyUsage=clientAuth\n")
    _key_and_csr(directory, "expired", "/O=acme/CN=mallory")
    _sign(directory, "expired", "ca", 4, -1, "extendedKeyUsage=clientAuth\n")
    _key_and_csr(directory, "untrusted", "/O=acme/CN=eve")
    _sign(directory, "untrusted", "untrusted-ca", 5, 30, "extendedKeyUsage=clientAuth\n")
    return CertificateFiles(
        ca=directory / "ca.pem",
        broker_cert=directory / "broker.pem",
        broker_key=directory / "broker.key",
        broker_keystore=keystore,
        key_password=KEY_PASSWORD,
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        client_subject="CN=alice,OU=eng,O=acme,C=NO",
        expired_cert=directory / "expired.pem",
        expired_key=directory / "expired.key",
        untrusted_ca=directory / "untrusted-ca.pem",
        untrusted_cert=directory / "untrusted.pem",
        untrusted_key=directory / "untrusted.key",
    )

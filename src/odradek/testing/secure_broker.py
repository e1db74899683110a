"""A secured embedded broker for tests and benchmarks: six listeners, test certificates, a
PLAIN user and a SCRAM user with both mechanisms.

Listeners: PLAINTEXT; SSL (no client certificate asked); MTLS (SSL, ``ssl.client.auth=
required``, principal ``User:alice`` through a mapping rule); SASL_PLAINTEXT and SASL_SSL
(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); LIMITED (SASL_PLAINTEXT with PLAIN only, for the
unknown-mechanism case).
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek import Broker
from odradek.protocol.sasl import ScramCredential, ScramMechanism
from odradek.testing.certificates import CertificateFiles

PLAIN_USER, PLAIN_PASSWORD = "alice", "alice-secret"
SCRAM_USER, SCRAM_PASSWORD = "bob", "bob-secret"
LISTENERS = ("PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL", "LIMITED")


@dataclass(frozen=True, slots=True)
class SecureBroker:
    """A started broker with ``broker_settings`` and its certificates."""

    broker: Broker
    certificates: CertificateFiles

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.broker.listener_port(listener)}"


def broker_settings(certificates: CertificateFiles) -> dict[str, str]:
    """The broker settings of the six listeners (every port 0)."""
    listeners = ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS)
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="admin-secret" user_admin="admin-secret" '
        f'user_{PLAIN_USER}="{PLAIN_PASSWORD}";'
    )
    return {
        "listeners": listeners,
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL,LIMITED:SASL_PLAINTEXT"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certificates.broker_keystore),
        "ssl.key.password": certificates.key_password,
        "ssl.truststore.location": str(certificates.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.limited.sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": jaas,
        "group.initial.rebalance.delay.ms": "0",
        "num.partitions": "2",
    }


def add_scram_user(broker: Broker) -> None:
    """Gives ``SCRAM_USER`` both SCRAM credentials (``SCRAM_PASSWORD``)."""
    ctx = broker.app.ctx
    store = ctx.scram_credentials if ctx is not None else None
    assert store is not None, "the broker is not started"
    store.alter(
        SCRAM_USER,
        {m: ScramCredential.from_password(m, SCRAM_PASSWORD, 4096) for m in ScramMechanism},
    )

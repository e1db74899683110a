"""Who is asking: Kafka's principal (``User:alice``) as the broker's security layers share it.

The contract between the two halves of security: authentication (TLS client certificates,
SASL) decides a connection's principal and sets it with ``CLIENT_PRINCIPAL`` around each
dispatch, as the server sets ``CLIENT_HOST``; authorization and quotas only read it. A
connection that has not authenticated (a PLAINTEXT listener) is ``ANONYMOUS``, as in Kafka.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

__all__ = ["ANONYMOUS", "CLIENT_PRINCIPAL", "KafkaPrincipal"]


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """A principal by type and name, written ``Type:name`` as Kafka's ACLs and tools write it."""

    principal_type: str
    name: str

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """Reads ``Type:name`` (the name may itself contain ``:``).

        Raises:
            ValueError: if ``text`` has no ``:`` or an empty type.
        """
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"a principal is written Type:name, not {text!r}")
        return cls(kind, name)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


#: Kafka's principal for a connection that did not authenticate.
ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")

#: The principal of the connection whose request is being handled.
CLIENT_PRINCIPAL: contextvars.ContextVar[KafkaPrincipal] = contextvars.ContextVar(
    "client_principal", default=ANONYMOUS
)

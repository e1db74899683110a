"""``ScramAdmin``: the SCRAM credential calls of ``AdminClient`` (KIP-554).

``alter_user_scram_credentials`` upserts and deletes users' SCRAM-SHA-256 / SCRAM-SHA-512
credentials; the password never leaves the client: it is salted and hashed here
(PBKDF2, ``protocol.sasl``) and the broker derives its stored and server keys from the
salted password. ``describe_user_scram_credentials`` tells each user's mechanisms and
iteration counts. Both go to the controller, as Kafka's admin client sends them. Per-user
errors (RESOURCE_NOT_FOUND, UNACCEPTABLE_CREDENTIAL, ...) come back in the ``AdminResult``.

Thread safety: each call holds the client's lock (``AdminRequests.lock``).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odradek.client.admin_requests import AdminRequests
from odradek.client.admin_types import AdminResult
from odradek.client.admin_wire import item_error, raise_for
from odradek.errors import ConfigError, KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.protocol.sasl import ScramMechanism

__all__ = ["ScramAdmin", "ScramDeletion", "ScramUpsertion"]

SCRAM_VERSIONS: Final = VersionRange(0, 0)


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    """Set ``user``'s credential for ``mechanism`` (``SCRAM-SHA-256`` or ``SCRAM-SHA-512``)."""

    user: str
    mechanism: str
    password: str
    iterations: int = 4096


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    """Remove ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: str


def _mechanism(name: str) -> ScramMechanism:
    mechanism = ScramMechanism.by_name(name.upper())
    if mechanism is None:
        raise ConfigError(f"unknown SCRAM mechanism {name!r} (SCRAM-SHA-256, SCRAM-SHA-512)")
    return mechanism


class ScramAdmin:
    """SCRAM credentials (see the module docstring)."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

    def alter_user_scram_credentials(
        self,
        alterations: Sequence[ScramUpsertion | ScramDeletion],
        *,
        timeout_ms: int | None = None,
    ) -> AdminResult[str, None]:
        """Upserts and deletes credentials (AlterUserScramCredentials).

        Returns:
            Per user: ``None``, or on lookup the user's ``KafkaError``.

        Raises:
            ConfigError: an unknown mechanism.
            KafkaError: the request failed (the deadline, the network).
        """
        deletions: list[dict[str, Any]] = []
        upsertions: list[dict[str, Any]] = []
        for alteration in alterations:
            mechanism = _mechanism(alteration.mechanism)
            if isinstance(alteration, ScramDeletion):
                deletions.append({"name": alteration.user, "mechanism": mechanism.type_id})
                continue
            salt = secrets.token_bytes(32)
            salted = mechanism.salted_password(alteration.password, salt, alteration.iterations)
            upsertions.append(
                {
                    "name": alteration.user,
                    "mechanism": mechanism.type_id,
                    "iterations": alteration.iterations,
                    "salt": salt,
                    "salted_password": salted,
                }
            )
        order = list(dict.fromkeys(a.user for a in alterations))
        deadline = self._requests.deadline(timeout_ms)
        with self._requests.lock:
            body = self._requests.call(
                self._requests.controller,
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                SCRAM_VERSIONS,
                {"deletions": deletions, "upsertions": upsertions},
                deadline,
            )
        errors: dict[str, KafkaError] = {}
        answered = set()
        for result in body["results"]:
            user = str(result["user"])
            answered.add(user)
            if result["error_code"]:
                errors[user] = item_error(result, user)
        for user in order:
            if user not in answered:
                errors[user] = KafkaError(f"{user}: not in the response")
        return AdminResult(order, {u: None for u in order if u not in errors}, errors)

    def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None, *, timeout_ms: int | None = None
    ) -> AdminResult[str, Mapping[str, int]]:
        """Each user's SCRAM mechanisms and iterations (DescribeUserScramCredentials);
        ``users`` None: every user that has one.

        Returns:
            Per user: mechanism name → iterations, or on lookup the user's ``KafkaError``
            (RESOURCE_NOT_FOUND: no credential).

        Raises:
            KafkaError: the request failed (its top-level error, or the deadline).
        """
        deadline = self._requests.deadline(timeout_ms)
        fields = {"users": None if users is None else [{"name": user} for user in users]}
        with self._requests.lock:
            body = self._requests.call(
                self._requests.controller,
                ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                SCRAM_VERSIONS,
                fields,
                deadline,
            )
        raise_for(body, "DescribeUserScramCredentials")
        order: list[str] = []
        values: dict[str, Mapping[str, int]] = {}
        errors: dict[str, KafkaError] = {}
        for result in body["results"]:
            user = str(result["user"])
            order.append(user)
            if result["error_code"]:
                errors[user] = item_error(result, user)
                continue
            infos = {}
            for info in result["credential_infos"]:
                mechanism = ScramMechanism.by_type_id(int(info["mechanism"]))
                name = mechanism.mechanism_name if mechanism else str(info["mechanism"])
                infos[name] = int(info["iterations"])
            values[user] = infos
        return AdminResult(order, values, errors)

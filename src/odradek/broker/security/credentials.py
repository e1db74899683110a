"""SCRAM credentials in the metadata store, where Kafka's ZooKeeper mode keeps them.

Layout (Kafka's): ``/config/users/<sanitized user>`` holds
``{"version":1,"config":{"SCRAM-SHA-256":"salt=<b64>,stored_key=<b64>,server_key=<b64>,
iterations=<n>", ...}}``. Other keys of that ``config`` (client quotas, written by the quota
manager) are kept untouched: every write here is a version-conditional read-modify-write of the
SCRAM keys only, retried on a concurrent change. The user name in the path is URL-encoded as
Kafka's ``Sanitizer`` does. Reads go to the store each time (the local store is in memory; a
ZooKeeper read per SASL handshake is what Kafka's cache avoids and we accept for now).
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse
from collections.abc import Mapping
from typing import Any

from odradek.controller.store import MetadataStore
from odradek.errors import BadVersionError, InvalidPathError, NodeExistsError, NoNodeError
from odradek.protocol.sasl import ScramCredential, ScramMechanism

__all__ = ["USERS_CONFIG_PATH", "ScramCredentialStore", "format_credential", "parse_credential"]

logger = logging.getLogger(__name__)

USERS_CONFIG_PATH = "/config/users"
_RETRIES = 8


def sanitize(user: str) -> str:
    """The node name of a user (URL-encoded; ``*`` and ``~`` too, spaces as ``%20``)."""
    return urllib.parse.quote(user, safe="").replace("~", "%7E").replace("*", "%2A")


def desanitize(node: str) -> str:
    return urllib.parse.unquote(node)


def format_credential(credential: ScramCredential) -> str:
    """Kafka's text form of a stored credential."""
    return (
        f"salt={base64.b64encode(credential.salt).decode()},"
        f"stored_key={base64.b64encode(credential.stored_key).decode()},"
        f"server_key={base64.b64encode(credential.server_key).decode()},"
        f"iterations={credential.iterations}"
    )


def parse_credential(text: str) -> ScramCredential:
    """Reads Kafka's text form.

    Raises:
        ValueError: a missing or malformed field.
    """
    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    try:
        return ScramCredential(
            salt=base64.b64decode(fields["salt"], validate=True),
            stored_key=base64.b64decode(fields["stored_key"], validate=True),
            server_key=base64.b64decode(fields["server_key"], validate=True),
            iterations=int(fields["iterations"]),
        )
    except (KeyError, ValueError) as error:
        raise ValueError(f"malformed SCRAM credential: {error}") from None


class ScramCredentialStore:
    """Reads and writes users' SCRAM credentials. Thread-safe as the store is."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    def _path(self, user: str) -> str:
        return f"{USERS_CONFIG_PATH}/{sanitize(user)}"

    def _read(self, user: str) -> tuple[dict[str, Any], int] | None:
        try:
            data, version = self._store.get(self._path(user))
        except (NoNodeError, InvalidPathError):
            return None  # no such user; a name no node can have ("", ".", "..") has none
        try:
            document = json.loads(data or b"{}")
        except ValueError:
            logger.warning("ignoring the unreadable user config of %s", user)
            return {"version": 1, "config": {}}, version
        if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
            return {"version": 1, "config": {}}, version
        return document, version

    def credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        """The user's credential for ``mechanism`` (None: none, or unreadable)."""
        found = self._read(user)
        if found is None:
            return None
        text = found[0]["config"].get(mechanism.mechanism_name)
        if not isinstance(text, str):
            return None
        try:
            return parse_credential(text)
        except ValueError as error:
            logger.warning("user %s: %s", user, error)
            return None

    def describe(self, user: str) -> dict[ScramMechanism, int]:
        """The user's mechanisms and their iterations."""
        found = self._read(user)
        result: dict[ScramMechanism, int] = {}
        if found is None:
            return result
        for mechanism in ScramMechanism:
            text = found[0]["config"].get(mechanism.mechanism_name)
            if isinstance(text, str):
                try:
                    result[mechanism] = parse_credential(text).iterations
                except ValueError:
                    continue
        return result

    def users(self) -> list[str]:
        """Every user with at least one SCRAM credential, sorted."""
        try:
            nodes = self._store.children(USERS_CONFIG_PATH)
        except NoNodeError:
            return []
        return sorted(user for user in map(desanitize, nodes) if self.describe(user))

    def alter(
        self,
        user: str,
        upsert: Mapping[ScramMechanism, ScramCredential],
        delete: frozenset[ScramMechanism] = frozenset(),
    ) -> None:
        """Sets and removes the user's credentials in one conditional write.

        Raises:
            MetadataStoreError: the store failed, or kept changing under ``_RETRIES`` attempts.
        """
        for _ in range(_RETRIES):
            found = self._read(user)
            document: dict[str, Any] = {"version": 1}
            version = -1
            if found is not None:
                document, version = found
            config = dict(document.get("config") or {})
            for mechanism in delete:
                config.pop(mechanism.mechanism_name, None)
            for mechanism, credential in upsert.items():
                config[mechanism.mechanism_name] = format_credential(credential)
            data = json.dumps({**document, "version": 1, "config": config}).encode()
            try:
                if version < 0:
                    self._store.create(self._path(user), data, make_parents=True)
                else:
                    self._store.set(self._path(user), data, version)
                return
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
        raise BadVersionError(f"{self._path(user)} kept changing; credentials not altered")

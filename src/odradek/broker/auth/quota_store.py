"""``QuotaStore``: client quotas in the metadata store, as Kafka's ZooKeeper brokers kept them,
with the config change notifications that bring every broker's ``ClientQuotas`` up to date.

Layout (Kafka's; names URL-encoded as Kafka's ``Sanitizer`` does, ``<default>`` as is)::

    /config/users/<user>                      {"version":1,"config":
                                                {"producer_byte_rate":"1048576.0"}}
    /config/users/<user>/clients/<client-id>  (same form)
    /config/clients/<client-id>               (same form)
    /config/changes/config_change_<10 digits> {"version":2,"entity_path":"users/alice"}

A writer changes an entity's node with compare-and-set (a node whose last quota goes keeps
``{}`` when it has client children, and is deleted otherwise), then adds a change
notification; every broker watches ``/config/changes`` and reloads the entities named by the
notifications it has not read (everything, when some were pruned before it read them).

All methods block on the store: handlers call them off the event loop.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import urllib.parse
from collections.abc import Mapping, Sequence

from odradek.broker.auth.quotas import DEFAULT, QUOTA_KEYS, ClientQuotas, QuotaEntity
from odradek.controller.store import MetadataStore, join_path
from odradek.errors import BadVersionError, MetadataStoreError, NodeExistsError, NoNodeError

__all__ = ["QuotaStore", "entity_path"]

logger = logging.getLogger(__name__)

USERS = "/config/users"
CLIENTS = "/config/clients"
CHANGES = "/config/changes"
CHANGE_PREFIX = "config_change_"
NOTIFICATIONS_KEPT = 1000
_RETRIES = 20


def sanitize(name: str) -> str:
    """A user or client id as a path component (Kafka's ``Sanitizer``)."""
    if name == DEFAULT:
        return name
    encoded = urllib.parse.quote(name, safe="").replace("*", "%2A")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def desanitize(component: str) -> str:
    return component if component == DEFAULT else urllib.parse.unquote(component)


def entity_path(entity: QuotaEntity) -> str:
    """The node of an entity (relative form ``users/u/clients/c`` after ``/config/``)."""
    if entity.user is None:
        assert entity.client_id is not None
        return join_path(CLIENTS, sanitize(entity.client_id))
    path = join_path(USERS, sanitize(entity.user))
    if entity.client_id is not None:
        path = join_path(path, "clients", sanitize(entity.client_id))
    return path


def _entity_of(relative: str) -> QuotaEntity:
    """Raises ValueError for a path that names no quota entity."""
    parts = relative.split("/")
    if len(parts) == 2 and parts[0] == "users":
        return QuotaEntity(desanitize(parts[1]), None)
    if len(parts) == 2 and parts[0] == "clients":
        return QuotaEntity(None, desanitize(parts[1]))
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
        return QuotaEntity(desanitize(parts[1]), desanitize(parts[3]))
    raise ValueError(f"not a quota entity path: {relative!r}")


def _decode(data: bytes) -> dict[str, float]:
    if not data:
        return {}
    try:
        config = json.loads(data).get("config", {})
        return {str(k): float(v) for k, v in config.items() if k in QUOTA_KEYS}
    except (ValueError, AttributeError, TypeError) as error:
        raise ValueError(f"malformed quota node: {error}") from None


def _encode(values: Mapping[str, float]) -> bytes:
    config = {key: repr(float(value)) for key, value in sorted(values.items())}
    return json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode()


def _sequence(child: str) -> int:
    suffix = child.removeprefix(CHANGE_PREFIX)
    return int(suffix) if suffix.isdigit() else -1


class QuotaStore:
    """Reads and writes quotas in ``store`` and keeps ``quotas`` current."""

    def __init__(self, store: MetadataStore, quotas: ClientQuotas) -> None:
        self.store = store
        self.quotas = quotas
        self._lock = threading.Lock()
        self._seen = -1
        self.reloads = 0

    def start(self) -> None:
        for path in (USERS, CLIENTS, CHANGES):
            if not self.store.exists(path):
                with contextlib.suppress(NodeExistsError):
                    self.store.create(path, make_parents=True)
        with self._lock:
            self._seen = max((_sequence(c) for c in self.store.children(CHANGES)), default=-1)
            self._reload_all()
        self.store.watch_children(CHANGES, self._on_change)

    # ----------------------------------------------------------------- reading

    def _reload_all(self) -> None:
        configs: dict[QuotaEntity, dict[str, float]] = {}
        for client in self.store.children(CLIENTS):
            entity = QuotaEntity(None, desanitize(client))
            configs[entity] = self._read(entity)
        for user in self.store.children(USERS):
            entity = QuotaEntity(desanitize(user), None)
            configs[entity] = self._read(entity)
            clients = join_path(USERS, user, "clients")
            if self.store.exists(clients):
                for client in self.store.children(clients):
                    both = QuotaEntity(desanitize(user), desanitize(client))
                    configs[both] = self._read(both)
        self.quotas.replace_all(configs)
        self.reloads += 1

    def _read(self, entity: QuotaEntity) -> dict[str, float]:
        try:
            data, _ = self.store.get(entity_path(entity))
            return _decode(data)
        except NoNodeError:
            return {}
        except ValueError as error:
            logger.warning("ignoring the quotas of %s: %s", entity, error)
            return {}

    def _on_change(self, _path: str) -> None:
        try:
            with self._lock:
                self._process()
        except MetadataStoreError as error:
            logger.warning("cannot read quota changes: %s", error)

    def _process(self) -> None:
        try:
            children = self.store.children(CHANGES)
        except NoNodeError:
            return
        new = sorted((s, c) for c in children if (s := _sequence(c)) > self._seen)
        if not new:
            return
        if new[0][0] != self._seen + 1:
            self._seen = new[-1][0]
            self._reload_all()
            return
        for sequence, child in new:
            self._seen = sequence
            try:
                data, _ = self.store.get(join_path(CHANGES, child))
                entity = _entity_of(str(json.loads(data)["entity_path"]))
            except NoNodeError:
                continue
            except (ValueError, KeyError, TypeError) as error:
                logger.debug("config change %s is not a quota change: %s", child, error)
                continue
            self.quotas.set_quotas(entity, self._read(entity))

    # ----------------------------------------------------------------- writing

    def alter(
        self, entity: QuotaEntity, to_set: Mapping[str, float], to_remove: Sequence[str]
    ) -> dict[str, float]:
        """Sets and removes quotas of one entity; returns its quotas after.

        Raises:
            ValueError: an unknown quota key or a value that is not positive.
            MetadataStoreError: the store failed.
        """
        for key, value in to_set.items():
            if key not in QUOTA_KEYS:
                raise ValueError(f"unknown quota key {key!r} (known: {sorted(QUOTA_KEYS)})")
            if not value > 0:
                raise ValueError(f"quota {key} must be positive, not {value}")
        for key in to_remove:
            if key not in QUOTA_KEYS:
                raise ValueError(f"unknown quota key {key!r} (known: {sorted(QUOTA_KEYS)})")
        path = entity_path(entity)
        for _ in range(_RETRIES):
            try:
                data, version = self.store.get(path)
                current = _decode(data)
            except NoNodeError:
                current, version = {}, -2
            except ValueError:
                current, version = {}, self.store.get(path)[1]
            wanted = {k: v for k, v in current.items() if k not in to_remove}
            wanted.update({k: float(v) for k, v in to_set.items()})
            if wanted == current and version != -2:
                return wanted
            if not wanted and version == -2:
                return wanted
            try:
                if version == -2:
                    self.store.create(path, _encode(wanted), make_parents=True)
                elif wanted or self.store.children(path):
                    self.store.set(path, _encode(wanted), version)
                else:
                    self.store.delete(path, version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
            self.quotas.set_quotas(entity, wanted)
            self._notify(path)
            return wanted
        raise BadVersionError(f"{path}: too many concurrent quota changes, try again")

    def _notify(self, path: str) -> None:
        relative = path.removeprefix("/config/")
        data = json.dumps({"version": 2, "entity_path": relative}, separators=(",", ":"))
        for _ in range(_RETRIES):
            sequences = sorted(_sequence(c) for c in self.store.children(CHANGES))
            following = (sequences[-1] if sequences else -1) + 1
            try:
                self.store.create(
                    join_path(CHANGES, f"{CHANGE_PREFIX}{following:010d}"), data.encode()
                )
            except NodeExistsError:
                continue
            for old in sequences[: max(0, len(sequences) + 1 - NOTIFICATIONS_KEPT)]:
                with contextlib.suppress(NoNodeError):
                    self.store.delete(join_path(CHANGES, f"{CHANGE_PREFIX}{old:010d}"))
            return
        logger.warning("could not write the config change notification of %s", path)

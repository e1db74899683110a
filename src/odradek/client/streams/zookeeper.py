"""``ZooKeeperGroup``: one member's view of a ZooKeeper-coordinated consumer group — its
session, its registration, the owner and offset nodes, and the watches that call for a
rebalance.

The only client module that reaches ZooKeeper, and the one arrow from ``client`` into
``controller`` (checked by import-linter; docs/architecture.md says why): it uses the
``MetadataStore`` port and its ZooKeeper adapter for the session, and ``ClusterMetadata``
read-only for the cluster's own layout (``/brokers/topics/<t>``'s partitions, ``/brokers/ids``'
addresses), so the layout's JSON has one reader.

Legacy Kafka's group layout, under the ``zookeeper.connect`` chroot::

    /consumers/<group>/ids/<consumer id>           (ephemeral)  the registration (zk_assignment)
    /consumers/<group>/owners/<topic>/<partition>  (ephemeral)  the owning thread id
    /consumers/<group>/offsets/<topic>/<partition>              the next offset, decimal text

Ephemeral nodes belong to this member's session: when it ends (``close``, a crash, an
expiry) ZooKeeper drops them and the other members' watches fire. ``on_change`` is called
(on the ZooKeeper client's thread; it must only note the change) after a change of the
group's members, of a watched topic's assignment, or (for topic filters) of the topic list.

Thread safety: every method may be called from any thread (the store's guarantee).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping

from odradek._types import TopicPartition
from odradek.client.streams.zk_assignment import Registration
from odradek.controller.store import join_path
from odradek.controller.topics import TOPICS_PATH, ClusterMetadata
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.errors import (
    NodeExistsError,
    NoNodeError,
    SessionClosedError,
    UnknownTopicOrPartitionError,
)

__all__ = ["ZooKeeperGroup"]

log = logging.getLogger(__name__)

CONSUMERS_PATH = "/consumers"


class ZooKeeperGroup:
    """One member of ``group_id`` (see the module docstring).

    Args:
        connect: ``zookeeper.connect``.
        group_id: the group.
        member: this member's consumer id.
        on_change: called after a change that may move partitions.
        session_timeout_ms, connection_timeout_ms: the session's timeouts.

    Raises:
        StoreConnectionError: no session within ``connection_timeout_ms``.
        InvalidPathError: a malformed ``connect``.
    """

    def __init__(
        self,
        connect: str,
        group_id: str,
        member: str,
        on_change: Callable[[], None],
        *,
        session_timeout_ms: int,
        connection_timeout_ms: int,
    ) -> None:
        self.group_id = group_id
        self.member = member
        self._on_change = on_change
        self._store = ZooKeeperMetadataStore(
            connect,
            session_timeout_ms=session_timeout_ms,
            connection_timeout_ms=connection_timeout_ms,
        )
        self._cluster = ClusterMetadata(self._store)
        self._base = join_path(CONSUMERS_PATH, group_id)
        self._watched_topics: set[str] = set()
        self._watching_topic_list = False

    # ------------------------------------------------------------------ paths

    @property
    def ids_path(self) -> str:
        return join_path(self._base, "ids")

    def owner_path(self, tp: TopicPartition) -> str:
        return join_path(self._base, "owners", tp.topic, str(tp.partition))

    def offset_path(self, tp: TopicPartition) -> str:
        return join_path(self._base, "offsets", tp.topic, str(tp.partition))

    # ------------------------------------------------------------------ session

    def add_session_lost_listener(self, callback: Callable[[], None]) -> None:
        self._store.add_session_lost_listener(callback)

    @property
    def closed(self) -> bool:
        return self._store.closed

    @property
    def session(self) -> ZooKeeperMetadataStore:
        """The ZooKeeper session (for tools and fault tests)."""
        return self._store

    def close(self) -> None:
        """Ends the session: the registration and every owner node go with it. Idempotent."""
        self._store.close()

    # ------------------------------------------------------------------ the cluster

    def broker_addresses(self) -> list[str]:
        """``host:port`` of every registered broker's plaintext endpoint."""
        return [
            f"{registration.host}:{registration.port}"
            for registration in self._cluster.registered_brokers()
            if registration.host
        ]

    def topics(self) -> list[str]:
        """Every topic in ``/brokers/topics``, sorted."""
        return self._cluster.topics()

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition ids from ``/brokers/topics/<topic>`` (none: no such topic)."""
        try:
            return sorted(self._cluster.assignment(topic))
        except UnknownTopicOrPartitionError:
            return []

    # ------------------------------------------------------------------ membership

    def register(self, registration: Registration, now_ms: int) -> None:
        """Creates this member's ephemeral id node and watches the group's members.

        Raises:
            NodeExistsError: the id is registered by another live session.
        """
        path = join_path(self.ids_path, self.member)
        self._store.create(path, registration.encode(now_ms), ephemeral=True, make_parents=True)
        self._store.watch_children(self.ids_path, self._changed)

    def watch_topics(self, topics: Iterable[str]) -> None:
        """Calls ``on_change`` after each change of these topics' assignments (new topics:
        once they exist)."""
        for topic in sorted(set(topics) - self._watched_topics):
            self._watched_topics.add(topic)
            self._store.watch_data(join_path(TOPICS_PATH, topic), self._changed)

    def watch_topic_list(self) -> None:
        """Calls ``on_change`` after each topic creation or deletion (for topic filters)."""
        if not self._watching_topic_list:
            self._watching_topic_list = True
            self._store.watch_children(TOPICS_PATH, self._changed)

    def members(self) -> dict[str, Registration]:
        """Every registered member's subscription, by consumer id (an unreadable registration
        is logged and left out)."""
        try:
            names = self._store.children(self.ids_path)
        except NoNodeError:
            return {}
        out: dict[str, Registration] = {}
        for name in names:
            try:
                data, _ = self._store.get(join_path(self.ids_path, name))
                out[name] = Registration.decode(data)
            except NoNodeError:
                continue  # gone since children() answered
            except ValueError as error:
                log.warning("group %s: member %s ignored: %s", self.group_id, name, error)
        return out

    # ------------------------------------------------------------------ ownership

    def claim(self, tp: TopicPartition, thread: str) -> bool:
        """Makes ``thread`` the owner of ``tp``; false when another thread owns it."""
        path = self.owner_path(tp)
        try:
            self._store.create(path, thread.encode(), ephemeral=True, make_parents=True)
        except NodeExistsError:
            owner = self.owner(tp)
            return owner == thread
        return True

    def release(self, tp: TopicPartition, thread: str) -> None:
        """Deletes ``tp``'s owner node if ``thread`` owns it."""
        path = self.owner_path(tp)
        try:
            data, version = self._store.get(path)
            if data.decode(errors="replace") == thread:
                self._store.delete(path, version)
        except NoNodeError:
            return

    def owner(self, tp: TopicPartition) -> str | None:
        """The thread owning ``tp`` (``None``: no owner)."""
        try:
            data, _ = self._store.get(self.owner_path(tp))
        except NoNodeError:
            return None
        return data.decode(errors="replace")

    def owners(self, topic: str) -> dict[int, str]:
        """partition → owning thread, for the owned partitions of ``topic``."""
        path = join_path(self._base, "owners", topic)
        try:
            names = self._store.children(path)
        except NoNodeError:
            return {}
        out: dict[int, str] = {}
        for name in names:
            owner = self.owner(TopicPartition(topic, int(name)))
            if owner is not None:
                out[int(name)] = owner
        return out

    # ------------------------------------------------------------------ offsets

    def committed(self, tp: TopicPartition) -> int | None:
        """The offset committed for ``tp`` (``None``: none, or not a decimal number)."""
        try:
            data, _ = self._store.get(self.offset_path(tp))
        except NoNodeError:
            return None
        text = data.decode(errors="replace").strip()
        try:
            offset = int(text)
        except ValueError:
            log.warning("group %s: %s holds %r, not an offset", self.group_id, tp, text)
            return None
        return offset if offset >= 0 else None

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Writes each partition's next offset (persistent nodes, created when missing)."""
        for tp, offset in sorted(offsets.items()):
            path = self.offset_path(tp)
            data = str(offset).encode()
            try:
                self._store.set(path, data)
            except NoNodeError:
                try:
                    self._store.create(path, data, make_parents=True)
                except NodeExistsError:
                    self._store.set(path, data)

    # ------------------------------------------------------------------ internals

    def _changed(self, _path: str) -> None:
        with contextlib.suppress(SessionClosedError):
            self._on_change()

"""Kafka's KRaft-mode settings in a ``server.properties``: accepted, with a warning that says
what odradek does instead.

Kafka 4 runs only in KRaft mode, so its distribution's ``server.properties`` names the process's
roles (``process.roles=broker,controller``), the controller quorum
(``controller.quorum.voters`` or ``controller.quorum.bootstrap.servers``) and the listeners the
controllers talk on (``controller.listener.names``). odradek has no KRaft controller: a broker
keeps its metadata in its embedded store (a single broker) or, given ``zookeeper.connect``, in
ZooKeeper. So such a file starts ``odradek serve`` unchanged: each KRaft setting is accepted
with one warning line saying so, and the listeners named by ``controller.listener.names`` are
not opened (nor advertised); the broker serves on the others. ``node.id`` is no KRaft-only
setting here: it is the broker's id (``broker.config``).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["controller_listener_names", "is_kraft_setting", "kraft_warning"]

_KRAFT_NAMES = frozenset({"process.roles", "controller.listener.names"})
_KRAFT_PREFIXES = ("controller.quorum.", "metadata.log.")


def is_kraft_setting(name: str) -> bool:
    """Whether ``name`` configures KRaft's roles, quorum, controller listeners or metadata log."""
    return name in _KRAFT_NAMES or name.startswith(_KRAFT_PREFIXES)


def controller_listener_names(given: Mapping[str, str]) -> frozenset[str]:
    """The listener names ``controller.listener.names`` lists (upper-cased, as listener names
    are), from the settings as given; empty when it is not given."""
    raw = given.get("controller.listener.names", "")
    return frozenset(part.strip().upper() for part in raw.split(",") if part.strip())


def kraft_warning(name: str, value: str, *, zookeeper_connect: str | None) -> str:
    """The one warning line for the KRaft setting ``name`` given as ``value``."""
    store = (
        "keeps the cluster's metadata in ZooKeeper (zookeeper.connect)"
        if zookeeper_connect
        else "runs its embedded metadata store (a single broker)"
    )
    line = (
        f"setting {name!r} is a KRaft setting: odradek has no KRaft controller and {store}; "
        "it has no effect"
    )
    if name == "controller.listener.names":
        names = ", ".join(sorted(controller_listener_names({name: value})))
        line += f"; the controller listeners ({names}) are not opened"
    return line

"""``ConnectionQuotas``: who may open one more connection (Kafka's ``ConnectionQuotas``),
``max.connections`` over the broker and ``max.connections.per.ip`` (with its overrides) per
client address; and ``IdleConnections``, which tells which connections have been idle past
``connections.max.idle.ms``.

Pure bookkeeping: the server calls ``admit`` when a connection is accepted and ``release``
when it is gone, and feeds ``IdleConnections`` activity signatures with the time. Neither does
I/O or reads a clock. Not thread-safe (the event loop's).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from odradek.broker.limits import BrokerLimits


@dataclass(frozen=True, slots=True)
class ConnectionQuotaStatistics:
    connections: int
    addresses: int
    refused_total: int
    refused_per_ip: int


class ConnectionQuotas:
    """Connection counts against the limits.

    Args:
        limits: the broker's limits.
        overrides: client address → its own limit (``max.connections.per.ip.overrides`` with
            host names already resolved to addresses).
    """

    def __init__(self, limits: BrokerLimits, overrides: Mapping[str, int] | None = None) -> None:
        self.max_connections = limits.max_connections
        self.max_per_ip = limits.max_connections_per_ip
        self.overrides = dict(overrides or {})
        self._by_address: dict[str, int] = {}
        self._total = 0
        self._refused_total = 0
        self._refused_per_ip = 0

    def limit_of(self, address: str) -> int:
        return self.overrides.get(address, self.max_per_ip)

    def admit(self, address: str) -> str | None:
        """Counts a new connection from ``address`` and returns ``None``, or returns why it is
        refused (and counts nothing): the refusal names the limit."""
        if self._total >= self.max_connections:
            self._refused_total += 1
            return f"the broker has max.connections={self.max_connections} connections"
        held = self._by_address.get(address, 0)
        limit = self.limit_of(address)
        if held >= limit:
            self._refused_per_ip += 1
            setting = (
                "max.connections.per.ip.overrides"
                if address in self.overrides
                else "max.connections.per.ip"
            )
            return f"{address} has {setting}={limit} connections"
        self._by_address[address] = held + 1
        self._total += 1
        return None

    def release(self, address: str) -> None:
        """Forgets one admitted connection from ``address``."""
        held = self._by_address.get(address, 0)
        if held <= 0:
            return
        if held == 1:
            del self._by_address[address]
        else:
            self._by_address[address] = held - 1
        self._total -= 1

    def count(self, address: str | None = None) -> int:
        """Connections held, in all or from ``address``."""
        return self._total if address is None else self._by_address.get(address, 0)

    def statistics(self) -> ConnectionQuotaStatistics:
        return ConnectionQuotaStatistics(
            connections=self._total,
            addresses=len(self._by_address),
            refused_total=self._refused_total,
            refused_per_ip=self._refused_per_ip,
        )


class IdleConnections:
    """Finds connections idle for ``connections.max.idle.ms``.

    Each sweep passes every connection with an activity signature (anything that changes when
    bytes are read or written: counters, buffered bytes) and whether it is busy (a request in
    flight, a write pending: never idle). A connection is idle once its signature has not
    changed, and it was not busy, for ``idle_ms``.
    """

    def __init__(self, idle_ms: int) -> None:
        self.idle_ms = idle_ms
        self._seen: dict[Hashable, tuple[Hashable, int]] = {}  # key → (signature, since ms)

    def sweep(
        self, connections: Iterable[tuple[Hashable, Hashable, bool]], now_ms: int
    ) -> list[Hashable]:
        """Returns the keys of the connections idle now; forgets connections not passed."""
        idle: list[Hashable] = []
        seen: dict[Hashable, tuple[Hashable, int]] = {}
        for key, signature, busy in connections:
            previous = self._seen.get(key)
            if busy or previous is None or previous[0] != signature:
                seen[key] = (signature, now_ms)
                continue
            seen[key] = previous
            if now_ms - previous[1] >= self.idle_ms:
                idle.append(key)
        self._seen = seen
        return idle

    @property
    def sweep_interval_ms(self) -> int:
        """How often to sweep: a quarter of the idle time, between 10 ms and 1 s."""
        return max(10, min(1000, self.idle_ms // 4))

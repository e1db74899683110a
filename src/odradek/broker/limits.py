"""``BrokerLimits``: how much one client, one connection or one request may ask of the broker,
by Kafka's setting names, and the pure checks that apply them before any work starts.

Settings (Kafka's defaults unless noted):

- ``max.connections`` (2147483647): connections the broker holds at once. Kafka's acceptor
  waits for a free slot; odradek closes the new connection at once (the client retries with
  its reconnect backoff), so a flood cannot pile up half-accepted sockets.
- ``max.connections.per.ip`` (2147483647) and ``max.connections.per.ip.overrides`` (``""``,
  ``host:count,host:count``; a host is an IP address or a name resolved when the listener
  starts): connections from one address; the one over the limit is closed at once, as Kafka
  does.
- ``connections.max.idle.ms`` (600000): a connection with nothing read, written or in flight
  for this long is closed. -1 never closes one.
- ``queued.max.requests`` (500): requests one connection may have waiting for their response;
  at the limit the broker stops reading from that connection until half are answered (Kafka
  bounds one queue shared by the whole broker; a per-connection bound keeps one pipelining
  client from stalling every other).
- ``queued.max.request.bytes`` (-1: no bound): bytes of requests waiting for their response,
  over the whole broker; past it the broker stops reading from the connections that add to
  it until the total falls below the bound again.
- ``max.partitions`` (2147483647) and ``max.broker.partitions`` (100000; KIP-578 proposed
  both, with no bound by default): partitions in the cluster, and replicas on this broker. A
  CreateTopics or CreatePartitions that would pass either answers POLICY_VIOLATION and creates
  nothing.
- ``max.partitions.per.request`` (10000; odradek's name for the bound Kafka's KRaft
  controller fixes at 10,000): partitions one CreateTopics or CreatePartitions request may
  create, all topics together; over it every topic of the request answers POLICY_VIOLATION,
  as Kafka does.
- ``controller.mutation.rate`` (odradek's; Kafka sets it per user / client id as the
  ``controller_mutation_rate`` quota of KIP-599, with no bound by default): partitions created
  or deleted per second by one client id, averaged over ``controller.quota.window.num`` (11)
  windows of ``controller.quota.window.size.seconds`` (1). A request that finds its client
  over the rate answers THROTTLING_QUOTA_EXCEEDED with the time to wait (CreateTopics v6+,
  CreatePartitions v3+, DeleteTopics v5+; older versions are not throttled, as in Kafka).

Everything here is pure: values in, decisions out.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from odradek.errors import ConfigError, ErrorCode, KafkaError

MAX_INT = (1 << 31) - 1
_MAX_BUCKETS = 10_000


@dataclass(frozen=True, slots=True)
class BrokerLimits:
    """Fields are the settings of the same name (dots → underscores); see the module
    docstring."""

    max_connections: int = MAX_INT
    max_connections_per_ip: int = MAX_INT
    #: host → limit (``max.connections.per.ip.overrides``), in the order given.
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = ()
    connections_max_idle_ms: int = 600_000
    queued_max_requests: int = 500
    queued_max_request_bytes: int = -1
    max_partitions: int = MAX_INT
    max_broker_partitions: int = 100_000
    max_partitions_per_request: int = 10_000
    #: partitions per second per client id; ``None``: no quota.
    controller_mutation_rate: float | None = None
    controller_quota_window_num: int = 11
    controller_quota_window_size_seconds: int = 1

    def __post_init__(self) -> None:
        checks = (
            ("max.connections", self.max_connections, 0),
            ("max.connections.per.ip", self.max_connections_per_ip, 0),
            ("queued.max.requests", self.queued_max_requests, 1),
            ("max.partitions", self.max_partitions, 1),
            ("max.broker.partitions", self.max_broker_partitions, 1),
            ("max.partitions.per.request", self.max_partitions_per_request, 1),
            ("controller.quota.window.num", self.controller_quota_window_num, 1),
            ("controller.quota.window.size.seconds", self.controller_quota_window_size_seconds, 1),
        )
        for name, value, minimum in checks:
            if value < minimum:
                raise ConfigError(f"invalid value for {name}: {value} (at least {minimum})")
        if self.max_connections_per_ip == 0 and not self.max_connections_per_ip_overrides:
            # Kafka's KafkaConfig check: a zero limit shuts out every address not overridden.
            raise ConfigError(
                "max.connections.per.ip can be 0 only if max.connections.per.ip.overrides is set"
            )
        if self.connections_max_idle_ms == 0 or self.connections_max_idle_ms < -1:
            raise ConfigError(
                f"invalid value for connections.max.idle.ms: {self.connections_max_idle_ms} "
                "(a positive number of milliseconds, or -1 for never)"
            )
        if self.queued_max_request_bytes == 0 or self.queued_max_request_bytes < -1:
            raise ConfigError(
                "invalid value for queued.max.request.bytes: "
                f"{self.queued_max_request_bytes} (positive, or -1 for no bound)"
            )
        if self.controller_mutation_rate is not None and self.controller_mutation_rate <= 0:
            raise ConfigError(
                f"invalid value for controller.mutation.rate: {self.controller_mutation_rate} "
                "(positive)"
            )


def parse_overrides(raw: str) -> tuple[tuple[str, int], ...]:
    """Parses ``max.connections.per.ip.overrides``: ``host:count`` entries separated by commas
    (an IPv6 address in brackets, or bare: the count follows its last colon).

    Raises:
        ConfigError: an entry without a count, a negative count, or a host given twice.
    """
    entries: list[tuple[str, int]] = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        host, separator, count = entry.rpartition(":")
        host = host.strip().strip("[]")
        if not separator or not host:
            raise ConfigError(
                f"invalid value {raw!r} for max.connections.per.ip.overrides: expected "
                f"host:count entries, got {entry!r}"
            )
        try:
            limit = int(count.strip(), 10)
        except ValueError:
            raise ConfigError(
                f"invalid value {raw!r} for max.connections.per.ip.overrides: {count!r} in "
                f"{entry!r} is not an integer"
            ) from None
        if limit < 0 or limit > MAX_INT:
            raise ConfigError(
                f"invalid value {raw!r} for max.connections.per.ip.overrides: {limit} is out "
                f"of range 0..{MAX_INT}"
            )
        if any(existing == host for existing, _ in entries):
            raise ConfigError(
                f"invalid value {raw!r} for max.connections.per.ip.overrides: {host} appears twice"
            )
        entries.append((host, limit))
    return tuple(entries)


def render_overrides(overrides: tuple[tuple[str, int], ...]) -> str:
    return ",".join(
        f"[{host}]:{limit}" if ":" in host else f"{host}:{limit}" for host, limit in overrides
    )


def is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


# --- partition counts ---------------------------------------------------------------------


def check_request_partitions(requested: int, limits: BrokerLimits) -> None:
    """Refuses a request that would create more than ``max.partitions.per.request``
    partitions, all its topics together.

    Raises:
        KafkaError: POLICY_VIOLATION.
    """
    if requested > limits.max_partitions_per_request:
        raise KafkaError(
            f"excessively large number of partitions per request: {requested} requested, "
            f"max.partitions.per.request is {limits.max_partitions_per_request}",
            code=ErrorCode.POLICY_VIOLATION,
        )


def check_partition_totals(
    *,
    adding: int,
    adding_here: int,
    cluster_partitions: int,
    broker_replicas: int,
    limits: BrokerLimits,
) -> None:
    """Refuses ``adding`` partitions (``adding_here`` of them with a replica on this broker)
    that would pass ``max.partitions`` or ``max.broker.partitions``, given the partitions of
    the cluster and the replicas of this broker (existing and being created).

    Raises:
        KafkaError: POLICY_VIOLATION.
    """
    if cluster_partitions + adding > limits.max_partitions:
        raise KafkaError(
            f"cannot add {adding} partitions: the cluster has {cluster_partitions} and "
            f"max.partitions is {limits.max_partitions}",
            code=ErrorCode.POLICY_VIOLATION,
        )
    if broker_replicas + adding_here > limits.max_broker_partitions:
        raise KafkaError(
            f"cannot add {adding_here} partitions: this broker holds {broker_replicas} and "
            f"max.broker.partitions is {limits.max_broker_partitions}",
            code=ErrorCode.POLICY_VIOLATION,
        )


# --- controller mutation quota (KIP-599) ----------------------------------------------------


class MutationQuota:
    """The ``controller.mutation.rate`` token buckets, one per client id (Kafka's
    ``ControllerMutationQuotaManager``, which uses a token bucket for this quota).

    A bucket holds up to ``rate × window.num × window.size`` credits and refills at ``rate``
    per second. A request is admitted while its client's bucket is not in debt, and what it
    creates or deletes is charged whole, even into debt (a topic is never half-admitted);
    the next request waits until the debt is paid back.

    Not thread-safe; time comes in as ``now_ms``.
    """

    def __init__(self, limits: BrokerLimits) -> None:
        self._rate = limits.controller_mutation_rate
        window_seconds = (
            limits.controller_quota_window_num * limits.controller_quota_window_size_seconds
        )
        self._burst = (self._rate or 0.0) * window_seconds
        self._buckets: dict[str, tuple[float, int]] = {}  # client id → (credits, at ms)

    @property
    def enabled(self) -> bool:
        return self._rate is not None

    def throttle_time_ms(self, client_id: str, now_ms: int) -> int:
        """0 when ``client_id`` may mutate now, else how long it must wait."""
        if self._rate is None:
            return 0
        credits = self._credits(client_id, now_ms)
        if credits >= 0:
            return 0
        return max(1, int(-credits / self._rate * 1000 + 0.999))

    def record(self, client_id: str, partitions: int, now_ms: int) -> None:
        """Charges ``partitions`` mutations to ``client_id``."""
        if self._rate is None or partitions <= 0:
            return
        if len(self._buckets) >= _MAX_BUCKETS:  # forget the clients whose bucket is full
            self._buckets = {
                client: (credits, at_ms)
                for client, (credits, at_ms) in self._buckets.items()
                if self._credits(client, now_ms) < self._burst
            }
        self._buckets[client_id] = (self._credits(client_id, now_ms) - partitions, now_ms)

    def _credits(self, client_id: str, now_ms: int) -> float:
        assert self._rate is not None
        credits, at_ms = self._buckets.get(client_id, (self._burst, now_ms))
        refilled = credits + self._rate * max(0, now_ms - at_ms) / 1000
        return min(self._burst, refilled)

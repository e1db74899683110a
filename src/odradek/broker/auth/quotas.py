"""Client quotas (KIP-13, KIP-55, KIP-219): byte rates per user and client id, and how long a
client over its quota is throttled. Pure: values and ``now_ms`` in, milliseconds out.

Quotas are Kafka's: ``producer_byte_rate`` and ``consumer_byte_rate`` (bytes/s) and
``request_percentage`` (the share of one thread's time the client's requests may take, in
percent: 100 is 1,000 ms of handling per second; measured as the time the broker spends in
the handlers, long polls excluded; its throttle is at most the window size, as in Kafka),
set per entity — a user, a
client id, a user's client id, or the ``<default>`` of either. A request takes the quota of
the most specific entity that sets one, in Kafka's order:

    1. /config/users/<user>/clients/<client-id>    5. /config/users/<default>/clients/<default>
    2. /config/users/<user>/clients/<default>      6. /config/users/<default>
    3. /config/users/<user>                        7. /config/clients/<client-id>
    4. /config/users/<default>/clients/<client-id> 8. /config/clients/<default>

and shares its use with every request that took the same entity — a user quota is shared by
all of the user's client ids, a ``<default>`` one is held by each user (or client id)
separately, as in Kafka. The user is the principal's name (``User:alice`` → ``alice``).

Throttling (deviation from Kafka, on purpose): Kafka measures a rate over
``quota.window.num`` windows of ``quota.window.size.seconds`` and throttles by how far that
rate is over the quota, which lets a client run a whole window's worth ahead after a quiet
spell. Here each quota entity is a token bucket: it holds at most ``quota × window size``
bytes of credit and every request's bytes are taken from it; a request that leaves it in debt
is throttled for as long as the debt takes to repay at the quota. So over any period a client
gets at most ``quota × (period + window size)`` bytes, and long-run it gets the quota exactly.
As KIP-219 asks, the response goes out at once with ``throttle_time_ms`` and the broker then
mutes the connection for that long (``mute_ms``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CONSUMER_BYTE_RATE",
    "DEFAULT",
    "PRODUCER_BYTE_RATE",
    "QUOTA_KEYS",
    "REQUEST_PERCENTAGE",
    "ClientQuotas",
    "QuotaEntity",
]

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
#: The quota keys odradek accepts (Kafka's client quota keys).
QUOTA_KEYS = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE})
#: How Kafka names the default entity in paths and tools.
DEFAULT = "<default>"


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A user and/or client id quota entity; ``DEFAULT`` for a default, None: not part."""

    user: str | None = None
    client_id: str | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a quota entity names a user, a client id, or both")

    def __str__(self) -> str:
        parts = []
        if self.user is not None:
            parts.append(f"user={self.user}")
        if self.client_id is not None:
            parts.append(f"client-id={self.client_id}")
        return ", ".join(parts)


def _levels(user: str, client_id: str) -> tuple[QuotaEntity, ...]:
    return (
        QuotaEntity(user, client_id),
        QuotaEntity(user, DEFAULT),
        QuotaEntity(user, None),
        QuotaEntity(DEFAULT, client_id),
        QuotaEntity(DEFAULT, DEFAULT),
        QuotaEntity(DEFAULT, None),
        QuotaEntity(None, client_id),
        QuotaEntity(None, DEFAULT),
    )


def _holder(entity: QuotaEntity, user: str, client_id: str) -> tuple[str | None, str | None]:
    """Who shares the use of a matched quota: a default stands for the actual name."""
    return (
        None if entity.user is None else user,
        None if entity.client_id is None else client_id,
    )


class _Bucket:
    """One holder's credit in bytes (negative: debt), refilled at the quota."""

    __slots__ = ("credit", "updated_ms")

    def __init__(self, credit: float, now_ms: int) -> None:
        self.credit = credit
        self.updated_ms = now_ms

    def take(
        self, amount: float, quota: float, burst: float, now_ms: int, floor: float | None
    ) -> int:
        """Takes ``amount`` (the debt not below ``floor``); returns the throttle in ms (0 when
        still in credit)."""
        elapsed = max(0, now_ms - self.updated_ms)
        self.credit = min(burst, self.credit + quota * elapsed / 1000.0) - amount
        if floor is not None and self.credit < floor:
            self.credit = floor
        self.updated_ms = now_ms
        return 0 if self.credit >= 0 else int(-self.credit * 1000.0 / quota) + 1

    def debt_ms(self, quota: float, burst: float, now_ms: int) -> int:
        elapsed = max(0, now_ms - self.updated_ms)
        credit = min(burst, self.credit + quota * elapsed / 1000.0)
        return 0 if credit >= 0 else int(-credit * 1000.0 / quota) + 1


class ClientQuotas:
    """The configured quotas and each holder's use (see the module docstring).

    Thread safety: ``set_quotas`` may run on the metadata store's thread (it swaps whole
    maps); ``record`` and ``mute_ms`` run on the event loop.
    """

    def __init__(self, *, window_size_ms: int = 1000) -> None:
        self.window_size_ms = window_size_ms
        self._configs: dict[QuotaEntity, dict[str, float]] = {}
        self._by_key: dict[str, dict[QuotaEntity, float]] = {}
        self._buckets: dict[tuple[str, str | None, str | None], _Bucket] = {}
        self.throttled = 0
        #: Whether any quota is set (handlers and the server skip all when not).
        self.active = False
        #: Whether a request_percentage quota is set (the server times handlers only then).
        self.request_time_active = False

    # ----------------------------------------------------------------- configuration

    def set_quotas(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replaces the entity's quotas (empty: removes them)."""
        configs = dict(self._configs)
        if values:
            configs[entity] = dict(values)
        else:
            configs.pop(entity, None)
        self.replace_all(configs)

    def replace_all(self, configs: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        by_key: dict[str, dict[QuotaEntity, float]] = {}
        for entity, values in configs.items():
            for key, value in values.items():
                if key in QUOTA_KEYS and value > 0:
                    # Every quota as a rate per second: bytes, or ms of handling.
                    rate = value * 10.0 if key == REQUEST_PERCENTAGE else float(value)
                    by_key.setdefault(key, {})[entity] = rate
        self._configs = {entity: dict(values) for entity, values in configs.items() if values}
        self._by_key = by_key
        self.active = bool(by_key)
        self.request_time_active = REQUEST_PERCENTAGE in by_key

    def configs(self) -> dict[QuotaEntity, dict[str, float]]:
        """Every entity's quotas."""
        return {entity: dict(values) for entity, values in self._configs.items()}

    def quota(self, key: str, user: str, client_id: str) -> tuple[QuotaEntity, float] | None:
        """The entity whose ``key`` quota applies to (user, client id), and its value."""
        quotas = self._by_key.get(key)
        if not quotas:
            return None
        for entity in _levels(user, client_id):
            value = quotas.get(entity)
            if value is not None:
                return entity, value
        return None

    # ----------------------------------------------------------------- use

    def record(self, key: str, user: str, client_id: str, amount: float, now_ms: int) -> int:
        """Counts ``amount`` (bytes; ms of handling for ``request_percentage``) against the
        applicable ``key`` quota; returns the throttle time in ms (0: within the quota, or
        no quota applies)."""
        found = self.quota(key, user, client_id)
        if found is None:
            return 0
        entity, quota = found
        holder = (key, *_holder(entity, user, client_id))
        burst = quota * self.window_size_ms / 1000.0
        bucket = self._buckets.get(holder)
        if bucket is None:
            bucket = self._buckets[holder] = _Bucket(burst, now_ms)
        # Kafka bounds a request-time throttle by the window size (ClientRequestQuotaManager).
        floor = -burst if key == REQUEST_PERCENTAGE else None
        throttle_ms = bucket.take(amount, quota, burst, now_ms, floor)
        if throttle_ms:
            self.throttled += 1
        return throttle_ms

    def mute_ms(self, user: str, client_id: str, now_ms: int) -> int:
        """How long a connection of (user, client id) stays muted: the longest debt of the
        quotas that apply to it."""
        longest = 0
        for key in self._by_key:
            found = self.quota(key, user, client_id)
            if found is None:
                continue
            entity, quota = found
            bucket = self._buckets.get((key, *_holder(entity, user, client_id)))
            if bucket is not None:
                burst = quota * self.window_size_ms / 1000.0
                longest = max(longest, bucket.debt_ms(quota, burst, now_ms))
        return longest

    def statistics(self) -> dict[str, int]:
        return {
            "entities": len(self._configs),
            "holders": len(self._buckets),
            "throttled": self.throttled,
        }

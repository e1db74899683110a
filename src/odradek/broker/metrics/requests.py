"""Per-API request timing: Kafka's RequestMetrics (RequestsPerSec, RequestQueueTimeMs,
TotalTimeMs) as histograms, recorded on the event loop at a few hundred nanoseconds each.

``broker.server`` calls ``record`` once per request it answers, with the request's queue time
(from the read that brought it to the start of its handling: the turns it waited behind other
connections included) and its total time (to the response handed to the transport). A request
that gets no response (acks=0) is recorded when its handler returns.

The counts are plain lists bumped with ``bisect`` against fixed bounds: no lock, no
``prometheus_client`` object on the hot path. Not thread-safe: the loop writes, and readers
take ``snapshot()`` on the loop (the endpoint does; see ``http``).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

#: Histogram upper bounds, in seconds (Prometheus ``le``; +Inf is implicit).
BUCKETS_S: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


@dataclass(frozen=True, slots=True)
class Histogram:
    """Cumulative-free bucket counts (one per bound, then +Inf), their sum and count."""

    buckets: tuple[int, ...]
    sum_s: float
    count: int

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, cumulative count)`` pairs as Prometheus expects, ending with +Inf."""
        pairs: list[tuple[str, int]] = []
        running = 0
        for bound, count in zip((*map(repr, BUCKETS_S), "+Inf"), self.buckets, strict=True):
            running += count
            pairs.append((bound, running))
        return pairs


@dataclass(frozen=True, slots=True)
class ApiTimes:
    """One API's queue and total time histograms (same count: one per request)."""

    api_key: int
    queue: Histogram
    total: Histogram


class _Counts:
    __slots__ = ("queue", "queue_sum", "total", "total_sum")

    def __init__(self) -> None:
        size = len(BUCKETS_S) + 1
        self.queue = [0] * size
        self.total = [0] * size
        self.queue_sum = 0.0
        self.total_sum = 0.0


#: One slot per API key below this (Kafka's keys are under 100); others are not timed.
MAX_API_KEYS = 128


class RequestMetrics:
    """The request histograms of every API key seen (see the module docstring)."""

    __slots__ = ("_apis",)

    def __init__(self) -> None:
        # Indexed by API key: a list index is cheaper than hashing an ApiKey enum member.
        self._apis: list[_Counts | None] = [None] * MAX_API_KEYS

    def record(self, api_key: int, queue_s: float, total_s: float) -> None:
        """Counts one request of ``api_key`` (times in seconds)."""
        try:
            counts = self._apis[api_key]
            if counts is None:
                counts = self._apis[api_key] = _Counts()
        except IndexError:
            return
        counts.queue[bisect_left(BUCKETS_S, queue_s)] += 1
        counts.total[bisect_left(BUCKETS_S, total_s)] += 1
        counts.queue_sum += queue_s
        counts.total_sum += total_s

    def snapshot(self) -> tuple[ApiTimes, ...]:
        """A copy of every API's histograms, by API key."""
        return tuple(
            ApiTimes(
                key,
                Histogram(tuple(c.queue), c.queue_sum, sum(c.queue)),
                Histogram(tuple(c.total), c.total_sum, sum(c.total)),
            )
            for key, c in enumerate(self._apis)
            if c is not None
        )

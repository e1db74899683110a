"""Page-view events for the demo: what one looks like (``PageViewFactory``, pure) and a thread
that produces them at a steady rate (``EventGenerator``).

An event is one JSON object, the record's value (UTF-8), keyed by its user (so one user's
events stay in order in one partition)::

    {"timestamp": "2026-05-04T12:00:01.250Z", "user": "user-0042", "page": "/pricing",
     "referrer": "google.com"}

``referrer`` is ``null`` for direct visits. Pages and referrers are drawn with fixed, skewed
weights (a home page most visited, a long tail); users are drawn with a Zipf-like weight. The
event time lags the moment of sending by up to ``max_lateness_ms`` (out-of-order events, as
from a fleet of web servers), and is also the record's create timestamp.

The end-of-stream marker (``end_of_stream_marker``) is a record with a timestamp and no page:
the pipeline counts pages, so it counts nothing, but it moves the event-time watermark past
every real event, so the windows still open are closed and written (see ``pipeline``).
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.client.producer import Producer, RecordMetadata

__all__ = [
    "PAGES",
    "REFERRERS",
    "EventGenerator",
    "GeneratorStatistics",
    "PageView",
    "PageViewFactory",
    "end_of_stream_marker",
    "format_timestamp",
]

logger = logging.getLogger(__name__)

#: Pages and their relative popularity.
PAGES: Final = (
    ("/", 30),
    ("/pricing", 14),
    ("/docs", 12),
    ("/docs/quickstart", 9),
    ("/blog", 8),
    ("/blog/kafka-in-python", 7),
    ("/signup", 5),
    ("/login", 5),
    ("/changelog", 3),
    ("/about", 3),
    ("/careers", 2),
    ("/contact", 2),
)
#: Referrers and their relative weight (``None``: a direct visit).
REFERRERS: Final = (
    (None, 35),
    ("google.com", 30),
    ("github.com", 10),
    ("news.ycombinator.com", 8),
    ("twitter.com", 7),
    ("newsletter", 5),
    ("reddit.com", 5),
)
#: How often the generator thread wakes up to send what its rate owes.
TICK_MS: Final = 20


def format_timestamp(timestamp_ms: int) -> str:
    """``timestamp_ms`` as ISO 8601 in UTC with milliseconds: ``2026-05-04T12:00:01.250Z``."""
    moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{timestamp_ms % 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class PageView:
    """One page view."""

    timestamp_ms: int
    user: str
    page: str
    referrer: str | None

    def to_json(self) -> bytes:
        """The record value (see the module docstring)."""
        return json.dumps(
            {
                "timestamp": format_timestamp(self.timestamp_ms),
                "user": self.user,
                "page": self.page,
                "referrer": self.referrer,
            },
            separators=(",", ":"),
        ).encode()


def end_of_stream_marker(timestamp_ms: int) -> bytes:
    """The value of the end-of-stream marker: a timestamp and no page (module docstring)."""
    return json.dumps(
        {"timestamp": format_timestamp(timestamp_ms), "marker": "end-of-stream"},
        separators=(",", ":"),
    ).encode()


class PageViewFactory:
    """Draws page views; pure given its seed (no clock, no I/O).

    Args:
        seed: the random seed (the same seed and times give the same events).
        users: how many distinct users there are.
        max_lateness_ms: the most an event's time lags the time it is made at.
    """

    def __init__(self, seed: int = 0, *, users: int = 500, max_lateness_ms: int = 1_000) -> None:
        if users < 1:
            raise ValueError("users must be at least 1")
        if max_lateness_ms < 0:
            raise ValueError("max_lateness_ms must not be negative")
        self._random = random.Random(seed)
        self._users = [f"user-{n:04d}" for n in range(1, users + 1)]
        self._user_weights = list(itertools.accumulate(1 / n**0.8 for n in range(1, users + 1)))
        self._pages = [page for page, _ in PAGES]
        self._page_weights = list(itertools.accumulate(weight for _, weight in PAGES))
        self._referrers = [referrer for referrer, _ in REFERRERS]
        self._referrer_weights = list(itertools.accumulate(weight for _, weight in REFERRERS))
        self._max_lateness_ms = max_lateness_ms

    def event(self, now_ms: int) -> PageView:
        """One page view made at ``now_ms`` (its time is up to ``max_lateness_ms`` earlier)."""
        draw = self._random
        return PageView(
            timestamp_ms=now_ms - draw.randint(0, self._max_lateness_ms),
            user=draw.choices(self._users, cum_weights=self._user_weights)[0],
            page=draw.choices(self._pages, cum_weights=self._page_weights)[0],
            referrer=draw.choices(self._referrers, cum_weights=self._referrer_weights)[0],
        )


@dataclass(frozen=True, slots=True)
class GeneratorStatistics:
    """What the generator has done so far.

    ``sent``: records handed to the producer; ``delivered`` / ``failed``: acknowledged or
    failed so far (after ``stop``, ``delivered + failed == sent``); ``max_timestamp_ms``: the
    latest event time sent (-1 before the first).
    """

    sent: int
    delivered: int
    failed: int
    max_timestamp_ms: int
    first_error: str | None


class EventGenerator:
    """A thread producing page views to ``topic`` at ``rate`` events per second.

    It keeps to the rate by the clock (every ``TICK_MS`` it sends what the elapsed time owes,
    so a slow tick is caught up), keys each event by its user and sets the record timestamp to
    the event time. Delivery outcomes are counted from the producer's callbacks.

    Call order: ``start`` once, then ``stop`` (idempotent; it also flushes the producer, so
    every sent record is delivered or failed when it returns). ``statistics`` may be called from
    any thread at any time. The producer stays the caller's to close.
    """

    def __init__(
        self,
        producer: Producer,
        topic: str,
        rate: float,
        factory: PageViewFactory,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self._producer = producer
        self._topic = topic
        self._rate = rate
        self._factory = factory
        self._clock = clock
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._sent = 0
        self._delivered = 0
        self._failed = 0
        self._max_timestamp_ms = -1
        self._first_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="odradek-demo-generator")

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stops sending, waits for the thread, then flushes the producer."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._producer.flush(timeout)

    def statistics(self) -> GeneratorStatistics:
        with self._lock:
            return GeneratorStatistics(
                self._sent,
                self._delivered,
                self._failed,
                self._max_timestamp_ms,
                self._first_error,
            )

    def _on_delivery(self, _metadata: RecordMetadata, error: BaseException | None) -> None:
        with self._lock:
            if error is None:
                self._delivered += 1
                return
            self._failed += 1
            if self._first_error is None:
                self._first_error = f"{type(error).__name__}: {error}"
        logger.warning("a page view was not delivered to %s: %s", self._topic, error)

    def _run(self) -> None:
        started_ms = self._clock.monotonic_ms()
        sent = 0
        while not self._stopping.wait(TICK_MS / 1000):
            elapsed_ms = self._clock.monotonic_ms() - started_ms
            owed = int(elapsed_ms * self._rate / 1000) - sent
            for _ in range(owed):
                event = self._factory.event(self._clock.now_ms())
                self._producer.send(
                    self._topic,
                    event.to_json(),
                    event.user.encode(),
                    timestamp_ms=event.timestamp_ms,
                    callback=self._on_delivery,
                )
                with self._lock:
                    self._sent += 1
                    self._max_timestamp_ms = max(self._max_timestamp_ms, event.timestamp_ms)
            sent += max(owed, 0)

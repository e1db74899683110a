"""The ZooKeeper-coordinated consumer's pure rules: consumer and thread ids, the registration
document, and the range assignment every member computes on its own.

Legacy Kafka's high-level consumer (before group coordinators) had no leader: on every change
each member read the group's registrations and the topics' partitions from ZooKeeper and
computed the same assignment, then claimed its share. This module owns that computation:

- a **consumer id** is ``<group>_<consumer.id>``, or ``<group>_<host>-<ms>-<8 hex>`` without a
  ``consumer.id``; a member with ``n`` streams of a topic has the **thread ids**
  ``<consumer id>-0`` … ``<consumer id>-(n-1)`` for it, thread ``i`` feeding stream ``i``;
- the **range assignment** of one topic sorts its partitions (numerically) and every member's
  thread ids for the topic (as strings, as Kafka did), gives each thread ``partitions //
  threads`` contiguous partitions and the first ``partitions % threads`` threads one more;
- a **registration** (the ephemeral ``/consumers/<group>/ids/<consumer id>``) is Kafka's JSON:
  ``{"version":1,"subscription":{"<topic>":<count>},"pattern":"static","timestamp":"<ms>"}``;
  a topic filter registers ``{"<regex>":<count>}`` with the pattern ``white_list`` or
  ``black_list``, and counts ``count`` streams of every topic it selects (the whole name must
  match, as ``filters`` says; internal topics are left out unless asked for).

No I/O and no clock: the timestamp and the host name are arguments.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from odradek._types import TopicPartition
from odradek.client.streams.filters import Blacklist, TopicFilter, Whitelist

__all__ = [
    "BLACK_LIST_PATTERN",
    "STATIC_PATTERN",
    "WHITE_LIST_PATTERN",
    "Registration",
    "consumer_id",
    "group_assignment",
    "range_assignment",
    "thread_ids",
]

#: The ``pattern`` of a registration listing topics by name (Kafka's ``static``).
STATIC_PATTERN: Final = "static"
#: The ``pattern`` of a registration by topic filter (Kafka's names).
WHITE_LIST_PATTERN: Final = "white_list"
BLACK_LIST_PATTERN: Final = "black_list"
_FILTERS: Final[dict[str, type[TopicFilter]]] = {
    WHITE_LIST_PATTERN: Whitelist,
    BLACK_LIST_PATTERN: Blacklist,
}
#: Kafka's internal topics, which a filter selects only with ``exclude.internal.topics=false``.
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})
_REGISTRATION_VERSION: Final = 1


def consumer_id(group_id: str, configured: str | None, host: str, now_ms: int) -> str:
    """The member's id in ``/consumers/<group>/ids`` (see the module docstring)."""
    suffix = configured if configured else f"{host}-{now_ms}-{uuid.uuid4().hex[:8]}"
    return f"{group_id}_{suffix}"


def thread_ids(member: str, count: int) -> list[str]:
    """A member's ``count`` thread ids for one topic, in stream order."""
    return [f"{member}-{index}" for index in range(count)]


def range_assignment(partitions: Iterable[int], threads: Iterable[str]) -> dict[str, list[int]]:
    """Each thread's contiguous range of ``partitions``; every thread is a key (possibly with
    no partition). Duplicates are ignored; no threads: an empty result."""
    ordered_partitions = sorted(set(partitions))
    ordered_threads = sorted(set(threads))
    if not ordered_threads:
        return {}
    per_thread, extra = divmod(len(ordered_partitions), len(ordered_threads))
    out: dict[str, list[int]] = {}
    start = 0
    for index, thread in enumerate(ordered_threads):
        count = per_thread + (1 if index < extra else 0)
        out[thread] = ordered_partitions[start : start + count]
        start += count
    return out


def group_assignment(
    partitions: Mapping[str, Sequence[int]], subscriptions: Mapping[str, Mapping[str, int]]
) -> dict[TopicPartition, str]:
    """The owner thread of every partition of ``partitions`` (topic → partition ids), given
    every member's subscription (consumer id → topic → stream count). A topic no member
    subscribes to, or a partition left over, has no entry."""
    owners: dict[TopicPartition, str] = {}
    for topic in sorted(partitions):
        threads = [
            thread
            for member, subscription in subscriptions.items()
            for thread in thread_ids(member, subscription.get(topic, 0))
        ]
        for thread, assigned in range_assignment(partitions[topic], threads).items():
            for partition in assigned:
                owners[TopicPartition(topic, partition)] = thread
    return owners


@dataclass(frozen=True, slots=True)
class Registration:
    """One member's registration: its subscription (topic → stream count) and pattern."""

    subscription: Mapping[str, int]
    pattern: str = STATIC_PATTERN

    @classmethod
    def for_filter(cls, topic_filter: TopicFilter, count: int) -> Registration:
        """A filter's registration: ``count`` streams of every topic it selects."""
        pattern = BLACK_LIST_PATTERN if isinstance(topic_filter, Blacklist) else WHITE_LIST_PATTERN
        return cls({topic_filter.regex: count}, pattern)

    @property
    def is_wildcard(self) -> bool:
        return self.pattern != STATIC_PATTERN

    def topic_counts(
        self, topics: Iterable[str], *, exclude_internal: bool = True
    ) -> dict[str, int]:
        """Streams per topic: a static registration's own; a filter's, for each of ``topics``
        (the cluster's) it selects."""
        if not self.is_wildcard:
            return dict(self.subscription)
        [(regex, count)] = self.subscription.items()
        selected = _FILTERS[self.pattern](regex)
        return {
            topic: count
            for topic in topics
            if selected.is_topic_allowed(topic)
            and not (exclude_internal and topic in INTERNAL_TOPICS)
        }

    def encode(self, now_ms: int) -> bytes:
        """Kafka's JSON, compact UTF-8, stamped ``now_ms``."""
        document = {
            "version": _REGISTRATION_VERSION,
            "subscription": dict(sorted(self.subscription.items())),
            "pattern": self.pattern,
            "timestamp": str(now_ms),
        }
        return json.dumps(document, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> Registration:
        """Reads a registration another member wrote.

        Raises:
            ValueError: not JSON, or no ``subscription`` object of positive integer counts.
        """
        try:
            document = json.loads(data.decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"a consumer registration is not JSON: {error}") from None
        if not isinstance(document, dict):
            raise ValueError("a consumer registration is not a JSON object")
        subscription = document.get("subscription")
        if not isinstance(subscription, dict):
            raise ValueError("a consumer registration has no subscription object")
        counts: dict[str, int] = {}
        for topic, count in subscription.items():
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError(f"a consumer registration counts {count!r} streams of {topic!r}")
            counts[str(topic)] = count
        pattern = document.get("pattern", STATIC_PATTERN)
        if pattern != STATIC_PATTERN:
            if pattern not in _FILTERS:
                raise ValueError(f"a consumer registration has the unknown pattern {pattern!r}")
            if len(counts) != 1:
                raise ValueError(f"a consumer registration by {pattern} needs one expression")
            [regex] = counts
            try:
                _FILTERS[pattern](regex)
            except ValueError as error:
                raise ValueError(f"a consumer registration's expression: {error}") from None
        return cls(counts, pattern)

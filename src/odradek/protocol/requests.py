"""Typed, read-only views of the hot request bodies: Produce, Fetch, ListOffsets, Metadata.

The codec hands handlers kio's request object of whatever version arrived; its class differs
per version, so ``Request.body`` is untyped. This module owns the typed side of that
boundary: one ``Protocol`` per request (and per nested entity) listing exactly the fields the
broker reads, with the types it reads them as, and one accessor per API that returns the body
as its view. The rules it keeps:

- a view lists only fields that every decoded version of its API has (``IMPLEMENTED_VERSIONS``
  minus ``ADVERTISED_ONLY_VERSIONS``), so a handler reads them without ``getattr`` defaults;
  tests/protocol/test_requests.py checks each view against kio's class of every such version;
- the accessors hand back ``Request.body`` itself (no copy, no conversion, no check: the
  router dispatches by API key), as C-level attribute getters: the hot path pays ~30 ns;
- integers are ``int`` (kio's ``i16``/``i32``/``i64`` are subclasses), strings ``str``,
  durations ``datetime.timedelta`` (``duration_ms`` turns them into milliseconds).

Any field not listed here is still on the object; reading it goes through ``Request.body``
(the decode boundary, typed ``Any`` in the handlers that need it).
"""

from __future__ import annotations

import datetime
import operator
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from odradek.protocol.codec import Request

__all__ = [
    "FetchPartitionRequest",
    "FetchRequestBody",
    "FetchTopicRequest",
    "ListOffsetsPartitionRequest",
    "ListOffsetsRequestBody",
    "ListOffsetsTopicRequest",
    "MetadataRequestBody",
    "MetadataTopicRequest",
    "NamedProduceTopicData",
    "ProducePartitionData",
    "ProduceRequestBody",
    "ProduceTopicData",
    "ProduceTopicDataById",
    "duration_ms",
    "fetch_body",
    "fetch_replica_id",
    "list_offsets_body",
    "metadata_allows_auto_create",
    "metadata_body",
    "produce_body",
]

_ONE_MS = datetime.timedelta(milliseconds=1)


# ----------------------------------------------------------------- Produce (v3+)


class ProducePartitionData(Protocol):
    """One partition's records: exactly one v2 record batch for a well-behaved producer."""

    @property
    def index(self) -> int: ...
    @property
    def records(self) -> bytes | None: ...


class ProduceTopicData(Protocol):
    """v0-v12 name the topic (``NamedProduceTopicData``), v13 gives its id instead
    (``ProduceTopicDataById``, KIP-516): what every version has."""

    @property
    def partition_data(self) -> Sequence[ProducePartitionData]: ...


class NamedProduceTopicData(ProduceTopicData, Protocol):
    """A topic of a Produce v0-v12 request, named."""

    @property
    def name(self) -> str: ...


class ProduceTopicDataById(ProduceTopicData, Protocol):
    """A topic of a Produce v13+ request, named by its id (KIP-516; nullable in kio's
    schema)."""

    @property
    def topic_id(self) -> uuid.UUID | None: ...


class ProduceRequestBody(Protocol):
    @property
    def transactional_id(self) -> str | None: ...
    @property
    def acks(self) -> int: ...
    @property
    def timeout(self) -> datetime.timedelta: ...
    @property
    def topic_data(self) -> Sequence[ProduceTopicData]: ...


# ----------------------------------------------------------------- Fetch (v4+)


class FetchPartitionRequest(Protocol):
    @property
    def partition(self) -> int: ...
    @property
    def fetch_offset(self) -> int: ...
    @property
    def partition_max_bytes(self) -> int: ...


class FetchTopicRequest(Protocol):
    """v4-v12 name the ``topic``; v13+ give its ``topic_id`` (KIP-516): read through the body."""

    @property
    def partitions(self) -> Sequence[FetchPartitionRequest]: ...


class FetchRequestBody(Protocol):
    """The fetcher's replica id is ``replica_id`` before v15, inside ``replica_state`` from
    v15 (KIP-903): read it with ``fetch_replica_id``."""

    @property
    def max_wait(self) -> datetime.timedelta: ...
    @property
    def min_bytes(self) -> int: ...
    @property
    def max_bytes(self) -> int: ...
    @property
    def isolation_level(self) -> int: ...
    @property
    def topics(self) -> Sequence[FetchTopicRequest]: ...


# ----------------------------------------------------------------- ListOffsets (v1+)


class ListOffsetsPartitionRequest(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def timestamp(self) -> int: ...


class ListOffsetsTopicRequest(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[ListOffsetsPartitionRequest]: ...


class ListOffsetsRequestBody(Protocol):
    @property
    def replica_id(self) -> int: ...
    @property
    def topics(self) -> Sequence[ListOffsetsTopicRequest]: ...


# ----------------------------------------------------------------- Metadata (v0+)


class MetadataTopicRequest(Protocol):
    """``name`` is null (v10+) for a topic asked by id: read the id with
    ``metadata_topic_id``."""

    @property
    def name(self) -> str | None: ...


class MetadataRequestBody(Protocol):
    """``topics`` is null (v1+) for every topic; v0 says so with an empty array.
    ``allow_auto_topic_creation`` exists from v4: read it with ``metadata_allows_auto_create``.
    """

    @property
    def topics(self) -> Sequence[MetadataTopicRequest] | None: ...


# ----------------------------------------------------------------- accessors


# The accessors are C-level attribute getters typed as the views: no Python frame, no check
# on the hot path. The router only hands a handler requests of its own API key.

#: The body of a Produce request as its view.
produce_body: Callable[[Request], ProduceRequestBody] = operator.attrgetter("body")
#: The body of a Fetch request as its view.
fetch_body: Callable[[Request], FetchRequestBody] = operator.attrgetter("body")
#: The body of a ListOffsets request as its view.
list_offsets_body: Callable[[Request], ListOffsetsRequestBody] = operator.attrgetter("body")
#: The body of a Metadata request as its view.
metadata_body: Callable[[Request], MetadataRequestBody] = operator.attrgetter("body")


#: The first Fetch version with the replica id inside ``replica_state``.
_FETCH_REPLICA_STATE_VERSION = 15


def fetch_replica_id(request: Request) -> int:
    """The fetcher's replica id (-1: a consumer), wherever its version carries it."""
    body: Any = request.body
    if request.api_version >= _FETCH_REPLICA_STATE_VERSION:
        return int(body.replica_state.replica_id)
    return int(body.replica_id)


def metadata_allows_auto_create(request: Request) -> bool:
    """Metadata's ``allow_auto_topic_creation`` (v4+); older versions always allow it."""
    return bool(getattr(request.body, "allow_auto_topic_creation", True))


def metadata_topic_id(topic: MetadataTopicRequest) -> uuid.UUID | None:
    """A requested topic's id (v10+; ``None`` before, or the zero UUID when asked by name)."""
    value = getattr(topic, "topic_id", None)
    return value if isinstance(value, uuid.UUID) else None


def metadata_wants_topic_operations(request: Request) -> bool:
    """Metadata's ``include_topic_authorized_operations`` (v8+)."""
    return bool(getattr(request.body, "include_topic_authorized_operations", False))


def duration_ms(value: datetime.timedelta) -> int:
    """A request duration (``timeout``, ``max_wait``) in whole milliseconds."""
    return int(value / _ONE_MS)

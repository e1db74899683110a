"""The fetch session cache (KIP-227) with plain values: sessions created by full fetches,
incremental adds / updates / forgets, the epoch and id errors, and the cache's bounds."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from odradek._types import TopicPartition
from odradek.broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchContext,
    FetchSessionCache,
    SessionError,
    next_epoch,
)
from odradek.errors import ErrorCode


@dataclass(frozen=True)
class Part:
    partition: int
    fetch_offset: int
    partition_max_bytes: int = 1024
    current_leader_epoch: int = 3


def ctx(result: FetchContext | SessionError) -> FetchContext:
    assert isinstance(result, FetchContext), result
    return result


def read(context: FetchContext) -> dict[TopicPartition, int]:
    return {
        TopicPartition(topic, p.partition): p.fetch_offset
        for topic, parts in context.topics
        for p in parts
    }


def full(cache: FetchSessionCache, now_ms: int = 0, *, privileged: bool = False) -> FetchContext:
    return ctx(
        cache.new_context(
            0,
            INITIAL_EPOCH,
            [("a", [Part(0, 10), Part(1, 20)]), ("b", [Part(0, 5)])],
            [],
            privileged=privileged,
            now_ms=now_ms,
        )
    )


def test_sessionless_fetch_reads_the_request_and_creates_nothing() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    context = ctx(
        cache.new_context(0, FINAL_EPOCH, [("a", [Part(0, 7)])], [], privileged=False, now_ms=0)
    )
    assert context.session is None
    assert context.session_id == 0
    assert not context.incremental
    assert read(context) == {TopicPartition("a", 0): 7}
    assert len(cache) == 0


def test_full_fetch_creates_a_session_expecting_epoch_1() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    context = full(cache)
    assert context.session is not None
    assert context.session_id != 0
    assert not context.incremental
    assert context.session.epoch == 1
    assert cache.get(context.session_id) is context.session
    assert cache.cached_partitions == 3
    assert read(context) == {
        TopicPartition("a", 0): 10,
        TopicPartition("a", 1): 20,
        TopicPartition("b", 0): 5,
    }


def test_incremental_fetch_adds_updates_and_forgets() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = full(cache).session_id
    context = ctx(
        cache.new_context(
            session_id,
            1,
            [("a", [Part(1, 25)]), ("c", [Part(2, 0, current_leader_epoch=7)])],
            [("b", [0])],
            privileged=False,
            now_ms=5,
        )
    )
    assert context.incremental
    assert context.session_id == session_id
    # Every partition of the session is read, the unchanged one at its cached offset.
    assert read(context) == {
        TopicPartition("a", 0): 10,
        TopicPartition("a", 1): 25,
        TopicPartition("c", 2): 0,
    }
    assert context.session is not None
    cached = context.session.partitions[TopicPartition("c", 2)]
    assert cached.current_leader_epoch == 7
    assert context.session is not None
    assert context.session.epoch == 2
    assert cache.cached_partitions == 3


def test_incremental_fetch_with_nothing_named_reads_the_whole_session() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = full(cache).session_id
    context = ctx(cache.new_context(session_id, 1, [], [], privileged=False, now_ms=1))
    assert len(read(context)) == 3


def test_unknown_session_id_and_wrong_epoch_are_errors() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = full(cache).session_id
    assert cache.new_context(session_id + 1, 1, [], [], privileged=False, now_ms=0) == SessionError(
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    )
    for epoch in (2, 7):
        assert cache.new_context(session_id, epoch, [], [], privileged=False, now_ms=0) == (
            SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        )
    # The session survives a wrong epoch: the right one still works, once.
    ctx(cache.new_context(session_id, 1, [], [], privileged=False, now_ms=0))
    assert cache.new_context(session_id, 1, [], [], privileged=False, now_ms=0) == SessionError(
        ErrorCode.INVALID_FETCH_SESSION_EPOCH
    )


def test_full_or_final_fetch_naming_a_session_closes_it() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    first = full(cache).session_id
    again = ctx(
        cache.new_context(
            first, INITIAL_EPOCH, [("a", [Part(0, 1)])], [], privileged=False, now_ms=0
        )
    )
    assert cache.get(first) is None
    assert again.session_id not in (0, first)
    assert cache.cached_partitions == 1
    closed = ctx(
        cache.new_context(again.session_id, FINAL_EPOCH, [], [], privileged=False, now_ms=0)
    )
    assert closed.session is None
    assert len(cache) == 0
    assert cache.cached_partitions == 0


def test_news_is_what_changed_since_last_sent() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    context = full(cache)
    assert context.session is not None
    cached = context.session.partitions[TopicPartition("a", 0)]
    assert cached.has_news(0, 100, 0, 0)  # nothing sent yet
    assert not cached.has_news(0, 100, 0, 0)
    assert cached.has_news(0, 101, 0, 0)  # high watermark moved
    assert cached.has_news(0, 101, 3, 0)  # log start offset moved
    assert cached.has_news(0, 101, 3, 50)  # records
    assert cached.has_news(6, 101, 3, 0)  # an error
    assert not cached.has_news(0, 101, 3, 0)


def test_slots_are_bounded_and_idle_sessions_evicted() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000, rng=random.Random(1))
    first = full(cache, now_ms=0).session_id
    second = full(cache, now_ms=10).session_id
    assert full(cache, now_ms=500).session is None  # full, nobody idle long enough
    assert len(cache) == 2
    third = full(cache, now_ms=1000).session_id  # the first has been idle 1000 ms
    assert third
    assert cache.get(first) is None
    assert cache.get(second) is not None
    assert len(cache) == 2
    assert cache.evicted == 1


def test_a_used_session_is_not_the_one_evicted() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000, rng=random.Random(1))
    first = full(cache, now_ms=0).session_id
    second = full(cache, now_ms=10).session_id
    ctx(cache.new_context(first, 1, [], [], privileged=False, now_ms=20))
    assert full(cache, now_ms=1015).session is not None
    assert cache.get(first) is not None
    assert cache.get(second) is None


def test_a_follower_takes_a_consumer_slot_but_not_another_followers() -> None:
    cache = FetchSessionCache(max_slots=2, rng=random.Random(1))
    follower = full(cache, privileged=True).session_id
    consumer = full(cache).session_id
    assert full(cache).session is None  # a consumer evicts no one young
    other = full(cache, privileged=True)
    assert other.session is not None
    assert cache.get(consumer) is None
    assert cache.get(follower) is not None
    assert full(cache, privileged=True).session is None  # only followers left


def test_cached_partitions_are_bounded() -> None:
    cache = FetchSessionCache(max_cached_partitions=4, rng=random.Random(1))
    session_id = full(cache).session_id  # 3 partitions
    assert full(cache).session is None  # 3 more do not fit beside it
    grown = cache.new_context(
        session_id, 1, [("z", [Part(0, 0), Part(1, 0)])], [], privileged=False, now_ms=0
    )
    assert grown == SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    assert len(cache) == 0
    assert cache.cached_partitions == 0


def test_zero_slots_disables_sessions() -> None:
    cache = FetchSessionCache(max_slots=0, rng=random.Random(1))
    context = full(cache)
    assert context.session is None
    assert len(read(context)) == 3


@pytest.mark.parametrize(("epoch", "after"), [(1, 2), (2**31 - 1, 1)])
def test_epochs_wrap_to_1(epoch: int, after: int) -> None:
    assert next_epoch(epoch) == after

"""KIP-848 subscription patterns: RE2 (linear time, RE2/J syntax), whole-name matches, internal
topics excluded, and the matches cached per (pattern, topic set)."""

from __future__ import annotations

import time

import pytest

from odradek.broker.group.topic_regex import InvalidRegexError, TopicRegexMatcher, check_regex
from odradek.errors import ErrorCode

from .consumer_harness import ConsumerHarness, topic_id

#: Backtracks exponentially in a backtracking engine (Python's ``re`` takes longer than the age
#: of the universe on the name below); RE2 answers in time linear in the name.
CATASTROPHIC = "(a+)+$"
LONG_NAME = "a" * 10_000 + "!"


def test_matches_whole_names_and_never_internal_topics() -> None:
    matcher = TopicRegexMatcher()
    names = {"orders", "orders-eu", "xorders", "__orders"}
    assert matcher.matches("orders.*", names) == {"orders", "orders-eu"}
    assert matcher.matches("order", names) == set()  # a prefix is not a whole-name match
    assert matcher.matches(r"\p{L}+", names) == {"orders", "xorders"}  # RE2/J's classes


@pytest.mark.parametrize("pattern", ["(", "(a)\\1", "(?=a)b", "a(?!b)", "[z-a]"])
def test_patterns_re2_refuses(pattern: str) -> None:
    with pytest.raises(InvalidRegexError) as refused:
        check_regex(pattern)
    assert str(refused.value)  # a reason, as text
    assert TopicRegexMatcher().matches(pattern, {"a", "ab"}) == set()


def test_a_catastrophic_pattern_is_linear_in_the_name() -> None:
    matcher = TopicRegexMatcher()
    started = time.perf_counter()
    assert matcher.matches(CATASTROPHIC, {LONG_NAME, "aaa"}) == {"aaa"}
    short = time.perf_counter() - started
    # ten times the name: about ten times the work, far below a second either way
    started = time.perf_counter()
    assert matcher.matches(CATASTROPHIC, {"a" * 100_000 + "!"}) == set()
    assert time.perf_counter() - started < 1.0
    assert short < 1.0


def test_matches_are_cached_until_the_topic_set_changes() -> None:
    matcher = TopicRegexMatcher()
    topics = frozenset({"orders-eu", "orders-us", "payments"})
    assert matcher.matches("orders-.*", topics) == {"orders-eu", "orders-us"}
    assert matcher.names_matched == 3
    assert matcher.matches("orders-.*", set(topics)) == {"orders-eu", "orders-us"}
    assert matcher.names_matched == 3  # same pattern, same topics: nothing matched again
    assert matcher.matches("orders-.*", topics | {"orders-asia"}) == {
        "orders-eu",
        "orders-us",
        "orders-asia",
    }
    assert matcher.names_matched == 7


def test_the_cache_is_bounded() -> None:
    matcher = TopicRegexMatcher(max_cached=2)
    for index in range(5):
        matcher.matches(f"t{index}", {"t0", "t1"})
    before = matcher.names_matched
    matcher.matches("t0", {"t0", "t1"})  # evicted long ago: matched again
    assert matcher.names_matched == before + 2


def test_the_coordinator_answers_a_catastrophic_pattern_at_once() -> None:
    h = ConsumerHarness(**{LONG_NAME: 1, "aaaa": 2, "b": 1})
    started = time.perf_counter()
    result = h.heartbeat("m", 0, subscribed_topic_regex=CATASTROPHIC)
    assert time.perf_counter() - started < 2.0
    assert result.error_code is ErrorCode.NONE
    assert result.assignment == {topic_id("aaaa"): frozenset({0, 1})}
    # the next member's heartbeat, with the same topics, matches no name again
    matcher = h.coordinator._regex_matcher
    matched = matcher.names_matched
    h.heartbeat("m2", 0, subscribed_topic_regex=CATASTROPHIC)
    assert matcher.names_matched == matched


def test_a_backreference_is_an_invalid_regular_expression() -> None:
    h = ConsumerHarness(t=1)
    result = h.heartbeat("m", 0, subscribed_topic_regex="(t)\\1")
    assert result.error_code is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert result.error_message is not None
    assert "SubscribedTopicRegex" in result.error_message

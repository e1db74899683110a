"""KIP-848 subscription patterns (``SubscribedTopicRegex``): compiled by RE2, matched against
whole topic names, the matches cached per (pattern, topic set).

The one importer of ``re2`` (google-re2): RE2 matches in time linear in the input, so a
client's pattern cannot stall the coordinator's event loop by backtracking (Python's ``re``
takes exponential time on ``(a+)+$`` against a long name). KIP-848 specifies RE2/J syntax,
which RE2's is: no backreferences, no lookaround; ``\\p{...}`` classes are accepted. Topics
whose name starts with ``__`` (internal) never match.

``TopicRegexMatcher`` keeps the names each pattern matched in a bounded LRU keyed by the
pattern and the set of topic names it was matched against, so a target refresh with unchanged
topics matches nothing again; any topic created or deleted makes a new key.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import re2

__all__ = ["InvalidRegexError", "TopicRegexMatcher", "check_regex"]

#: Most compiled patterns and match results kept (least recently used go first).
_MAX_CACHED = 256


class InvalidRegexError(ValueError):
    """A pattern RE2 does not accept (Kafka answers INVALID_REGULAR_EXPRESSION)."""


#: A compiled RE2 pattern (``re2._Regexp``; google-re2 ships no type information).
_Compiled = Any


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would write each refused pattern to stderr
    return options


_OPTIONS = _options()


def _compile(pattern: str) -> _Compiled:
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "invalid regular expression"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidRegexError(str(reason)) from None


def check_regex(pattern: str) -> None:
    """Raises ``InvalidRegexError`` when RE2 does not accept ``pattern``."""
    _compile(pattern)


class TopicRegexMatcher:
    """The topics each subscription pattern matches, cached (see the module docstring).

    Not thread-safe: one per coordinator shard, used from its event loop only.
    """

    def __init__(self, max_cached: int = _MAX_CACHED) -> None:
        self._max_cached = max_cached
        self._compiled: OrderedDict[str, _Compiled | None] = OrderedDict()
        self._matches: OrderedDict[tuple[str, frozenset[str]], frozenset[str]] = OrderedDict()
        #: Names matched against a pattern (not answered from the cache), for tests and stats.
        self.names_matched = 0

    def matches(self, pattern: str, topics: Iterable[str]) -> frozenset[str]:
        """The names of ``topics`` that ``pattern`` matches whole (none for an invalid one)."""
        names = topics if isinstance(topics, frozenset) else frozenset(topics)
        key = (pattern, names)
        cached = self._matches.get(key)
        if cached is not None:
            self._matches.move_to_end(key)
            return cached
        compiled = self._compiled_pattern(pattern)
        if compiled is None:
            found: frozenset[str] = frozenset()
        else:
            self.names_matched += len(names)
            found = frozenset(
                name
                for name in names
                if not name.startswith("__") and compiled.fullmatch(name) is not None
            )
        self._matches[key] = found
        if len(self._matches) > self._max_cached:
            self._matches.popitem(last=False)
        return found

    def _compiled_pattern(self, pattern: str) -> _Compiled | None:
        if pattern in self._compiled:
            self._compiled.move_to_end(pattern)
            return self._compiled[pattern]
        try:
            compiled: _Compiled | None = _compile(pattern)
        except InvalidRegexError:
            compiled = None
        self._compiled[pattern] = compiled
        if len(self._compiled) > self._max_cached:
            self._compiled.popitem(last=False)
        return compiled

"""Topic filters for ``ConsumerConnector.create_message_streams_by_filter``: ``Whitelist`` and
``Blacklist``.

This module owns the translation of a filter into the regular expression the consumer's
pattern subscription searches topic names with. The rules it keeps, as the classic API had
them:

- the filter's expression must match the **whole** topic name (not a substring);
- a comma separates alternatives (``"a,b.*"`` is ``"a|b.*"``); surrounding whitespace and
  quotes are ignored, so a filter can come straight from a command line or a properties file;
- a whitelist selects the topics that match, a blacklist those that do not;
- internal topics (``__consumer_offsets``) are never selected unless the connector is told
  ``exclude.internal.topics=false`` (the consumer applies that rule, not the filter).

Filters are immutable values and so may be shared between threads.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

__all__ = ["Blacklist", "TopicFilter", "Whitelist"]


def _normalise(expression: str) -> str:
    """The expression with commas as alternation and no surrounding whitespace or quotes."""
    cleaned = expression.strip().strip("\"'").strip()
    return "|".join(part.strip() for part in cleaned.split(","))


class TopicFilter(ABC):
    """A selection of topics by a regular expression (see the module docstring).

    Args:
        expression: the regular expression (commas separate alternatives).

    Raises:
        ValueError: the expression is empty or not a valid regular expression.
    """

    __slots__ = ("_compiled", "_expression", "_regex")

    def __init__(self, expression: str) -> None:
        regex = _normalise(expression)
        if not regex:
            raise ValueError("a topic filter needs a non-empty expression")
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            raise ValueError(f"invalid topic filter {expression!r}: {exc}") from exc
        self._expression = expression
        self._regex = regex
        self._compiled = compiled

    @property
    def regex(self) -> str:
        """The normalised expression (commas turned into ``|``)."""
        return self._regex

    def is_topic_allowed(self, topic: str) -> bool:
        """Whether the filter selects ``topic`` (internal topics are not special here)."""
        return self._selects(self._compiled.fullmatch(topic) is not None)

    @abstractmethod
    def _selects(self, matches: bool) -> bool: ...

    @abstractmethod
    def pattern(self) -> re.Pattern[str]:
        """A pattern that ``re.Pattern.search`` finds in exactly the selected topic names."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicFilter) or type(other) is not type(self):
            return NotImplemented
        return other._regex == self._regex

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._regex))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._expression!r})"


class Whitelist(TopicFilter):
    """Selects the topics whose whole name matches the expression."""

    __slots__ = ()

    def _selects(self, matches: bool) -> bool:
        return matches

    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"\A(?:{self._regex})\Z")


class Blacklist(TopicFilter):
    """Selects the topics whose whole name does not match the expression."""

    __slots__ = ()

    def _selects(self, matches: bool) -> bool:
        return not matches

    def pattern(self) -> re.Pattern[str]:
        # An empty match at the start, allowed only when the whole name does not match.
        return re.compile(rf"\A(?!(?:{self._regex})\Z)")

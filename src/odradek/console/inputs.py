"""The console's inputs checked: every value a person types or a URL carries becomes a typed value
or a ``ConsoleInputError`` whose message says what was wrong and what is allowed.

Pure: strings in, values out. Topic names follow Kafka's rule (1–249 characters of
``[a-zA-Z0-9._-]``, not ``.`` or ``..``); times are ISO 8601 (UTC when no zone is given) or
milliseconds since the epoch.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Final, Literal

from odradek.errors import OdradekError

__all__ = [
    "ConsoleInputError",
    "ConsoleNotFoundError",
    "ResetSpec",
    "parse_int",
    "parse_partition",
    "parse_reset_spec",
    "parse_start_offset",
    "parse_timestamp_ms",
    "parse_topic_name",
]

_TOPIC: Final = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_DATETIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?"
)
#: The largest integer a Kafka offset or timestamp field holds.
MAX_INT64: Final = 2**63 - 1

Strategy = Literal["earliest", "latest", "offset", "shift", "timestamp"]
STRATEGIES: Final[tuple[Strategy, ...]] = ("earliest", "latest", "offset", "shift", "timestamp")


class ConsoleInputError(OdradekError, ValueError):
    """A value typed into the console, or carried by its URL, that cannot be used; the message
    is shown as it is."""


class ConsoleNotFoundError(OdradekError, LookupError):
    """What a page names (a topic, a group) does not exist; the message is shown as it is."""


def parse_int(text: str | None, what: str, *, minimum: int = 0, maximum: int = MAX_INT64) -> int:
    """A whole number in ``[minimum, maximum]``.

    Raises:
        ConsoleInputError: empty, not a whole number, or out of range (the message names
            ``what`` and the range).
    """
    value = (text or "").strip()
    if not re.fullmatch(r"[+-]?\d{1,19}", value):
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ConsoleInputError(f"{what} must be a whole number, got {shown!r}")
    number = int(value)
    if not minimum <= number <= maximum:
        raise ConsoleInputError(f"{what} must be between {minimum} and {maximum}, got {number}")
    return number


def parse_topic_name(text: str | None) -> str:
    """A legal Kafka topic name.

    Raises:
        ConsoleInputError: empty, too long, ``.``/``..``, or a character outside
            ``[a-zA-Z0-9._-]``.
    """
    name = (text or "").strip()
    if not name:
        raise ConsoleInputError("a topic name is required")
    if name in (".", "..") or not _TOPIC.fullmatch(name):
        raise ConsoleInputError(
            "a topic name is 1 to 249 characters of letters, digits, '.', '_' and '-'"
            " (not '.' or '..')"
        )
    return name


def parse_partition(text: str | None, partition_count: int) -> int:
    """A partition number of a topic with ``partition_count`` partitions.

    Raises:
        ConsoleInputError: not a whole number, or not one of the topic's partitions.
    """
    if partition_count <= 0:
        raise ConsoleInputError("the topic has no partitions")
    return parse_int(text, "partition", minimum=0, maximum=partition_count - 1)


def parse_start_offset(text: str | None) -> int | Literal["earliest", "latest"]:
    """Where the message browser starts: an offset ≥ 0, ``earliest`` or ``latest`` (the last
    records); empty means ``earliest``.

    Raises:
        ConsoleInputError: anything else.
    """
    value = (text or "").strip().lower()
    if value in ("", "earliest"):
        return "earliest"
    if value == "latest":
        return "latest"
    return parse_int(value, "offset")


def parse_timestamp_ms(text: str | None) -> int:
    """A time as milliseconds since the epoch: ``1700000000000``, or ISO 8601 such as
    ``2026-11-25T09:30``, ``2026-11-25T09:30:05.250Z``, ``2026-11-25 09:30+01:00`` (UTC when
    no zone is given).

    Raises:
        ConsoleInputError: neither form, or a date that does not exist.
    """
    value = (text or "").strip()
    if re.fullmatch(r"\d{1,16}", value):
        return int(value)
    if not _DATETIME.fullmatch(value):
        raise ConsoleInputError(
            "a time is milliseconds since the epoch or YYYY-MM-DDTHH:MM[:SS[.sss]][Z|±HH:MM]"
            " (UTC when no zone is given)"
        )
    try:
        moment = datetime.datetime.fromisoformat(value.replace(" ", "T"))
    except ValueError as error:
        raise ConsoleInputError(f"not a real time: {error}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    millis = int(moment.timestamp() * 1_000)
    if millis < 0:
        raise ConsoleInputError("a time before 1970 has no record")
    return millis


@dataclass(frozen=True, slots=True)
class ResetSpec:
    """How a group's offsets are reset: to the earliest or the latest offsets, to an offset, by
    a shift (negative: back), or to the first offset at or after a time (``value`` in ms)."""

    strategy: Strategy
    value: int = 0


def parse_reset_spec(strategy: str | None, value: str | None) -> ResetSpec:
    """The reset form's strategy and its value (unused by earliest and latest).

    Raises:
        ConsoleInputError: an unknown strategy, or a value the strategy cannot use.
    """
    name = (strategy or "").strip()
    if name == "earliest":
        return ResetSpec("earliest")
    if name == "latest":
        return ResetSpec("latest")
    if name == "offset":
        return ResetSpec("offset", parse_int(value, "the offset"))
    if name == "shift":
        return ResetSpec("shift", parse_int(value, "the shift", minimum=-MAX_INT64))
    if name == "timestamp":
        return ResetSpec("timestamp", parse_timestamp_ms(value))
    raise ConsoleInputError(f"the reset strategy is one of {', '.join(STRATEGIES)}")

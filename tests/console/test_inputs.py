"""``console.inputs``: every bad value is refused with a message that says what is allowed."""

from __future__ import annotations

import pytest

from odradek.console.inputs import (
    ConsoleInputError,
    ResetSpec,
    parse_int,
    parse_partition,
    parse_reset_spec,
    parse_start_offset,
    parse_timestamp_ms,
    parse_topic_name,
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "offset must be a whole number, got ''"),
        ("1.5", "offset must be a whole number, got '1.5'"),
        ("-3", "offset must be between 0 and"),
        ("9" * 30, "offset must be a whole number"),
    ],
)
def test_parse_int_refuses(text: str, message: str) -> None:
    with pytest.raises(ConsoleInputError, match=message.replace(".", r"\.")):
        parse_int(text, "offset")


def test_parse_int_accepts_range_and_spaces() -> None:
    assert parse_int(" 12 ", "n") == 12
    assert parse_int("-5", "shift", minimum=-10) == -5


@pytest.mark.parametrize("name", ["views", "a.b_c-D9", "x" * 249])
def test_legal_topic_names(name: str) -> None:
    assert parse_topic_name(name) == name


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "<script>", "x" * 250, "é"])
def test_illegal_topic_names(name: str) -> None:
    with pytest.raises(ConsoleInputError):
        parse_topic_name(name)


def test_parse_partition_names_the_topic_range() -> None:
    assert parse_partition("2", 3) == 2
    with pytest.raises(ConsoleInputError, match="between 0 and 2, got 3"):
        parse_partition("3", 3)
    with pytest.raises(ConsoleInputError, match="no partitions"):
        parse_partition("0", 0)


def test_parse_start_offset() -> None:
    assert parse_start_offset(None) == "earliest"
    assert parse_start_offset(" Latest ") == "latest"
    assert parse_start_offset("7") == 7
    with pytest.raises(ConsoleInputError):
        parse_start_offset("newest")


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("1700000000000", 1_700_000_000_000),
        ("2023-11-14T22:13:20Z", 1_700_000_000_000),
        ("2023-11-14T22:13:20.5", 1_700_000_000_500),  # no zone: UTC
        ("2023-11-14 23:13:20+01:00", 1_700_000_000_000),
        ("2023-11-14T22:13", 1_699_999_980_000),
    ],
)
def test_parse_timestamp_ms(text: str, millis: int) -> None:
    assert parse_timestamp_ms(text) == millis


@pytest.mark.parametrize("text", ["yesterday", "2023-13-01T00:00", "2023-02-30T00:00", ""])
def test_parse_timestamp_ms_refuses(text: str) -> None:
    with pytest.raises(ConsoleInputError):
        parse_timestamp_ms(text)


def test_parse_reset_spec() -> None:
    assert parse_reset_spec("earliest", "ignored") == ResetSpec("earliest")
    assert parse_reset_spec("shift", "-10") == ResetSpec("shift", -10)
    assert parse_reset_spec("offset", "5") == ResetSpec("offset", 5)
    assert parse_reset_spec("timestamp", "1000") == ResetSpec("timestamp", 1000)
    with pytest.raises(ConsoleInputError, match="one of earliest, latest"):
        parse_reset_spec("to-the-moon", "")
    with pytest.raises(ConsoleInputError, match="the offset must be between 0"):
        parse_reset_spec("offset", "-1")

"""Java properties text (``server.properties``) to a ``name → value`` map, as Java's
``Properties.load`` reads it: comments, ``=`` / ``:`` / whitespace separators, line
continuations and backslash escapes. The one reader of the file format; ``BrokerConfig``
interprets the values.
"""

from __future__ import annotations

import re

from odradek.errors import ConfigError

__all__ = ["parse_properties"]


def parse_properties(text: str, *, source: str = "<properties>") -> dict[str, str]:
    """Parses Java properties text into an ordered ``name → value`` map (later keys win).

    Follows ``java.util.Properties.load``: ``key=value``, ``key: value`` or ``key value``;
    lines starting with ``#`` or ``!`` (after blanks) are comments; a line ending in an odd
    number of backslashes continues on the next one, whose leading blanks are dropped;
    ``\\t \\n \\r \\f \\uXXXX`` and ``\\<any>`` escapes. Unlike Java, the value's trailing
    blanks are trimmed too (Kafka trims values).

    Raises:
        ConfigError: a malformed ``\\uXXXX`` escape; the message names ``source`` and the line.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    properties: dict[str, str] = {}
    index = 0
    while index < len(lines):
        number = index + 1
        logical = lines[index].lstrip(" \t\f")
        index += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical):
            logical = logical[:-1]
            if index == len(lines):
                break
            logical += lines[index].lstrip(" \t\f")
            index += 1
        try:
            key, value = _split_property(logical)
        except ValueError as error:
            raise ConfigError(f"{source} line {number}: {error}") from None
        properties[key] = value
    return properties


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_property(line: str) -> tuple[str, str]:
    """Splits one logical line into an unescaped key and value."""
    position = 0
    while position < len(line):
        char = line[position]
        if char == "\\":
            position += 2
            continue
        if char in "=: \t\f":
            break
        position += 1
    key = line[:position]
    rest = line[position:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest, trim_right=True)


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, *, trim_right: bool = False) -> str:
    chars: list[tuple[str, bool]] = []  # (character, was escaped)
    position = 0
    while position < len(text):
        char = text[position]
        if char != "\\" or position + 1 >= len(text):
            chars.append((char, False))
            position += 1
            continue
        escaped = text[position + 1]
        if escaped == "u":
            digits = text[position + 2 : position + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"malformed \\uXXXX escape {text[position : position + 6]!r}")
            chars.append((chr(int(digits, 16)), True))
            position += 6
        else:
            chars.append((_ESCAPES.get(escaped, escaped), True))
            position += 2
    if trim_right:
        while chars and not chars[-1][1] and chars[-1][0] in " \t\f":
            chars.pop()
    return "".join(char for char, _ in chars)

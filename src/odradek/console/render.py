"""Bytes and figures as text a person reads: record keys, values and headers, sizes, times, lags.

The rule kept: whatever bytes a record holds, the page shows them faithfully and safely —
JSON (an object or an array) pretty-printed, other UTF-8 text as it is, anything else as hex
(16 bytes a line, offset first). Nothing here produces HTML: the templates escape every string.
Long payloads are cut at ``max_bytes`` and say so.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "RenderedBytes",
    "format_bytes",
    "format_duration_ms",
    "format_timestamp_ms",
    "render_bytes",
]

#: How many bytes of one key, value or header are shown.
DEFAULT_MAX_BYTES: Final = 64 * 1_024
_HEX_LINE: Final = 16

Kind = Literal["null", "json", "text", "binary"]


@dataclass(frozen=True, slots=True)
class RenderedBytes:
    """``kind``: ``null`` (no bytes at all), ``json``, ``text`` or ``binary`` (``text`` is a hex
    dump); ``size`` the byte count of the whole payload, ``truncated`` whether ``text`` shows
    only its first ``max_bytes``."""

    kind: Kind
    text: str
    size: int
    truncated: bool = False


def render_bytes(data: bytes | None, max_bytes: int = DEFAULT_MAX_BYTES) -> RenderedBytes:
    """Renders a payload (see the module docstring)."""
    if data is None:
        return RenderedBytes("null", "null", 0)
    size = len(data)
    shown = data[:max_bytes]
    truncated = size > max_bytes
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError:
        if truncated:
            # A cut through a multi-byte character is still text: retry without the partial
            # character (at most 3 bytes of it).
            for cut in range(1, 4):
                try:
                    text = shown[:-cut].decode("utf-8")
                except UnicodeDecodeError:
                    continue
                return RenderedBytes("text", text, size, truncated)
        return RenderedBytes("binary", hex_dump(shown), size, truncated)
    if not truncated and text.lstrip()[:1] in ("{", "["):
        structured = _json(text)
        if structured is not None:
            return RenderedBytes("json", structured, size)
    return RenderedBytes("text", text, size, truncated)


def _json(text: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict | list):
        return None
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def hex_dump(data: bytes) -> str:
    """``data`` as lines of ``OFFSET  HEX BYTES  ASCII`` (a dot for a byte outside printable
    ASCII), 16 bytes a line."""
    lines = []
    for start in range(0, len(data), _HEX_LINE):
        chunk = data[start : start + _HEX_LINE]
        hexes = " ".join(f"{byte:02x}" for byte in chunk)
        ascii_ = "".join(chr(byte) if 0x20 <= byte < 0x7F else "." for byte in chunk)
        lines.append(f"{start:08x}  {hexes:<{_HEX_LINE * 3 - 1}}  {ascii_}")
    return "\n".join(lines)


def format_bytes(size: int | None) -> str:
    """A byte count in binary units (``1.5 KiB``); ``-`` when unknown."""
    if size is None or size < 0:
        return "-"
    if size < 1_024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1_024
        if value < 1_024:
            return f"{value:.1f} {unit}"
    return f"{value:.1f} PiB"


def format_timestamp_ms(timestamp_ms: int | None) -> str:
    """A record timestamp as UTC ISO 8601 with milliseconds; ``-`` when unknown or negative
    (Kafka's -1: no timestamp)."""
    if timestamp_ms is None or timestamp_ms < 0:
        return "-"
    try:
        moment = datetime.datetime.fromtimestamp(timestamp_ms / 1_000, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return str(timestamp_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_duration_ms(duration_ms: int | None) -> str:
    """A lag in time: ``0 s``, ``1.2 s``, ``3 min 5 s``, ``2 h 10 min``; ``-`` when unknown."""
    if duration_ms is None:
        return "-"
    seconds = duration_ms / 1_000
    if seconds < 60:
        return "0 s" if duration_ms == 0 else f"{seconds:.1f} s"
    whole = math.floor(seconds)
    if whole < 3_600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 86_400:
        return f"{whole // 3_600} h {whole % 3_600 // 60} min"
    return f"{whole // 86_400} d {whole % 86_400 // 3_600} h"

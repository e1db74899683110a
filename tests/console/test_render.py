"""``console.render``: record bytes shown faithfully and safely, figures in readable units."""

from __future__ import annotations

import json

import pytest

from odradek.console.render import (
    format_bytes,
    format_duration_ms,
    format_timestamp_ms,
    hex_dump,
    render_bytes,
)


def test_none_is_null_not_empty() -> None:
    assert render_bytes(None).kind == "null"
    empty = render_bytes(b"")
    assert (empty.kind, empty.text, empty.size) == ("text", "", 0)


def test_a_json_object_is_pretty_printed_and_keeps_its_order() -> None:
    data = json.dumps({"z": 1, "a": [1, {"b": "é"}]}).encode()
    rendered = render_bytes(data)
    assert rendered.kind == "json"
    assert rendered.text.splitlines()[:2] == ["{", '  "z": 1,']
    assert '"b": "é"' in rendered.text  # not \u escaped
    assert json.loads(rendered.text) == json.loads(data)
    assert rendered.size == len(data)


@pytest.mark.parametrize("data", [b"42", b'"a string"', b"true", b"{not json", b"[1, 2"])
def test_json_scalars_and_broken_json_stay_text(data: bytes) -> None:
    rendered = render_bytes(data)
    assert (rendered.kind, rendered.text) == ("text", data.decode())


def test_non_utf8_is_a_hex_dump_with_ascii_column() -> None:
    data = bytes(range(0xF0, 0x100)) + b"AB\x00"
    rendered = render_bytes(data)
    assert rendered.kind == "binary"
    lines = rendered.text.splitlines()
    assert lines[0].startswith("00000000  f0 f1 f2")
    assert lines[1].startswith("00000010  41 42 00")
    assert lines[1].endswith("AB.")


def test_markup_is_left_as_text_for_the_template_to_escape() -> None:
    rendered = render_bytes(b"<script>alert(1)</script>")
    assert (rendered.kind, rendered.text) == ("text", "<script>alert(1)</script>")


def test_a_long_payload_is_cut_and_says_so_even_inside_a_multibyte_character() -> None:
    data = "é".encode() * 10  # 20 bytes, each character 2 bytes
    rendered = render_bytes(data, max_bytes=5)  # cuts the third character in half
    assert (rendered.kind, rendered.text, rendered.size, rendered.truncated) == (
        "text",
        "éé",
        20,
        True,
    )
    cut_json = render_bytes(b'{"a": 1}', max_bytes=4)
    assert (cut_json.kind, cut_json.text, cut_json.truncated) == ("text", '{"a"', True)


def test_hex_dump_of_nothing_is_empty() -> None:
    assert hex_dump(b"") == ""


@pytest.mark.parametrize(
    ("size", "text"),
    [(None, "-"), (0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (5 * 2**30, "5.0 GiB")],
)
def test_format_bytes(size: int | None, text: str) -> None:
    assert format_bytes(size) == text


@pytest.mark.parametrize(
    ("duration_ms", "text"),
    [
        (None, "-"),
        (0, "0 s"),
        (1_250, "1.2 s"),
        (185_000, "3 min 5 s"),
        (7_800_000, "2 h 10 min"),
        (2 * 86_400_000 + 3_600_000, "2 d 1 h"),
    ],
)
def test_format_duration_ms(duration_ms: int | None, text: str) -> None:
    assert format_duration_ms(duration_ms) == text


def test_format_timestamp_ms_is_utc_with_milliseconds() -> None:
    assert format_timestamp_ms(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
    assert format_timestamp_ms(-1) == "-"
    assert format_timestamp_ms(None) == "-"

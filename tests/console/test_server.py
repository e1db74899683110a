"""``console.server.allowed_hosts_for``: which ``Host`` headers a console answers."""

from __future__ import annotations

from odradek.console.server import allowed_hosts_for


def test_a_loopback_console_answers_loopback_names_only() -> None:
    assert allowed_hosts_for("127.0.0.1") == ["127.0.0.1", "localhost", "::1"]


def test_a_named_address_and_extra_names_are_added() -> None:
    assert allowed_hosts_for("10.0.0.5", ["Console.Example"]) == [
        "127.0.0.1",
        "localhost",
        "::1",
        "10.0.0.5",
        "console.example",
    ]


def test_a_wildcard_address_answers_any_host_unless_names_are_given() -> None:
    assert allowed_hosts_for("0.0.0.0") == ["*"]
    assert allowed_hosts_for("::", ["ops.example"]) == [
        "127.0.0.1",
        "localhost",
        "::1",
        "ops.example",
    ]

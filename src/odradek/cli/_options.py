"""Options and error handling shared by the console tools (``odradek produce``, ``consume``).

Owns the rule that a broker problem reaches the user as one line and exit status 1
(``broker_errors``), while a mistake on the command line is a ``click.BadParameter`` or
``click.UsageError`` (one line, exit 2, printed by ``cli.main``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import click

from odradek.client.network import parse_bootstrap_servers
from odradek.errors import KafkaError, OdradekError

F = TypeVar("F", bound=Callable[..., Any])

_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}


def _check_bootstrap(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_bootstrap_servers(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    return value


def bootstrap_server_option(command: F) -> F:
    """``--bootstrap-server HOST:PORT`` (required, checked while parsing)."""
    return click.option(
        "--bootstrap-server",
        "bootstrap_server",
        required=True,
        metavar="HOST:PORT",
        callback=_check_bootstrap,
        help="The broker to talk to (a comma-separated list: the first that answers).",
    )(command)


def topic_option(command: F) -> F:
    return click.option("--topic", required=True, help="The topic.")(command)


@contextmanager
def broker_errors() -> Iterator[None]:
    """Turns an odradek error raised inside into one line and exit 1.

    A ``KafkaError`` reads ``NAME: message`` with Kafka's error name (just ``NAME`` when the
    message says nothing more).
    """
    try:
        yield
    except KafkaError as error:
        message = str(error)
        name = error.error_code.name
        raise click.ClickException(
            name if message in ("", name) else f"{name}: {message}"
        ) from None
    except OdradekError as error:
        raise click.ClickException(str(error)) from None


def separator(value: str, option: str) -> str:
    """A separator given on the command line, with ``\\t``, ``\\n``, ``\\r`` and ``\\\\`` read as
    the characters they name (so ``--key-separator '\\t'`` means a tab).

    Raises:
        click.BadParameter: an empty separator.
    """
    chars: list[str] = []
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value) and value[index + 1] in _ESCAPES:
            chars.append(_ESCAPES[value[index + 1]])
            index += 2
            continue
        chars.append(char)
        index += 1
    if not chars:
        raise click.BadParameter("must not be empty", param_hint=option)
    return "".join(chars)

"""Options and error handling shared by the console tools (``odradek produce``, ``consume``).

Owns the rule that a broker problem reaches the user as one line and exit status 1
(``broker_errors``), while a mistake on the command line is a ``click.BadParameter`` or
``click.UsageError`` (one line, exit 2, printed by ``cli.main``).

Every command that talks to a broker takes ``--bootstrap-server`` with the same default: the
``ODRADEK_BOOTSTRAP_SERVERS`` environment variable when set, else ``127.0.0.1:9092`` (where
``odradek serve`` listens by default). Describe and list verbs take ``--output table|json``
(``output_option``; ``print_json`` writes one JSON document).

Every such command also takes ``--command-config FILE`` (Kafka's tools' flag; ``produce`` and
``consume`` also answer to ``--producer.config`` / ``--consumer.config`` as
kafka-console-producer and -consumer do): a Java-properties file of client settings
(``security.protocol``, ``ssl.*``, ``sasl.*``) to reach a secured listener. The file is read
and checked while the command line is parsed (a missing, unreadable or garbled file, or a key
the client does not know, is one line and exit 2); its settings then go into every client the
command makes (``client_settings``, ``admin_client``), below the command's own flags.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from odradek.broker.properties import parse_properties
from odradek.client.admin import AdminClient
from odradek.client.config import ADMIN, ClientConfig
from odradek.client.network import parse_bootstrap_servers
from odradek.errors import ConfigError, KafkaError, OdradekError

F = TypeVar("F", bound=Callable[..., Any])

_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}


def _check_bootstrap(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_bootstrap_servers(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    return value


#: The broker every command talks to unless told otherwise.
DEFAULT_BOOTSTRAP_SERVER: Final = "127.0.0.1:9092"
BOOTSTRAP_ENV: Final = "ODRADEK_BOOTSTRAP_SERVERS"


def _default_bootstrap() -> str:
    return os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP_SERVER


#: Where the parsed ``--command-config`` settings wait in the click context's ``meta``.
_COMMAND_CONFIG_META: Final = "odradek.command_config"


def read_command_config(path: Path, client_type: str | None = ADMIN) -> dict[str, str]:
    """The settings of a client properties file, checked as ``client_type``'s configuration
    (``None``: not checked, for a file given to another library).

    Raises:
        ConfigError: the file cannot be read, is not UTF-8 text, has a malformed escape, or
            names a key the client does not know (the message says which).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory") from None
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 properties file") from None
    settings = parse_properties(text, source=str(path))
    if client_type is not None:
        try:
            ClientConfig(settings, client_type=client_type)
        except ConfigError as error:
            raise ConfigError(f"{path}: {error}") from None
    return settings


def _load_command_config(client_type: str | None) -> Callable[..., None]:
    def load(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
        if value is None:
            return
        try:
            ctx.meta[_COMMAND_CONFIG_META] = read_command_config(value, client_type)
        except ConfigError as error:
            raise click.BadParameter(str(error), ctx=ctx, param=param) from None

    return load


def command_settings() -> dict[str, str]:
    """The settings of the running command's ``--command-config`` file (empty without one or
    outside a command)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return {}
    return dict(ctx.find_root().meta.get(_COMMAND_CONFIG_META, {}))


def client_settings(
    bootstrap_server: str, client_id: str, more: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A client's settings: the ``--command-config`` file's, then ``bootstrap.servers``,
    ``client.id`` and ``more`` (which win)."""
    settings: dict[str, Any] = command_settings()
    settings["bootstrap.servers"] = bootstrap_server
    settings["client.id"] = client_id
    settings.update(more or {})
    return settings


def bootstrap_server_options(
    *config_aliases: str, client_type: str | None = ADMIN
) -> Callable[[F], F]:
    """``--bootstrap-server HOST:PORT`` (default: ``$ODRADEK_BOOTSTRAP_SERVERS``, else
    127.0.0.1:9092; checked while parsing) and ``--command-config FILE`` (also named
    ``config_aliases``; its settings checked as ``client_type``'s, read back through
    ``command_settings``)."""

    def decorate(command: F) -> F:
        command = click.option(
            "--command-config",
            *config_aliases,
            "command_config",
            type=click.Path(dir_okay=True, path_type=Path),
            metavar="FILE",
            expose_value=False,
            callback=_load_command_config(client_type),
            help="A properties file of client settings (security.protocol, ssl.*, sasl.*).",
        )(command)
        return click.option(
            "--bootstrap-server",
            "bootstrap_server",
            default=_default_bootstrap,
            show_default=f"${BOOTSTRAP_ENV} or {DEFAULT_BOOTSTRAP_SERVER}",
            metavar="HOST:PORT",
            callback=_check_bootstrap,
            help="The broker to talk to (a comma-separated list: the first that answers).",
        )(command)

    return decorate


def bootstrap_server_option(command: F) -> F:
    """``bootstrap_server_options()``: for a command that makes admin clients."""
    return bootstrap_server_options()(command)


def output_option(command: F) -> F:
    """``--output table|json`` (the parameter ``output``)."""
    return click.option(
        "--output",
        "output",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="Print a table, or one JSON document.",
    )(command)


def print_json(document: object) -> None:
    """Writes ``document`` as one indented JSON document on stdout."""
    click.echo(json.dumps(document, indent=2, sort_keys=False))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Left-aligned columns as wide as their widest cell, one space apart."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    for row in [headers, *rows]:
        click.echo(
            " ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


@contextmanager
def admin_client(
    bootstrap_server: str, client_id: str, timeout_ms: int = 30_000
) -> Iterator[AdminClient]:
    """An admin client (with the ``--command-config`` settings) that fails at once when no
    bootstrap broker answers; odradek errors inside become one line and exit 1
    (``broker_errors``)."""
    with broker_errors():
        client = AdminClient(
            client_settings(
                bootstrap_server,
                client_id,
                {"default.api.timeout.ms": timeout_ms, "request.timeout.ms": timeout_ms},
            ),
            bootstrap_fail_fast=True,
        )
        try:
            yield client
        finally:
            client.close()


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

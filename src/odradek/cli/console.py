"""``odradek console``: the web console (``odradek.console``) in the foreground.

    odradek console --bootstrap-server HOST:PORT [--host 127.0.0.1] [--port 8080]
                    [--allowed-host NAME ...] [--command-config FILE]

Prints one line when it serves — ``odradek console: serving http://HOST:PORT/ (bootstrap
HOST:PORT)`` — and serves until SIGINT or SIGTERM (exit 0). ``--port 0`` takes a free port.

``--command-config`` gives the console's own connection (security.protocol, ssl.*, sasl.*: its
service identity). When that names a SASL listener, users log in with their SASL username and
password (checked by the broker, with the file's mechanism) and each user's pages act as that
user (``console.sessions``); the line then ends ``, users log in with MECHANISM)``.

Errors: a bad option is one line, exit 2; a broker that does not answer at the start, or an
address that cannot be bound, one line, exit 1. Needs the ``console`` extra.
"""

from __future__ import annotations

import click

from odradek.cli._options import (
    bootstrap_server_option,
    broker_errors,
    client_settings,
    command_settings,
)
from odradek.client.admin import AdminClient

#: How long the check that the broker answers may take at the start.
START_CHECK_TIMEOUT_MS = 10_000


@click.command()
@bootstrap_server_option
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="The address the console listens on."
)
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65_535),
    default=8080,
    show_default=True,
    help="The port it listens on (0: a free one).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    show_default=True,
    help="The web server's log level (on stderr).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests for this host name (repeatable); the loopback names and "
    "--host are always answered, any name when --host is 0.0.0.0 or :: and none is given.",
)
def console(
    bootstrap_server: str, host: str, port: int, log_level: str, allowed_hosts: tuple[str, ...]
) -> None:
    """Serve the web console: brokers, topics, messages, consumer groups, throughput."""
    try:
        # Imported here: the web stack is the optional ``console`` extra; every other command
        # starts without it.
        from odradek.console.server import ConsoleServer  # noqa: PLC0415
        from odradek.console.service import ConsoleService  # noqa: PLC0415
        from odradek.console.sessions import SessionStore, needs_login  # noqa: PLC0415
    except ImportError as error:
        raise click.ClickException(
            f"the console needs the console extra (pip install 'odradek[console]'): {error}"
        ) from None
    with (
        broker_errors(),
        AdminClient(
            client_settings(bootstrap_server, "odradek-console"),
            bootstrap_fail_fast=True,
        ) as admin,
    ):
        admin.describe_cluster(timeout_ms=START_CHECK_TIMEOUT_MS)
    settings = command_settings()
    service = ConsoleService(bootstrap_server, settings=settings)
    sessions = SessionStore(bootstrap_server, settings) if needs_login(settings) else None
    try:
        try:
            server = ConsoleServer(
                service,
                host,
                port,
                allowed_hosts=allowed_hosts,
                log_level=log_level,
                sessions=sessions,
            )
        except OSError as error:
            raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from None
        login = f", users log in with {sessions.mechanism}" if sessions is not None else ""
        click.echo(f"odradek console: serving {server.url} (bootstrap {bootstrap_server}{login})")
        server.serve_forever()
    finally:
        if sessions is not None:
            sessions.close()
        service.close()

"""``odradek users scram set|delete|describe``: users' SCRAM credentials (KIP-554).

What Kafka does with ``kafka-configs.sh --entity-type users --alter --add-config
'SCRAM-SHA-256=[iterations=8192,password=...]'``, through ``AdminClient``'s
AlterUserScramCredentials / DescribeUserScramCredentials::

    odradek users scram set --bootstrap-server H:P --user alice --mechanism SCRAM-SHA-512 \\
        [--iterations 8192] [--password PW]      (no --password: asked on the terminal)
    odradek users scram delete --bootstrap-server H:P --user alice --mechanism SCRAM-SHA-512
    odradek users scram describe --bootstrap-server H:P [--user alice ...]

``describe`` prints one JSON line: ``{"alice":{"SCRAM-SHA-512":8192}}``. Every verb takes
``--command-config FILE``: client settings in a properties file (``security.protocol``,
``ssl.*``, ``sasl.*``) to reach a secured listener, as Kafka's tools do. A user's error is
one line with Kafka's error name and exit 1; a usage mistake exit 2.
"""

from __future__ import annotations

import json
from typing import Any, Final

import click

from odradek.cli._options import (
    bootstrap_server_option,
    broker_errors,
    client_settings,
    print_table,
)
from odradek.client.admin import AdminClient
from odradek.client.admin_scram import ScramDeletion, ScramUpsertion
from odradek.errors import KafkaError

CLIENT_ID: Final = "odradek-users"
REQUEST_TIMEOUT_MS: Final = 30_000
MECHANISMS: Final = ("SCRAM-SHA-256", "SCRAM-SHA-512")

mechanism_option = click.option(
    "--mechanism", required=True, type=click.Choice(MECHANISMS, case_sensitive=False)
)


def _client(bootstrap_server: str) -> AdminClient:
    return AdminClient(
        client_settings(
            bootstrap_server, CLIENT_ID, {"default.api.timeout.ms": REQUEST_TIMEOUT_MS}
        ),
        bootstrap_fail_fast=True,
    )


def _check(result: Any, user: str) -> None:
    error = result.errors.get(user)
    if error is not None:
        name = error.error_code.name if isinstance(error, KafkaError) else type(error).__name__
        raise click.ClickException(f"{name}: {error}")


@click.group("users")
def users() -> None:
    """Manage users' credentials (like kafka-configs.sh --entity-type users)."""


@users.group("scram")
def scram() -> None:
    """SCRAM-SHA-256 / SCRAM-SHA-512 credentials."""


@scram.command("set")
@bootstrap_server_option
@click.option("--user", required=True)
@mechanism_option
@click.option("--iterations", type=click.IntRange(4096, 16384), default=4096, show_default=True)
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=False)
def set_(
    bootstrap_server: str,
    user: str,
    mechanism: str,
    iterations: int,
    password: str,
) -> None:
    """Create or replace a user's credential for one mechanism."""
    with broker_errors(), _client(bootstrap_server) as client:
        upsertion = ScramUpsertion(user, mechanism.upper(), password, iterations)
        _check(client.alter_user_scram_credentials([upsertion]), user)
    click.echo(f"set {mechanism.upper()} credential of {user}")


@scram.command("delete")
@bootstrap_server_option
@click.option("--user", required=True)
@mechanism_option
def delete(bootstrap_server: str, user: str, mechanism: str) -> None:
    """Remove a user's credential for one mechanism."""
    with broker_errors(), _client(bootstrap_server) as client:
        _check(client.alter_user_scram_credentials([ScramDeletion(user, mechanism.upper())]), user)
    click.echo(f"deleted {mechanism.upper()} credential of {user}")


@scram.command("describe")
@bootstrap_server_option
@click.option("--user", "user_names", multiple=True, help="A user (repeatable; default: all).")
@click.option(
    "--output",
    type=click.Choice(["table", "json"]),
    default="json",
    show_default=True,
    help="One JSON line (the default, as before), or a table: USER MECHANISM ITERATIONS.",
)
def describe(bootstrap_server: str, user_names: tuple[str, ...], output: str) -> None:
    """Print each user's mechanisms and iterations (JSON, or a table)."""
    with broker_errors(), _client(bootstrap_server) as client:
        result = client.describe_user_scram_credentials(list(user_names) or None)
        for user in result.errors:
            _check(result, user)
        found = {user: dict(result[user]) for user in result}
    if output == "json":
        click.echo(json.dumps(found, sort_keys=True))
        return
    rows = [
        [user, mechanism, str(iterations)]
        for user, mechanisms in sorted(found.items())
        for mechanism, iterations in sorted(mechanisms.items())
    ]
    print_table(["USER", "MECHANISM", "ITERATIONS"], rows)

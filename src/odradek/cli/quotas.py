"""``odradek quotas describe|alter``: client quotas on a running broker, the quota part of
Kafka's ``kafka-configs.sh --entity-type users|clients``.

Over ``AdminClient`` to ``--bootstrap-server`` (DescribeClientQuotas, AlterClientQuotas)::

    odradek quotas describe [--user U | --user-default] [--client-id C | --client-id-default]
    odradek quotas alter    (--user U | --user-default) and/or
                            (--client-id C | --client-id-default)
                            [--add-config k=v[,k=v...]] [--delete-config k[,k...]]

Keys are Kafka's: ``producer_byte_rate``, ``consumer_byte_rate`` (bytes/s) and
``request_percentage``. ``describe`` with no entity lists every quota; with a user only,
the quotas of that user and of its client ids. Output, one line per entity, as Kafka's tool
prints it: ``Quota configs for user-principal 'alice', client-id 'app' are
producer_byte_rate=1048576.0``; with ``--output json`` a list of ``{"entity": {"user": "alice",
"client-id": "app"}, "configs": {...}}`` (a null name: the default entity). A bad value is
one line and exit 2; a broker refusal one line and exit 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import click

from odradek.cli._options import (
    bootstrap_server_option,
    broker_errors,
    client_settings,
    output_option,
    print_json,
)
from odradek.client.admin import AdminClient
from odradek.client.admin_quotas import MATCH_DEFAULT, MATCH_EXACT

CLIENT_ID: Final = "odradek-quotas"
REQUEST_TIMEOUT_MS: Final = 10_000
KEYS: Final = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")


@click.group()
def quotas() -> None:
    """Describe and alter client quotas (like kafka-configs.sh for users and clients)."""


def _entity_options(command: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(
        [
            click.option("--user", default=None, help="A user (principal name)."),
            click.option("--user-default", is_flag=True, help="The default user."),
            click.option("--client-id", default=None, help="A client id."),
            click.option("--client-id-default", is_flag=True, help="The default client id."),
        ]
    ):
        command = option(command)
    return command


def _side(name: str | None, default: bool, option: str) -> tuple[bool, str | None]:
    """(named at all, the name or None for the default)."""
    if name is not None and default:
        raise click.UsageError(f"give --{option} or --{option}-default, not both")
    return name is not None or default, name


@contextmanager
def _admin(bootstrap_server: str) -> Iterator[AdminClient]:
    with broker_errors():
        client = AdminClient(
            client_settings(
                bootstrap_server,
                CLIENT_ID,
                {
                    "default.api.timeout.ms": REQUEST_TIMEOUT_MS,
                },
            ),
            bootstrap_fail_fast=True,
        )
        with client:
            yield client


@quotas.command("describe")
@bootstrap_server_option
@_entity_options
@output_option
def describe(
    bootstrap_server: str,
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_id_default: bool,
    output: str,
) -> None:
    """Show quotas (all, or those of the entity named)."""
    components: list[tuple[str, int, str | None]] = []
    for kind, (named, name) in (
        ("user", _side(user, user_default, "user")),
        ("client-id", _side(client_id, client_id_default, "client-id")),
    ):
        if named:
            components.append((kind, MATCH_EXACT if name is not None else MATCH_DEFAULT, name))
    with _admin(bootstrap_server) as client:
        entries = client.describe_client_quotas(components)
    if output == "json":
        print_json([{"entity": entity, "configs": values} for entity, values in entries])
        return
    for entity, values in entries:
        configs = ", ".join(f"{key}={value!r}" for key, value in sorted(values.items()))
        click.echo(f"Quota configs for {_describe_entity(entity)} are {configs}")


@quotas.command("alter")
@bootstrap_server_option
@_entity_options
@click.option("--add-config", "add", default="", help="k=v[,k=v...] to set.")
@click.option("--delete-config", "delete", default="", help="k[,k...] to remove.")
def alter(
    bootstrap_server: str,
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_id_default: bool,
    add: str,
    delete: str,
) -> None:
    """Set or remove quotas of a user, a client id, or a user's client id."""
    entity: dict[str, str | None] = {}
    for kind, (named, name) in (
        ("user", _side(user, user_default, "user")),
        ("client-id", _side(client_id, client_id_default, "client-id")),
    ):
        if named:
            entity[kind] = name
    if not entity:
        raise click.UsageError("name an entity: --user/--user-default and/or --client-id/...")
    to_set = _parse_add(add)
    to_remove = [key.strip() for key in delete.split(",") if key.strip()]
    for key in [*to_set, *to_remove]:
        if key not in KEYS:
            raise click.BadParameter(f"unknown quota {key!r} (one of {', '.join(KEYS)})")
    if not to_set and not to_remove:
        raise click.UsageError("nothing to do: give --add-config and/or --delete-config")
    with _admin(bootstrap_server) as client:
        error = client.alter_client_quotas(entity, to_set, to_remove)
    if error is not None:
        raise click.ClickException(
            f"cannot alter the quotas of {_describe_entity(entity)}: {error}"
        )
    click.echo(f"Completed updating config for {_describe_entity(entity)}.")


def _parse_add(text: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        try:
            if not sep:
                raise ValueError
            value = float(raw)
        except ValueError:
            raise click.BadParameter(
                f"{item!r} is not key=number", param_hint="--add-config"
            ) from None
        if not value > 0:
            raise click.BadParameter(f"{key} must be positive", param_hint="--add-config")
        values[key.strip()] = value
    return values


def _describe_entity(entity: dict[str, str | None]) -> str:
    labels = {"user": "user-principal", "client-id": "client-id"}
    parts = [
        f"the default {labels.get(kind, kind)}"
        if name is None
        else f"{labels.get(kind, kind)} '{name}'"
        for kind, name in entity.items()
    ]
    return ", ".join(parts)

"""The CLI's side of ``console.broker_http`` (a group's rebalance history from its
coordinator's HTTP endpoint): the same calls, each failure one line and exit 1
(``click.ClickException``)."""

from __future__ import annotations

from typing import Any

import click

from odradek.client.admin import AdminClient
from odradek.console import broker_http


def coordinator_endpoint(admin: AdminClient, group_id: str) -> tuple[str, int]:
    """The metrics endpoint (host, port) of the group's coordinator (``broker_http``).

    Raises:
        click.ClickException: no coordinator, or it has no endpoint.
    """
    try:
        return broker_http.coordinator_endpoint(admin, group_id)
    except broker_http.BrokerHttpError as error:
        raise click.ClickException(str(error)) from None


def rebalances(admin: AdminClient, group_id: str, timeout_s: float) -> list[dict[str, Any]]:
    """The group's last rebalances as its coordinator reports them, oldest first.

    Raises:
        click.ClickException: the endpoint cannot be found, reached or read.
    """
    try:
        return broker_http.rebalances(admin, group_id, timeout_s)
    except broker_http.BrokerHttpError as error:
        raise click.ClickException(str(error)) from None

"""What the CLI and the console read from a broker's HTTP endpoint (``broker.metrics``): a
group's rebalance history, which no Kafka API carries.

The endpoint's address is found through the Kafka protocol: the group's coordinator from
DescribeGroups, then that broker's ``metrics.port`` / ``metrics.host`` / ``metric.reporters``
from DescribeConfigs (a bound-to-all ``metrics.host`` is reached at the coordinator's
advertised host). Every failure is a ``BrokerHttpError`` with one line (the CLI prints it and
exits 1; the console shows it on the group's page). No web stack here: ``odradek groups``
imports this module without the console extra.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from odradek.broker.metrics.settings import metrics_endpoint, parse_reporters
from odradek.client.admin import AdminClient
from odradek.client.admin_types import ConfigResource, ConfigResourceType
from odradek.errors import ConfigError, OdradekError

__all__ = ["BrokerHttpError", "coordinator_endpoint", "get_json", "rebalances"]

_ANY_ADDRESS = ("", "0.0.0.0", "::")  # noqa: S104 (not binding: replaced by a real host)


class BrokerHttpError(OdradekError):
    """The broker's HTTP endpoint could not be found, reached or read; the message says why
    in one line."""


def coordinator_endpoint(admin: AdminClient, group_id: str) -> tuple[str, int]:
    """The metrics endpoint (host, port) of the group's coordinator.

    Raises:
        BrokerHttpError: no coordinator, or it has no endpoint.
    """
    coordinator = admin.describe_groups([group_id])[group_id].coordinator
    if coordinator is None:
        raise BrokerHttpError(f"group '{group_id}' has no coordinator")
    resource = ConfigResource(ConfigResourceType.BROKER, str(coordinator.node_id))
    configs = admin.describe_configs([resource]).all()[resource]

    def value(name: str) -> str | None:
        entry = configs.get(name)
        return None if entry is None else entry.value

    try:
        port = int(value("metrics.port") or "-1")
        reporters = parse_reporters("metric.reporters", value("metric.reporters") or "")
    except (ValueError, ConfigError) as error:
        raise BrokerHttpError(f"broker {coordinator.node_id}: {error}") from None
    endpoint = metrics_endpoint(port, value("metrics.host"), reporters, coordinator.host)
    if endpoint is None:
        raise BrokerHttpError(
            f"the coordinator of group '{group_id}' (broker {coordinator.node_id}) has no "
            "metrics endpoint: start it with metrics.port set"
        )
    host, bound = endpoint
    return (coordinator.host if host in _ANY_ADDRESS else host), bound


def get_json(host: str, port: int, path: str, timeout_s: float) -> Any:
    """GETs ``path`` from the endpoint and decodes its JSON.

    Raises:
        BrokerHttpError: unreachable, an error status (its message), or not JSON.
    """
    url = f"http://{host}:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        try:
            message = json.loads(error.read()).get("error", error.reason)
        except ValueError:
            message = error.reason
        finally:
            error.close()
        raise BrokerHttpError(f"{url}: {message}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise BrokerHttpError(f"{url}: {error}") from None


def rebalances(admin: AdminClient, group_id: str, timeout_s: float) -> list[dict[str, Any]]:
    """The group's last rebalances as its coordinator reports them, oldest first."""
    host, port = coordinator_endpoint(admin, group_id)
    document = get_json(host, port, f"/groups/{quote(group_id, safe='')}/rebalances", timeout_s)
    return list(document.get("rebalances", []))

"""``odradek api-versions``: each broker's API versions, like Kafka's
kafka-broker-api-versions.sh.

    odradek api-versions [--output json]

For every broker the cluster lists (DescribeCluster), one ``host:port (id: N rack: R) -> (``
line, then one line per API it serves: ``Name(key): min to max [usable: v]`` — ``usable`` is
the newest version odradek's own clients speak too, ``[unusable]`` when there is none — and a
closing ``)``. A broker that does not answer is reported as such and makes the exit status 1.
"""

from __future__ import annotations

from typing import Any, Final

import click

from odradek.cli._options import (
    admin_client,
    bootstrap_server_option,
    broker_errors,
    client_settings,
    output_option,
    print_json,
)
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.errors import KafkaError
from odradek.protocol import IMPLEMENTED_VERSIONS, ApiKey, VersionRange

CLIENT_ID: Final = "odradek-api-versions"
TIMEOUT_MS: Final = 10_000


def _api_name(key: int) -> str:
    try:
        return "".join(word.capitalize() for word in ApiKey(key).name.split("_"))
    except ValueError:
        return f"Unknown{key}"


def _usable(key: int, low: int, high: int) -> int | None:
    try:
        ours = IMPLEMENTED_VERSIONS.get(ApiKey(key))
    except ValueError:
        return None
    if ours is None:
        return None
    top = min(high, ours.max_version)
    return top if top >= max(low, ours.min_version) else None


@click.command("api-versions")
@bootstrap_server_option
@output_option
def api_versions(bootstrap_server: str, output: str) -> None:
    """Print the API versions every broker serves."""
    with admin_client(bootstrap_server, CLIENT_ID) as admin:
        brokers = admin.describe_cluster().brokers
    reports: list[dict[str, Any]] = []
    with broker_errors():
        network = NetworkClient(ClientConfig(client_settings(bootstrap_server, CLIENT_ID)))
        try:
            network.update_nodes({b.node_id: (b.host, b.port) for b in brokers})
            futures = {
                b.node_id: network.send(
                    b.node_id,
                    ApiKey.API_VERSIONS,
                    {"client_software_name": "odradek", "client_software_version": "cli"},
                    versions=VersionRange(0, 3),
                )
                for b in brokers
            }
            network.wait(futures.values(), network.clock.monotonic_ms() + TIMEOUT_MS)
        finally:
            network.close()
    failed = 0
    for broker in sorted(brokers, key=lambda b: b.node_id):
        report: dict[str, Any] = {
            "id": broker.node_id,
            "host": broker.host,
            "port": broker.port,
            "rack": broker.rack,
        }
        future = futures[broker.node_id]
        try:
            body = future.result()
        except (KafkaError, Exception) as error:  # an unanswered or failed request
            failed += 1
            report["error"] = str(error) or type(error).__name__
            reports.append(report)
            continue
        report["apis"] = [
            {
                "name": _api_name(entry["api_key"]),
                "key": entry["api_key"],
                "min": entry["min_version"],
                "max": entry["max_version"],
                "usable": _usable(entry["api_key"], entry["min_version"], entry["max_version"]),
            }
            for entry in sorted(body["api_keys"], key=lambda e: e["api_key"])
        ]
        reports.append(report)
    if output == "json":
        print_json(reports)
    else:
        for report in reports:
            rack = report["rack"] or "null"
            where = f"{report['host']}:{report['port']} (id: {report['id']} rack: {rack})"
            if "error" in report:
                click.echo(f"{where} -> ERROR: {report['error']}")
                continue
            click.echo(f"{where} -> (")
            for api in report["apis"]:
                usable = "unusable" if api["usable"] is None else f"usable: {api['usable']}"
                click.echo(
                    f"\t{api['name']}({api['key']}): {api['min']} to {api['max']} [{usable}],"
                )
            click.echo(")")
    if failed:
        raise click.ClickException(f"{failed} of {len(brokers)} brokers did not answer")

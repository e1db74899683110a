"""``odradek cluster describe``: the cluster id, the controller and the brokers of a cluster.

Through ``AdminClient.describe_cluster`` (DescribeCluster) to ``--bootstrap-server HOST:PORT``;
prints one line for the cluster id, one for the controller, one line per broker (id,
``host:port``, rack), then how many partitions are under-replicated (ISR smaller than the
replicas) and offline (no leader, or a leader that is not a live broker) — Kafka's
UnderReplicatedPartitions and OfflinePartitionsCount, counted from one Metadata request::

    Cluster ID: 3HEa-xUrQp2bb9bD1cP3yA
    Controller: 1
    Broker: 0	Endpoint: 127.0.0.1:9092	Rack: none
    UnderReplicatedPartitions: 0
    OfflinePartitions: 0

``--output json`` prints one document with the same facts (``cluster_id``, ``controller``,
``brokers``, ``under_replicated_partitions``, ``offline_partitions``).

Errors as every ``odradek`` tool: a usage mistake is one line and exit 2; a broker that cannot
be reached, or an error it returns, is one line and exit 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import click

from odradek.cli._options import (
    bootstrap_server_option,
    broker_errors,
    client_settings,
    output_option,
    print_json,
)
from odradek.cli.topics import is_unavailable, is_under_replicated
from odradek.client.admin import AdminClient
from odradek.client.admin_types import ClusterDescription, PartitionDescription
from odradek.errors import KafkaError

CLIENT_ID: Final = "odradek-cluster"
REQUEST_TIMEOUT_MS: Final = 30_000


@click.group("cluster")
def cluster() -> None:
    """Describe the cluster: its id, its controller and its brokers."""


@cluster.command("describe")
@bootstrap_server_option
@output_option
def describe(bootstrap_server: str, output: str) -> None:
    """Print the cluster id, the controller and every broker (id, host:port, rack)."""
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
            description = client.describe_cluster()
            names = client.list_topics(include_internal=True)
            topics = client.describe_topics(names) if names else {}
            partitions: list[PartitionDescription] = []
            for name in names:
                try:
                    partitions.extend(topics[name].partitions)
                except KafkaError:
                    continue  # deleted meanwhile: nothing to count
    if output == "json":
        print_json(describe_document(description, partitions))
        return
    for line in describe_lines(description, partitions):
        click.echo(line)


def describe_document(
    description: ClusterDescription, partitions: Sequence[PartitionDescription] = ()
) -> dict[str, Any]:
    """What ``describe --output json`` prints: the same facts as ``describe_lines``."""
    live = {broker.node_id for broker in description.brokers}
    return {
        "cluster_id": description.cluster_id,
        "controller": description.controller_id,
        "brokers": [
            {"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in description.brokers
        ],
        "under_replicated_partitions": sum(map(is_under_replicated, partitions)),
        "offline_partitions": sum(is_unavailable(p, live) for p in partitions),
    }


def describe_lines(
    description: ClusterDescription, partitions: Sequence[PartitionDescription] = ()
) -> list[str]:
    """The lines ``describe`` prints for ``description`` and the cluster's ``partitions``."""
    controller = "none" if description.controller_id is None else description.controller_id
    lines = [f"Cluster ID: {description.cluster_id or 'none'}", f"Controller: {controller}"]
    for broker in description.brokers:
        lines.append(
            f"Broker: {broker.node_id}\tEndpoint: {broker.host}:{broker.port}\t"
            f"Rack: {broker.rack or 'none'}"
        )
    live = {broker.node_id for broker in description.brokers}
    lines.append(f"UnderReplicatedPartitions: {sum(map(is_under_replicated, partitions))}")
    lines.append(f"OfflinePartitions: {sum(is_unavailable(p, live) for p in partitions)}")
    return lines

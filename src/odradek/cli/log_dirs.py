"""``odradek log-dirs describe``: each broker's log dirs and the logs they hold, as JSON.

Like Kafka's ``kafka-log-dirs.sh --describe``, through ``AdminClient.describe_log_dirs``::

    odradek log-dirs describe --bootstrap-server HOST:PORT [--broker-list 0,1] [--topic-list a,b]

prints one line of JSON in that tool's shape (and nothing else on stdout, so it pipes into
``jq``)::

    {"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/data","error":null,
      "partitions":[{"partition":"t-0","size":1234,"offsetLag":0,"isFuture":false}]}]}]}

A log dir's ``error`` is its error's Kafka name (``KAFKA_STORAGE_ERROR``), else null. Without
``--broker-list`` every broker in the cluster's metadata is asked; without ``--topic-list``
every partition is described. Errors: a usage mistake (a broker id that is not a number, an
unknown broker) is one line and exit 2; a broker that cannot be reached or asked is one line
with Kafka's error name and exit 1.
"""

from __future__ import annotations

import json
from typing import Any, Final

import click

from odradek.cli._options import bootstrap_server_option, broker_errors, client_settings
from odradek.client.admin import AdminClient
from odradek.client.admin_types import LogDirDescription

CLIENT_ID: Final = "odradek-log-dirs"
REQUEST_TIMEOUT_MS: Final = 30_000
#: The version of kafka-log-dirs.sh's JSON output.
OUTPUT_VERSION: Final = 1


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


def _broker_ids(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    names = _names(value)
    if names is None:
        return None
    try:
        return [int(name) for name in names]
    except ValueError:
        raise click.BadParameter(f"not a list of broker ids: {value!r}", ctx, param) from None


@click.group("log-dirs")
def log_dirs() -> None:
    """Describe the brokers' log directories (like kafka-log-dirs.sh)."""


@log_dirs.command("describe")
@bootstrap_server_option
@click.option(
    "--broker-list",
    callback=_broker_ids,
    metavar="ID,ID",
    help="The brokers to ask (default: every broker).",
)
@click.option("--topic-list", metavar="TOPIC,TOPIC", help="The topics (default: every topic).")
def describe(bootstrap_server: str, broker_list: list[int] | None, topic_list: str | None) -> None:
    """Print each broker's log dirs and their partitions' sizes as JSON."""
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
            if broker_list is not None:
                known = {b.node_id for b in client.describe_cluster().brokers}
                unknown = [b for b in broker_list if b not in known]
                if unknown:
                    raise click.UsageError(
                        f"no such brokers in --broker-list: {', '.join(map(str, unknown))} "
                        f"(brokers: {', '.join(map(str, sorted(known)))})"
                    )
            result = client.describe_log_dirs(broker_list, _names(topic_list)).all()
    brokers = [
        {"broker": broker, "logDirs": [_log_dir(d) for d in dirs.values()]}
        for broker, dirs in result.items()
    ]
    click.echo(json.dumps({"version": OUTPUT_VERSION, "brokers": brokers}))


def _log_dir(described: LogDirDescription) -> dict[str, Any]:
    return {
        "logDir": described.path,
        "error": None if described.error is None else described.error.error_code.name,
        "partitions": [
            {
                "partition": f"{tp.topic}-{tp.partition}",
                "size": replica.size,
                "offsetLag": replica.offset_lag,
                "isFuture": replica.is_future,
            }
            for tp, replica in sorted(
                described.replicas.items(), key=lambda item: (item[0].topic, item[0].partition)
            )
        ],
    }

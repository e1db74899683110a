"""``odradek offsets get``: the offsets of partitions by time, like Kafka's kafka-get-offsets.sh.

    odradek offsets get --topic T[:P,P...] [--topic ...] [--time earliest|latest|max-timestamp|MS]
                        [--output json]

Prints ``topic:partition:offset`` lines (Kafka's format), in topic and partition order; with a
time in ms, the first offset whose timestamp is at or after it (no line for a partition with
none, as Kafka's tool). ``--isolation-level read_committed`` asks for the last stable offset.
A usage mistake is one line and exit 2; an unknown topic or a broker error one line and exit 1.
"""

from __future__ import annotations

from typing import Final

import click

from odradek._types import TopicPartition
from odradek.cli._options import admin_client, bootstrap_server_option, output_option, print_json
from odradek.cli.groups import parse_topic
from odradek.client.admin import AdminClient
from odradek.client.admin_types import OffsetSpec

CLIENT_ID: Final = "odradek-offsets"
_TIMES: Final = {"earliest": -2, "latest": -1, "max-timestamp": -3}


@click.group("offsets")
def offsets() -> None:
    """Look up partition offsets."""


def parse_time(value: str) -> int:
    """``earliest``, ``latest``, ``max-timestamp``, -1/-2/-3, or a time in ms (≥ 0).

    Raises:
        click.BadParameter: anything else.
    """
    if value in _TIMES:
        return _TIMES[value]
    try:
        number = int(value)
    except ValueError:
        number = -4
    if number < -3:
        raise click.BadParameter(
            f"expected earliest, latest, max-timestamp or a time in ms, got {value!r}",
            param_hint="--time",
        )
    return number


def partitions_of(admin: AdminClient, topics: tuple[str, ...]) -> list[TopicPartition]:
    """The partitions ``T`` / ``T:P,P`` name (a whole topic: every partition it has)."""
    wanted = [parse_topic(value) for value in topics]
    whole = [topic for topic, numbers in wanted if numbers is None]
    described = admin.describe_topics(whole).all() if whole else {}
    found: dict[TopicPartition, None] = {}
    for topic, numbers in wanted:
        if numbers is None:
            found.update(dict.fromkeys(described[topic].topic_partitions))
        else:
            found.update((TopicPartition(topic, n), None) for n in numbers)
    return sorted(found, key=lambda tp: (tp.topic, tp.partition))


@offsets.command("get")
@bootstrap_server_option
@click.option(
    "--topic", "topics", multiple=True, required=True, metavar="T[:P,P...]", help="Topic."
)
@click.option(
    "--time",
    "time_spec",
    default="latest",
    show_default=True,
    metavar="earliest|latest|max-timestamp|MS",
    help="Which offset.",
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
)
@output_option
def get(
    bootstrap_server: str,
    topics: tuple[str, ...],
    time_spec: str,
    isolation_level: str,
    output: str,
) -> None:
    """Print partition offsets as topic:partition:offset."""
    timestamp = parse_time(time_spec)
    with admin_client(bootstrap_server, CLIENT_ID) as admin:
        partitions = partitions_of(admin, topics)
        result = admin.list_offsets(
            dict.fromkeys(partitions, OffsetSpec(timestamp)),
            isolation_level=1 if isolation_level == "read_committed" else 0,
        ).all()
    found = [(tp, info) for tp, info in result.items() if info.offset >= 0]
    if output == "json":
        print_json(
            [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "offset": info.offset,
                    "timestamp": info.timestamp if info.timestamp >= 0 else None,
                }
                for tp, info in found
            ]
        )
        return
    for tp, info in found:
        click.echo(f"{tp.topic}:{tp.partition}:{info.offset}")

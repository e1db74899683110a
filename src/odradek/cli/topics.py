"""``odradek topics create|list|describe|alter|delete``: manage topics on a running broker.

Like Kafka's ``kafka-topics.sh`` (and ``kafka-configs.sh --alter`` for topic configs), through
``AdminClient`` to ``--bootstrap-server HOST:PORT``::

    odradek topics create   --topic T [--partitions N] [--replication-factor R] [--config K=V ...]
    odradek topics list
    odradek topics describe [--topic T] [--under-replicated-partitions]
                            [--unavailable-partitions]
    odradek topics alter    --topic T [--add-config K=V ...] [--delete-config K ...]
                            [--partitions N]
    odradek topics delete   --topic T

``describe`` prints Kafka's layout: one line per topic (partition count, replication factor,
the configs not at their default), then one line per partition (leader, replicas, ISR).
``--add-config`` takes ``K=V`` entries, repeated or comma-separated; a value that holds commas
is written in brackets (``cleanup.policy=[compact,delete]``) as with kafka-configs.sh.
``--under-replicated-partitions`` and ``--unavailable-partitions`` (kafka-topics.sh's
reporting flags) print only the partition lines of partitions whose ISR is smaller than their
replicas, or that have no leader or one that is not a live broker (either, with both); no
topic lines then, as Kafka's tool. ``list`` and ``describe`` take ``--output json``: a list of
names; a list of topics (``topic``, ``internal``, ``partition_count``, ``replication_factor``,
``configs`` not at their default, and ``partitions`` with ``leader``, ``replicas``, ``isr``;
with a partition filter only the topics and partitions it keeps, without ``configs``).

Errors: a usage mistake is one line and exit 2 (``main``); an error the broker returns is one
line with Kafka's error name and the broker's message (``odradek: TOPIC_ALREADY_EXISTS: ...``)
and exit 1, as is a broker that cannot be reached (at once: ``bootstrap_fail_fast``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import click

from odradek.cli._options import (
    bootstrap_server_option,
    broker_errors,
    client_settings,
    output_option,
    print_json,
)
from odradek.client.admin import AdminClient
from odradek.client.admin_types import (
    ConfigEntry,
    ConfigResource,
    NewTopic,
    PartitionDescription,
    TopicDescription,
)
from odradek.errors import ErrorCode, KafkaError

F = TypeVar("F", bound=Callable[..., Any])

CLIENT_ID: Final = "odradek-topics"
REQUEST_TIMEOUT_MS: Final = 30_000


# --- options shared by every verb -------------------------------------------------------------


def _bootstrap_option(command: F) -> F:
    return bootstrap_server_option(command)  # the default every command shares


@contextmanager
def _admin(bootstrap_server: str) -> Iterator[AdminClient]:
    """An admin client that says at once when no broker answers; any odradek error inside
    becomes one line, exit 1."""
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


def _is(error: KafkaError, code: ErrorCode) -> bool:
    return error.error_code == code


def parse_configs(values: Sequence[str], option: str, *, commas: bool) -> dict[str, str]:
    """``K=V`` entries to a mapping (later wins).

    With ``commas`` an entry may hold several ``K=V`` separated by commas; a piece without
    ``=`` continues the previous value, and ``[a,b]`` stands for the value ``a,b``.

    Raises:
        click.BadParameter: an entry without ``=`` or with an empty name.
    """
    pieces: list[str] = []
    for value in values:
        if not commas:
            pieces.append(value)
            continue
        split: list[str] = []
        for piece in value.split(","):
            if "=" not in piece and split:
                split[-1] += "," + piece
            else:
                split.append(piece)
        pieces.extend(split)
    configs: dict[str, str] = {}
    for piece in pieces:
        name, sep, setting = piece.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected K=V, got {piece!r}", param_hint=option)
        setting = setting.strip()
        if commas and setting.startswith("[") and setting.endswith("]"):
            setting = setting[1:-1]
        configs[name.strip()] = setting
    return configs


def _names(values: Sequence[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


# --- the verbs --------------------------------------------------------------------------------


@click.group("topics")
def topics() -> None:
    """Create, list, describe, alter and delete topics on a running broker."""


@topics.command("create")
@_bootstrap_option
@click.option("--topic", required=True, help="The topic to create.")
@click.option(
    "--partitions", type=click.IntRange(min=1), default=None, help="Default: num.partitions."
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1, max=2**15 - 1),
    default=None,
    help="Default: default.replication.factor.",
)
@click.option("--config", "configs", multiple=True, metavar="K=V", help="A topic config.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if the topic exists already.")
def create(
    bootstrap_server: str,
    topic: str,
    partitions: int | None,
    replication_factor: int | None,
    configs: tuple[str, ...],
    if_not_exists: bool,
) -> None:
    """Create a topic."""
    overrides = parse_configs(configs, "'--config'", commas=False)
    new_topic = NewTopic(
        topic,
        num_partitions=-1 if partitions is None else partitions,
        replication_factor=-1 if replication_factor is None else replication_factor,
        configs=overrides,
    )
    with _admin(bootstrap_server) as admin:
        try:
            admin.create_topics([new_topic])[topic]
        except KafkaError as error:
            if if_not_exists and _is(error, ErrorCode.TOPIC_ALREADY_EXISTS):
                return
            raise
    click.echo(f"Created topic {topic}.")


@topics.command("list")
@_bootstrap_option
@output_option
def list_topics(bootstrap_server: str, output: str) -> None:
    """List the topics, one name per line (or a JSON list)."""
    with _admin(bootstrap_server) as admin:
        names = admin.list_topics(include_internal=True)
    if output == "json":
        print_json(list(names))
        return
    for topic in names:
        click.echo(topic)


@topics.command("describe")
@_bootstrap_option
@click.option("--topic", default=None, help="The topic to describe. Default: every topic.")
@click.option("--if-exists", is_flag=True, help="Print nothing if the topic does not exist.")
@click.option(
    "--under-replicated-partitions",
    "under_replicated",
    is_flag=True,
    help="Only partitions whose ISR is smaller than their replicas.",
)
@click.option(
    "--unavailable-partitions",
    "unavailable",
    is_flag=True,
    help="Only partitions without a leader, or whose leader is not a live broker.",
)
@output_option
def describe(
    bootstrap_server: str,
    topic: str | None,
    if_exists: bool,
    under_replicated: bool,
    unavailable: bool,
    output: str,
) -> None:
    """Describe topics: partitions, leaders, replicas, ISR, and configs not at their default."""
    with _admin(bootstrap_server) as admin:
        names = [topic] if topic is not None else admin.list_topics(include_internal=True)
        descriptions = admin.describe_topics(names)
        live: set[int] = set()
        if unavailable:
            live = {broker.node_id for broker in admin.describe_cluster().brokers}
        lines: list[str] = []
        documents: list[dict[str, Any]] = []
        for name in names:
            try:
                description = descriptions[name]
            except KafkaError as error:
                if if_exists and _is(error, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    continue
                raise
            if under_replicated or unavailable:
                chosen = [
                    partition
                    for partition in description.partitions
                    if (under_replicated and is_under_replicated(partition))
                    or (unavailable and is_unavailable(partition, live))
                ]
                lines.extend(_partition_line(name, partition) for partition in chosen)
                if chosen:
                    documents.append(_topic_document(description, chosen, None))
                continue
            configs = admin.describe_configs([ConfigResource.topic(name)])
            overridden = _overridden(configs[ConfigResource.topic(name)])
            lines.extend(_describe_topic(description, overridden))
            documents.append(_topic_document(description, description.partitions, overridden))
    if output == "json":
        print_json(documents)
        return
    for line in lines:
        click.echo(line)


@topics.command("alter")
@_bootstrap_option
@click.option("--topic", required=True, help="The topic to alter.")
@click.option(
    "--add-config", "add_configs", multiple=True, metavar="K=V[,K=V]", help="Set topic configs."
)
@click.option(
    "--delete-config",
    "delete_configs",
    multiple=True,
    metavar="K[,K]",
    help="Remove topic config overrides.",
)
@click.option(
    "--partitions", type=click.IntRange(min=1), default=None, help="The new partition count."
)
def alter(
    bootstrap_server: str,
    topic: str,
    add_configs: tuple[str, ...],
    delete_configs: tuple[str, ...],
    partitions: int | None,
) -> None:
    """Change a topic's configs or grow its partition count."""
    to_set = parse_configs(add_configs, "'--add-config'", commas=True)
    to_delete = _names(delete_configs)
    if not to_set and not to_delete and partitions is None:
        raise click.UsageError(
            "nothing to alter: give --add-config, --delete-config or --partitions"
        )
    with _admin(bootstrap_server) as admin:
        if to_set or to_delete:
            changes: dict[str, str | None] = dict.fromkeys(to_delete)
            changes.update(to_set)
            resource = ConfigResource.topic(topic)
            admin.alter_configs({resource: changes})[resource]
            click.echo(f"Updated the configs of topic {topic}.")
        if partitions is not None:
            admin.create_partitions({topic: partitions})[topic]
            click.echo(f"Topic {topic} now has {partitions} partitions.")


@topics.command("delete")
@_bootstrap_option
@click.option("--topic", required=True, help="The topic to delete.")
@click.option("--if-exists", is_flag=True, help="Succeed if the topic does not exist.")
def delete(bootstrap_server: str, topic: str, if_exists: bool) -> None:
    """Delete a topic and its data."""
    with _admin(bootstrap_server) as admin:
        try:
            admin.delete_topics([topic])[topic]
        except KafkaError as error:
            if if_exists and _is(error, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                return
            raise
    click.echo(f"Deleted topic {topic}.")


# --- helpers for describe ---------------------------------------------------------------------


def _overridden(configs: dict[str, ConfigEntry]) -> list[tuple[str, str]]:
    """The configs whose source is not the default (Kafka's ``!isDefault``), sorted."""
    return sorted(
        (name, entry.value)
        for name, entry in configs.items()
        if not entry.is_default and not entry.is_sensitive and entry.value is not None
    )


def _describe_topic(description: TopicDescription, configs: list[tuple[str, str]]) -> list[str]:
    name = description.name
    partitions = description.partitions
    factor = len(partitions[0].replicas) if partitions else 0
    shown = ",".join(f"{key}={value}" for key, value in configs)
    lines = [
        f"Topic: {name}\tPartitionCount: {len(partitions)}\tReplicationFactor: {factor}\t"
        f"Configs: {shown}"
    ]
    lines.extend(_partition_line(name, partition) for partition in partitions)
    return lines


def _topic_document(
    description: TopicDescription,
    partitions: Sequence[PartitionDescription],
    configs: list[tuple[str, str]] | None,
) -> dict[str, Any]:
    """One topic of ``describe --output json`` (``configs`` None: a partition filter was
    given, and only the matching partitions are listed)."""
    every = description.partitions
    document: dict[str, Any] = {
        "topic": description.name,
        "internal": description.is_internal,
        "partition_count": len(every),
        "replication_factor": len(every[0].replicas) if every else 0,
    }
    if configs is not None:
        document["configs"] = dict(configs)
    document["partitions"] = [
        {
            "partition": p.partition,
            "leader": p.leader,
            "replicas": list(p.replicas),
            "isr": list(p.isr),
        }
        for p in partitions
    ]
    return document


def _partition_line(topic: str, partition: PartitionDescription) -> str:
    leader = "none" if partition.leader is None else partition.leader
    return (
        f"\tTopic: {topic}\tPartition: {partition.partition}\tLeader: {leader}\t"
        f"Replicas: {_ids(partition.replicas)}\tIsr: {_ids(partition.isr)}"
    )


def is_under_replicated(partition: PartitionDescription) -> bool:
    """Whether fewer replicas are in sync than assigned (kafka-topics.sh's rule)."""
    return len(partition.isr) < len(partition.replicas)


def is_unavailable(partition: PartitionDescription, live_brokers: set[int]) -> bool:
    """Whether the partition has no leader (-1), or one that is not a live broker."""
    leader = partition.leader
    return leader is None or leader < 0 or leader not in live_brokers


def _ids(nodes: Sequence[int]) -> str:
    return ",".join(str(node) for node in nodes)

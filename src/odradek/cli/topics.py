"""``odradek topics create|list|describe|alter|delete``: manage topics on a running broker.

Like Kafka's ``kafka-topics.sh`` (and ``kafka-configs.sh --alter`` for topic configs), over the
Kafka protocol to ``--bootstrap-server HOST:PORT``::

    odradek topics create   --topic T [--partitions N] [--replication-factor R] [--config K=V ...]
    odradek topics list
    odradek topics describe [--topic T]
    odradek topics alter    --topic T [--add-config K=V ...] [--delete-config K ...]
                            [--partitions N]
    odradek topics delete   --topic T

``describe`` prints Kafka's layout: one line per topic (partition count, replication factor,
the configs not at their default), then one line per partition (leader, replicas, ISR).
``--add-config`` takes ``K=V`` entries, repeated or comma-separated; a value that holds commas
is written in brackets (``cleanup.policy=[compact,delete]``) as with kafka-configs.sh.

Errors: a usage mistake is one line and exit 2 (``main``); an error the broker returns is one
line with Kafka's error name and the broker's message (``odradek: TOPIC_ALREADY_EXISTS: ...``)
and exit 1, as is a broker that cannot be reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import click

from odradek._version import __version__
from odradek.client._wire import BlockingConnection, parse_bootstrap_servers
from odradek.errors import ErrorCode, KafkaError, OdradekError
from odradek.protocol.api_keys import ApiKey, VersionRange

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_BOOTSTRAP_SERVER: Final = "127.0.0.1:9092"
CLIENT_ID: Final = "odradek-topics"
REQUEST_TIMEOUT_MS: Final = 30_000

#: The versions of each API this command can send (field names as ``client_codec`` takes).
USABLE_VERSIONS: Final = {
    ApiKey.METADATA: VersionRange(4, 4),  # v4: allow_auto_topic_creation, so describe creates none
    ApiKey.CREATE_TOPICS: VersionRange(2, 3),
    ApiKey.DELETE_TOPICS: VersionRange(1, 1),
    ApiKey.CREATE_PARTITIONS: VersionRange(0, 3),
    ApiKey.DESCRIBE_CONFIGS: VersionRange(1, 4),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: VersionRange(0, 1),
}

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
DEFAULT_CONFIG_SOURCE = 5  # DescribeConfigs config_source DEFAULT_CONFIG
CONFIG_SET, CONFIG_DELETE = 0, 1  # IncrementalAlterConfigs config_operation


# --- options shared by every verb -------------------------------------------------------------


def _check_bootstrap(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_bootstrap_servers(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    return value


def _bootstrap_option(command: F) -> F:
    return click.option(
        "--bootstrap-server",
        "bootstrap_server",
        default=DEFAULT_BOOTSTRAP_SERVER,
        show_default=True,
        metavar="HOST:PORT",
        callback=_check_bootstrap,
        help="The broker to talk to (a comma-separated list: the first that answers).",
    )(command)


@contextmanager
def _connection(bootstrap_server: str) -> Iterator[BlockingConnection]:
    """A connection to the broker; any odradek error inside becomes one line, exit 1."""
    try:
        with BlockingConnection(
            bootstrap_server, client_id=CLIENT_ID, software_version=__version__
        ) as connection:
            yield connection
    except KafkaError as error:
        message = str(error)
        name = error.error_code.name
        line = name if message in ("", name) else f"{name}: {message}"
        raise click.ClickException(line) from None
    except OdradekError as error:
        raise click.ClickException(str(error)) from None


def _call(connection: BlockingConnection, api_key: ApiKey, fields: Mapping[str, Any]) -> Any:
    version = connection.pick_version(api_key, USABLE_VERSIONS[api_key])
    return connection.request(api_key, version, fields)


def _check(result: Mapping[str, Any], subject: str) -> None:
    """Raises the KafkaError that a per-topic result carries, if any."""
    code = int(result.get("error_code") or 0)
    if code == ErrorCode.NONE:
        return
    message = result.get("error_message") or subject
    known = code in ErrorCode._value2member_map_
    raise KafkaError(
        message if known else f"{message} (error code {code})",
        code=ErrorCode(code) if known else ErrorCode.UNKNOWN_SERVER_ERROR,
    )


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
    fields = {
        "topics": [
            {
                "name": topic,
                "num_partitions": -1 if partitions is None else partitions,
                "replication_factor": -1 if replication_factor is None else replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in overrides.items()],
            }
        ],
        "timeout": REQUEST_TIMEOUT_MS,
        "validate_only": False,
    }
    with _connection(bootstrap_server) as connection:
        response = _call(connection, ApiKey.CREATE_TOPICS, fields)
        try:
            for result in response["topics"]:
                _check(result, f"cannot create topic {topic!r}")
        except KafkaError as error:
            if if_not_exists and _is(error, ErrorCode.TOPIC_ALREADY_EXISTS):
                return
            raise
    click.echo(f"Created topic {topic}.")


@topics.command("list")
@_bootstrap_option
def list_topics(bootstrap_server: str) -> None:
    """List the topics, one name per line."""
    with _connection(bootstrap_server) as connection:
        metadata = _metadata(connection, None)
    for topic in sorted(str(t["name"]) for t in metadata["topics"]):
        click.echo(topic)


@topics.command("describe")
@_bootstrap_option
@click.option("--topic", default=None, help="The topic to describe. Default: every topic.")
@click.option("--if-exists", is_flag=True, help="Print nothing if the topic does not exist.")
def describe(bootstrap_server: str, topic: str | None, if_exists: bool) -> None:
    """Describe topics: partitions, leaders, replicas, ISR, and configs not at their default."""
    with _connection(bootstrap_server) as connection:
        metadata = _metadata(connection, None if topic is None else [topic])
        lines: list[str] = []
        for entry in sorted(metadata["topics"], key=lambda t: str(t["name"])):
            name = str(entry["name"])
            try:
                _check(entry, f"topic {name!r} does not exist")
            except KafkaError as error:
                if if_exists and _is(error, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    continue
                raise
            lines.extend(_describe_topic(name, entry, _overridden_configs(connection, name)))
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
    with _connection(bootstrap_server) as connection:
        if to_set or to_delete:
            operations = [
                {"name": k, "config_operation": CONFIG_SET, "value": v} for k, v in to_set.items()
            ]
            operations += [
                {"name": k, "config_operation": CONFIG_DELETE, "value": None} for k in to_delete
            ]
            fields = {
                "resources": [
                    {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configs": operations}
                ],
                "validate_only": False,
            }
            response = _call(connection, ApiKey.INCREMENTAL_ALTER_CONFIGS, fields)
            for result in response["responses"]:
                _check(result, f"cannot alter the configs of topic {topic!r}")
            click.echo(f"Updated the configs of topic {topic}.")
        if partitions is not None:
            fields = {
                "topics": [{"name": topic, "count": partitions, "assignments": None}],
                "timeout": REQUEST_TIMEOUT_MS,
                "validate_only": False,
            }
            response = _call(connection, ApiKey.CREATE_PARTITIONS, fields)
            for result in response["results"]:
                _check(result, f"cannot add partitions to topic {topic!r}")
            click.echo(f"Topic {topic} now has {partitions} partitions.")


@topics.command("delete")
@_bootstrap_option
@click.option("--topic", required=True, help="The topic to delete.")
@click.option("--if-exists", is_flag=True, help="Succeed if the topic does not exist.")
def delete(bootstrap_server: str, topic: str, if_exists: bool) -> None:
    """Delete a topic and its data."""
    fields = {"topic_names": [topic], "timeout": REQUEST_TIMEOUT_MS}
    with _connection(bootstrap_server) as connection:
        response = _call(connection, ApiKey.DELETE_TOPICS, fields)
        try:
            for result in response["responses"]:
                _check(result, f"cannot delete topic {topic!r}")
        except KafkaError as error:
            if if_exists and _is(error, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                return
            raise
    click.echo(f"Deleted topic {topic}.")


# --- helpers for describe ---------------------------------------------------------------------


def _metadata(connection: BlockingConnection, names: list[str] | None) -> Any:
    topics_field = None if names is None else [{"name": name} for name in names]
    return _call(
        connection,
        ApiKey.METADATA,
        {"topics": topics_field, "allow_auto_topic_creation": False},
    )


def _overridden_configs(connection: BlockingConnection, topic: str) -> list[tuple[str, str]]:
    """The topic's configs whose source is not the default (Kafka's ``!isDefault``)."""
    fields = {
        "resources": [
            {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": None}
        ],
        "include_synonyms": False,
        "include_documentation": False,
    }
    response = _call(connection, ApiKey.DESCRIBE_CONFIGS, fields)
    configs = []
    for result in response["results"]:
        _check(result, f"cannot describe the configs of topic {topic!r}")
        for entry in result["configs"]:
            source = entry.get("config_source", -1)
            default = source == DEFAULT_CONFIG_SOURCE if source >= 0 else entry.get("is_default")
            if not default and not entry.get("is_sensitive") and entry["value"] is not None:
                configs.append((str(entry["name"]), str(entry["value"])))
    return sorted(configs)


def _describe_topic(
    name: str, entry: Mapping[str, Any], configs: list[tuple[str, str]]
) -> list[str]:
    partitions = sorted(entry["partitions"], key=lambda p: int(p["partition_index"]))
    factor = len(partitions[0]["replica_nodes"]) if partitions else 0
    shown = ",".join(f"{key}={value}" for key, value in configs)
    lines = [
        f"Topic: {name}\tPartitionCount: {len(partitions)}\tReplicationFactor: {factor}\t"
        f"Configs: {shown}"
    ]
    for partition in partitions:
        leader = int(partition["leader_id"])
        lines.append(
            f"\tTopic: {name}\tPartition: {partition['partition_index']}\t"
            f"Leader: {leader if leader >= 0 else 'none'}\t"
            f"Replicas: {_ids(partition['replica_nodes'])}\tIsr: {_ids(partition['isr_nodes'])}"
        )
    return lines


def _ids(nodes: Sequence[int]) -> str:
    return ",".join(str(node) for node in nodes)

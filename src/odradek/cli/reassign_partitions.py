"""``odradek reassign-partitions``: move partitions between brokers, as
``kafka-reassign-partitions.sh`` does (KIP-455 reassignments through the admin API)::

    odradek reassign-partitions --bootstrap-server HOST:PORT --generate
        --topics-to-move-json-file F --broker-list 1,2,3 [--disable-rack-aware]
    odradek reassign-partitions --bootstrap-server HOST:PORT --execute
        --reassignment-json-file F [--additional]
    odradek reassign-partitions --bootstrap-server HOST:PORT --cancel --reassignment-json-file F
    odradek reassign-partitions --bootstrap-server HOST:PORT --verify --reassignment-json-file F

Files are Kafka's: topics to move ``{"version":1,"topics":[{"topic":"t"}, ...]}``; a
reassignment ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}, ...]}``
(what ``--generate`` proposes and ``--execute`` prints for rollback).

- ``--generate`` prints the topics' current assignment and a proposed one over the brokers
  listed (``controller.assignment.assign_replicas``: the topic's partition count and
  replication factor, rack-aware when the brokers have ``broker.rack``); it changes nothing.
- ``--execute`` prints the current assignment (save it to roll back), then starts the
  reassignments (``AdminClient.alter_partition_reassignments``). It refuses while other
  reassignments run unless ``--additional``.
- ``--cancel`` cancels the file's reassignments that are still in progress.
- ``--verify`` prints, per partition, whether its reassignment is completed or still in
  progress (``AdminClient.list_partition_reassignments`` and the partition's replicas).

A mistake (no mode or two, a missing or malformed file, an unknown topic or broker) is one line
and exit 2; a broker that cannot be reached, or a reassignment the controller refuses, one line
(per partition) and exit 1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import click

from odradek._types import TopicPartition
from odradek.cli._options import bootstrap_server_option, broker_errors, client_settings
from odradek.client.admin import AdminClient
from odradek.controller.assignment import assign_replicas
from odradek.controller.reassignment import encode_reassignment_json, parse_reassignment_json
from odradek.errors import KafkaError

CLIENT_ID: Final = "odradek-reassign-partitions"
REQUEST_TIMEOUT_MS: Final = 30_000
_MODES: Final = ("--generate", "--execute", "--cancel", "--verify")


@click.command("reassign-partitions")
@bootstrap_server_option
@click.option("--generate", is_flag=True, help="Propose an assignment of topics to brokers.")
@click.option("--execute", is_flag=True, help="Start the reassignments of a JSON file.")
@click.option("--cancel", is_flag=True, help="Cancel the reassignments of a JSON file.")
@click.option("--verify", is_flag=True, help="Tell whether a JSON file's reassignments are done.")
@click.option(
    "--topics-to-move-json-file",
    "topics_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='With --generate: {"version":1,"topics":[{"topic":"t"}, ...]}.',
)
@click.option(
    "--broker-list",
    default=None,
    metavar="ID,ID,...",
    help="With --generate: the brokers to spread the replicas over.",
)
@click.option(
    "--reassignment-json-file",
    "reassignment_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}, ...]}.',
)
@click.option(
    "--disable-rack-aware", is_flag=True, help="With --generate: ignore the brokers' racks."
)
@click.option(
    "--additional",
    is_flag=True,
    help="With --execute: start even while other reassignments are in progress.",
)
def reassign_partitions(
    bootstrap_server: str,
    generate: bool,
    execute: bool,
    cancel: bool,
    verify: bool,
    topics_file: Path | None,
    broker_list: str | None,
    reassignment_file: Path | None,
    disable_rack_aware: bool,
    additional: bool,
) -> None:
    """Move partitions between brokers: generate a plan, execute, cancel or verify it."""
    chosen = [
        name for name, on in zip(_MODES, (generate, execute, cancel, verify), strict=True) if on
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "give exactly one of "
            + ", ".join(_MODES)
            + (f" (got {', '.join(chosen)})" if chosen else "")
        )
    if generate:
        if topics_file is None or broker_list is None:
            raise click.UsageError("--generate needs --topics-to-move-json-file and --broker-list")
        topics = read_topics_file(topics_file)
        brokers = parse_broker_list(broker_list)
        with _admin(bootstrap_server) as client:
            current, proposed = _generate(
                client, topics, brokers, rack_aware=not disable_rack_aware
            )
        for line in generate_lines(current, proposed):
            click.echo(line)
        return
    if reassignment_file is None:
        raise click.UsageError(f"{chosen[0]} needs --reassignment-json-file")
    targets = read_reassignment_file(reassignment_file)
    with _admin(bootstrap_server) as client:
        if execute:
            _execute(client, targets, additional=additional)
        elif cancel:
            _cancel(client, targets)
        else:
            _verify(client, targets)


# --- the modes -------------------------------------------------------------------------------


def _admin(bootstrap_server: str) -> AdminClient:
    with broker_errors():
        return AdminClient(
            client_settings(
                bootstrap_server,
                CLIENT_ID,
                {
                    "default.api.timeout.ms": REQUEST_TIMEOUT_MS,
                },
            ),
            bootstrap_fail_fast=True,
        )


def _generate(
    client: AdminClient, topics: Sequence[str], brokers: Sequence[int], *, rack_aware: bool
) -> tuple[dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, tuple[int, ...]]]:
    with broker_errors():
        cluster = client.describe_cluster()
        described = client.describe_topics(topics)
    known = {broker.node_id: broker.rack for broker in cluster.brokers}
    unknown = sorted(set(brokers) - set(known))
    if unknown:
        raise click.BadParameter(
            f"broker(s) {unknown} are not in the cluster (brokers: {sorted(known)})",
            param_hint="'--broker-list'",
        )
    missing = sorted(name for name in topics if name in described.errors)
    if missing:
        raise click.BadParameter(
            f"topic(s) {missing} do not exist", param_hint="'--topics-to-move-json-file'"
        )
    current: dict[TopicPartition, tuple[int, ...]] = {}
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    racks = {broker: known[broker] for broker in brokers} if rack_aware else None
    for name in topics:
        partitions = described[name].partitions
        for partition in partitions:
            current[TopicPartition(name, partition.partition)] = partition.replicas
        factor = max(len(p.replicas) for p in partitions)
        try:
            plan = assign_replicas(len(partitions), factor, brokers, racks=racks)
        except KafkaError as error:
            raise click.UsageError(f"cannot assign topic {name!r}: {error}") from None
        for index, replicas in plan.items():
            proposed[TopicPartition(name, index)] = tuple(replicas)
    return current, proposed


def generate_lines(
    current: Mapping[TopicPartition, Sequence[int]],
    proposed: Mapping[TopicPartition, Sequence[int]],
) -> list[str]:
    """What ``--generate`` prints (Kafka's two headings, each followed by its JSON)."""
    return [
        "Current partition replica assignment",
        encode_reassignment_json(current),
        "",
        "Proposed partition reassignment configuration",
        encode_reassignment_json(proposed),
    ]


def _execute(
    client: AdminClient, targets: Mapping[TopicPartition, Sequence[int]], *, additional: bool
) -> None:
    with broker_errors():
        ongoing = client.list_partition_reassignments()
        current = _current_replicas(client, targets)
    if ongoing and not additional:
        raise click.UsageError(
            "cannot execute because reassignments are in progress ("
            + ", ".join(str(tp) for tp in ongoing)
            + "); use --additional to start these in addition"
        )
    click.echo("Current partition replica assignment")
    click.echo("")
    click.echo(encode_reassignment_json(current))
    click.echo("")
    click.echo("Save this to use as the --reassignment-json-file option during rollback")
    with broker_errors():
        results = client.alter_partition_reassignments(dict(targets))
    _report(results.errors)
    started = sorted(tp for tp in results if tp not in results.errors)
    plural = "" if len(started) == 1 else "s"
    click.echo(
        f"Successfully started partition reassignment{plural} for "
        + ",".join(str(tp) for tp in started)
    )


def _cancel(client: AdminClient, targets: Mapping[TopicPartition, Sequence[int]]) -> None:
    with broker_errors():
        active = client.list_partition_reassignments(sorted(targets))
    if not active:
        click.echo("None of the specified partition reassignments are active.")
        return
    with broker_errors():
        results = client.alter_partition_reassignments(dict.fromkeys(active))
    _report(results.errors)
    plural = "" if len(active) == 1 else "s"
    click.echo(
        f"Successfully cancelled partition reassignment{plural} for: "
        + ",".join(str(tp) for tp in active)
    )


def _verify(client: AdminClient, targets: Mapping[TopicPartition, Sequence[int]]) -> None:
    with broker_errors():
        ongoing = client.list_partition_reassignments(sorted(targets))
        current = _current_replicas(client, targets)
    click.echo("Status of partition reassignment:")
    for line in verify_lines(targets, ongoing, current):
        click.echo(line)


def verify_lines(
    targets: Mapping[TopicPartition, Sequence[int]],
    ongoing: Mapping[TopicPartition, object],
    current: Mapping[TopicPartition, Sequence[int]],
) -> list[str]:
    """One line per partition of the file: completed, still in progress, or done with other
    replicas than the file's."""
    lines = []
    for tp in sorted(targets):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {tp} is still in progress.")
        elif tuple(current.get(tp, ())) == tuple(targets[tp]):
            lines.append(f"Reassignment of partition {tp} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp}, but replica set is "
                f"{_list(current.get(tp, ()))} rather than {_list(targets[tp])}."
            )
    return lines


def _current_replicas(
    client: AdminClient, partitions: Mapping[TopicPartition, object]
) -> dict[TopicPartition, tuple[int, ...]]:
    topics = sorted({tp.topic for tp in partitions})
    described = client.describe_topics(topics)
    missing = sorted(name for name in topics if name in described.errors)
    if missing:
        raise click.BadParameter(
            f"topic(s) {missing} do not exist", param_hint="'--reassignment-json-file'"
        )
    replicas = {
        TopicPartition(name, p.partition): p.replicas
        for name in topics
        for p in described[name].partitions
    }
    unknown = sorted(tp for tp in partitions if tp not in replicas)
    if unknown:
        raise click.BadParameter(
            f"partition(s) {', '.join(map(str, unknown))} do not exist",
            param_hint="'--reassignment-json-file'",
        )
    return {tp: replicas[tp] for tp in sorted(partitions)}


def _report(errors: Mapping[TopicPartition, KafkaError]) -> None:
    if not errors:
        return
    for tp, error in sorted(errors.items()):
        detail = str(error).removeprefix(f"{tp}: ")
        click.echo(f"Error reassigning partition {tp}: {error.error_code.name}: {detail}", err=True)
    raise click.ClickException(f"{len(errors)} partition reassignment(s) failed")


def _list(replicas: Sequence[int]) -> str:
    return "[" + ",".join(str(r) for r in replicas) + "]"


# --- files and options -----------------------------------------------------------------------


def parse_broker_list(text: str) -> list[int]:
    """``1,2,3`` as broker ids.

    Raises:
        click.BadParameter: empty, not integers, negative, or an id twice.
    """
    hint = "'--broker-list'"
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise click.BadParameter(
            f"expected comma-separated broker ids (ints >= 0), got {text!r}", param_hint=hint
        )
    brokers = [int(part) for part in parts]
    if len(set(brokers)) != len(brokers):
        raise click.BadParameter(f"a broker is listed twice in {text!r}", param_hint=hint)
    return brokers


def read_topics_file(path: Path) -> list[str]:
    """The topics a ``--topics-to-move-json-file`` lists, in order.

    Raises:
        click.BadParameter: unreadable, not JSON of Kafka's layout, or no topics.
    """
    hint = "'--topics-to-move-json-file'"
    document = _read_json(path, hint)
    entries = document.get("topics") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise click.BadParameter(
            f'{path}: expected {{"version": 1, "topics": [{{"topic": ...}}, ...]}}',
            param_hint=hint,
        )
    topics: list[str] = []
    for index, entry in enumerate(entries):
        name = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise click.BadParameter(
                f"{path}: topics[{index}] needs a topic (a non-empty string)", param_hint=hint
            )
        if name not in topics:
            topics.append(name)
    if not topics:
        raise click.BadParameter(f"{path}: no topics listed", param_hint=hint)
    return topics


def read_reassignment_file(path: Path) -> dict[TopicPartition, tuple[int, ...]]:
    """The partitions and target replicas a ``--reassignment-json-file`` lists.

    Raises:
        click.BadParameter: unreadable, malformed (``parse_reassignment_json``'s rules), or a
            partition without replicas.
    """
    hint = "'--reassignment-json-file'"
    try:
        text = path.read_bytes()
    except OSError as error:
        raise click.BadParameter(f"cannot read {path}: {error.strerror}", param_hint=hint) from None
    try:
        parsed = parse_reassignment_json(text)
    except KafkaError as error:
        raise click.BadParameter(f"{path}: {error}", param_hint=hint) from None
    targets: dict[TopicPartition, tuple[int, ...]] = {}
    for tp, replicas in parsed.items():
        if not replicas:
            raise click.BadParameter(f"{path}: {tp} has no replicas", param_hint=hint)
        targets[tp] = replicas
    return targets


def _read_json(path: Path, hint: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise click.BadParameter(f"cannot read {path}: {error.strerror}", param_hint=hint) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise click.BadParameter(f"{path} is not JSON: {error}", param_hint=hint) from None

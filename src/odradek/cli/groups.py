"""``odradek groups list|describe|delete|reset-offsets``: consumer groups on a running broker.

Like Kafka's ``kafka-consumer-groups.sh``, over ``AdminClient`` to ``--bootstrap-server``::

    odradek groups list           [--state] [--output json]
    odradek groups describe       (--group G [--group G2 ...] | --all-groups)
                                  [--members [--verbose] | --state | --rebalances]
                                  [--output json]
    odradek groups delete         (--group G [--group G2 ...] | --all-groups)
    odradek groups delete-offsets --group G --topic T[:P,P...] ...
    odradek groups reset-offsets  --group G (--topic T[:P,P...] ... | --all-topics
                                  | --from-file CSV)
                                  (--to-earliest | --to-latest | --to-current
                                   | --to-datetime DT | --by-duration PnDTnHnMnS
                                   | --to-offset N | --shift-by N) [--dry-run | --execute]
                                  [--export]

``describe`` prints Kafka's table, one row per partition that is assigned or has a committed
offset: GROUP, TOPIC, PARTITION, CURRENT-OFFSET (the committed one), LOG-END-OFFSET (ListOffsets
latest), LAG (their difference), CONSUMER-ID, HOST, CLIENT-ID; ``-`` where a value is unknown.
Columns are left-aligned, as wide as their widest cell, one space apart. Notes (a group with
no active members, one that is rebalancing) go to stderr, as Kafka's tool prints them.

``describe --rebalances`` prints the group's last rebalances with their causes, read from
its coordinator's HTTP endpoint (``broker.metrics``: the coordinator needs ``metrics.port``).
``--output json`` prints one JSON document instead of a table, notes included as fields.

``reset-offsets`` computes the new offsets and prints the plan (GROUP, TOPIC, PARTITION,
NEW-OFFSET); nothing changes unless ``--execute`` is given (a dry run is the default, as in
Kafka's tool). ``--to-offset`` and ``--shift-by`` are clamped to each partition's
[earliest, latest] offsets; ``--to-datetime YYYY-MM-DDTHH:mm:SS.sss`` (an optional ``Z`` or
``±HH:MM``; local time without one) takes the first offset at or after that time, or the log
end offset when there is none; ``--by-duration`` is the same for now minus an ISO-8601 duration;
``--to-current`` keeps the committed offsets (with ``--export``, a backup of them).
``--from-file`` reads Kafka's CSV (``topic,partition,offset`` lines) as the plan itself, and
``--export`` prints the plan in that CSV instead of a table. The group must be inactive
(Empty, or unknown): otherwise the command refuses with one line, as Kafka does.

Errors: a usage mistake is one line and exit 2 (``cli.main``); a broker error or a refusal is
one line and exit 1 (``broker_errors``).
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, TextIO, TypeVar

import click

from odradek._types import TopicPartition
from odradek.cli import _broker_http
from odradek.cli._options import (
    bootstrap_server_option,
    broker_errors,
    client_settings,
    output_option,
    print_json,
)
from odradek.client.admin import AdminClient
from odradek.client.admin_groups import ConsumerGroupDescription, MemberDescription
from odradek.client.admin_types import ListOffsetsResultInfo, OffsetSpec

F = TypeVar("F", bound=Callable[..., Any])

CLIENT_ID: Final = "odradek-groups"
DEFAULT_TIMEOUT_MS: Final = 5_000
NONE: Final = "-"
#: The states in which a group's offsets may be reset ("Dead": the group does not exist).
INACTIVE_STATES: Final = frozenset({"Empty", "Dead"})
_DATETIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:?\d{2})?"
)


@click.group()
def groups() -> None:
    """List, describe, delete consumer groups and reset their offsets."""


def _timeout_option(command: F) -> F:
    return click.option(
        "--timeout",
        "timeout_ms",
        type=click.IntRange(min=1),
        default=DEFAULT_TIMEOUT_MS,
        show_default=True,
        metavar="MS",
        help="How long each call may take.",
    )(command)


@contextmanager
def _admin(bootstrap_server: str, timeout_ms: int) -> Iterator[AdminClient]:
    """An admin client; any odradek error inside becomes one line and exit 1."""
    with broker_errors():
        client = AdminClient(
            client_settings(
                bootstrap_server,
                CLIENT_ID,
                {
                    "default.api.timeout.ms": timeout_ms,
                    "request.timeout.ms": timeout_ms,
                },
            )
        )
        try:
            yield client
        finally:
            client.close()


# --- list -------------------------------------------------------------------------------------


@groups.command("list")
@bootstrap_server_option
@_timeout_option
@click.option("--state", "with_state", is_flag=True, help="Show each group's state.")
@output_option
def list_groups(bootstrap_server: str, timeout_ms: int, with_state: bool, output: str) -> None:
    """List the consumer groups."""
    with _admin(bootstrap_server, timeout_ms) as admin:
        listed = [g for g in admin.list_groups() if g.is_consumer_group]
        if output == "json" and not with_state:
            print_json([{"group": g.group_id} for g in listed])
            return
        if not with_state:
            for group in listed:
                click.echo(group.group_id)
            return
        states = {g.group_id: g.state for g in listed if g.state is not None}
        unknown = [g.group_id for g in listed if g.state is None]
        if unknown:
            described = admin.describe_groups(unknown)
            states.update((gid, d.state) for gid, d in described.values_by_item.items())
    if output == "json":
        print_json([{"group": g.group_id, "state": states.get(g.group_id)} for g in listed])
        return
    _print_table(["GROUP", "STATE"], [[g.group_id, states.get(g.group_id, NONE)] for g in listed])


# --- describe ---------------------------------------------------------------------------------


@groups.command("describe")
@bootstrap_server_option
@_timeout_option
@click.option("--group", "group_ids", multiple=True, help="The group (repeatable).")
@click.option("--all-groups", is_flag=True, help="Every consumer group.")
@click.option("--members", is_flag=True, help="Show the members instead of the offsets.")
@click.option("--state", "with_state", is_flag=True, help="Show the group's state instead.")
@click.option("--rebalances", is_flag=True, help="Show the last rebalances and their causes.")
@click.option("--verbose", is_flag=True, help="With --members: each member's partitions.")
@output_option
def describe(
    bootstrap_server: str,
    timeout_ms: int,
    group_ids: tuple[str, ...],
    all_groups: bool,
    members: bool,
    with_state: bool,
    rebalances: bool,
    verbose: bool,
    output: str,
) -> None:
    """Describe consumer groups: offsets and lag (default), members, state or rebalances."""
    if sum([members, with_state, rebalances]) > 1:
        raise click.UsageError("--members, --state and --rebalances are mutually exclusive")
    if verbose and not members:
        raise click.UsageError("--verbose goes with --members")
    if bool(group_ids) == all_groups:
        raise click.UsageError("give --group (repeatable) or --all-groups")
    documents: list[dict[str, Any]] = []
    with _admin(bootstrap_server, timeout_ms) as admin:
        if all_groups:
            group_ids = tuple(g.group_id for g in admin.list_groups() if g.is_consumer_group)
        described = admin.describe_groups(group_ids) if group_ids else {}
        for group_id in dict.fromkeys(group_ids):
            description = described[group_id]
            if with_state:
                documents.append(_state_document(description))
                continue
            if description.state == "Dead":
                raise click.ClickException(f"Consumer group '{group_id}' does not exist.")
            if output == "table" and not rebalances:
                _warn_state(description)
            if rebalances:
                records = _broker_http.rebalances(admin, group_id, timeout_ms / 1000)
                documents.append({"group": group_id, "rebalances": records})
            elif members:
                documents.append(_members_document(description))
            else:
                documents.append(_offsets_document(admin, description))
    if output == "json":
        print_json(documents)
        return
    for document in documents:
        if with_state:
            _print_state(document)
        elif rebalances:
            _print_rebalances(document)
        elif members:
            _print_members(document, verbose)
        else:
            _print_offsets(document)


def _warn_state(description: ConsumerGroupDescription) -> None:
    if description.state == "Empty":
        click.echo(f"Consumer group '{description.group_id}' has no active members.", err=True)
    elif description.state in ("PreparingRebalance", "CompletingRebalance"):
        click.echo(f"Warning: Consumer group '{description.group_id}' is rebalancing.", err=True)


def _state_document(description: ConsumerGroupDescription) -> dict[str, Any]:
    coordinator = description.coordinator
    return {
        "group": description.group_id,
        "coordinator": None
        if coordinator is None
        else {"id": coordinator.node_id, "host": coordinator.host, "port": coordinator.port},
        "assignment_strategy": description.protocol or None,
        "state": description.state,
        "members": len(description.members),
    }


def _print_state(document: Mapping[str, Any]) -> None:
    coordinator = document["coordinator"]
    where = (
        NONE
        if coordinator is None
        else f"{coordinator['host']}:{coordinator['port']} ({coordinator['id']})"
    )
    _print_table(
        ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
        [
            [
                document["group"],
                where,
                document["assignment_strategy"] or NONE,
                document["state"],
                str(document["members"]),
            ]
        ],
    )


def _members_document(description: ConsumerGroupDescription) -> dict[str, Any]:
    return {
        "group": description.group_id,
        "state": description.state,
        "members": [
            {
                "consumer_id": member.member_id,
                "host": member.host or None,
                "client_id": member.client_id or None,
                "assignment": [
                    {"topic": tp.topic, "partition": tp.partition} for tp in member.assignment
                ],
            }
            for member in description.members
        ],
    }


def _print_members(document: Mapping[str, Any], verbose: bool) -> None:
    headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        headers.append("ASSIGNMENT")
    rows: list[list[str]] = []
    for member in document["members"]:
        assignment = [TopicPartition(a["topic"], a["partition"]) for a in member["assignment"]]
        row = [
            document["group"],
            member["consumer_id"],
            member["host"] or NONE,
            member["client_id"] or NONE,
            str(len(assignment)),
        ]
        if verbose:
            row.append(_assignment_text(assignment))
        rows.append(row)
    _print_table(headers, rows)


def _print_rebalances(document: Mapping[str, Any]) -> None:
    rows = []
    for record in document["rebalances"]:
        completed, started = record.get("completed_ms"), record["started_ms"]
        heartbeat = record.get("last_heartbeat_ms")
        rows.append(
            [
                document["group"],
                _iso(started),
                record["cause"],
                record.get("member_id") or NONE,
                NONE if heartbeat is None else _iso(heartbeat),
                f"{record['from_generation']}->{_text(record.get('generation_id'))}",
                _text(record.get("members")),
                NONE if completed is None else str(completed - started),
            ]
        )
    headers = ["GROUP", "STARTED", "CAUSE", "MEMBER", "LAST-HEARTBEAT", "GENERATION"]
    _print_table([*headers, "#MEMBERS", "TOOK-MS"], rows)


def _iso(timestamp_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _assignment_text(assignment: Sequence[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in assignment:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return NONE
    return ",".join(
        f"{topic}({','.join(str(p) for p in sorted(parts))})"
        for topic, parts in sorted(by_topic.items())
    )


def _offsets_document(admin: AdminClient, description: ConsumerGroupDescription) -> dict[str, Any]:
    group_id = description.group_id
    owners: dict[TopicPartition, MemberDescription] = {
        tp: member for member in description.members for tp in member.assignment
    }
    committed = {
        tp: offset.offset
        for tp, offset in admin.list_group_offsets(group_id).values_by_item.items()
        if offset is not None
    }
    partitions = sorted(committed.keys() | owners.keys(), key=lambda tp: (tp.topic, tp.partition))
    ends = _offsets(admin, partitions, OffsetSpec.latest()) if partitions else {}
    rows: list[dict[str, Any]] = []
    for tp in partitions:
        current = committed.get(tp)
        end = ends.get(tp)
        owner = owners.get(tp)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "current_offset": current,
                "log_end_offset": end,
                "lag": end - current if end is not None and current is not None else None,
                "consumer_id": owner.member_id if owner else None,
                "host": (owner.host or None) if owner else None,
                "client_id": (owner.client_id or None) if owner else None,
            }
        )
    for member in description.members:
        if not member.assignment:
            rows.append(
                {
                    "topic": None,
                    "partition": None,
                    "current_offset": None,
                    "log_end_offset": None,
                    "lag": None,
                    "consumer_id": member.member_id,
                    "host": member.host or None,
                    "client_id": member.client_id or None,
                }
            )
    return {"group": group_id, "state": description.state, "partitions": rows}


def _print_offsets(document: Mapping[str, Any]) -> None:
    keys = ["topic", "partition", "current_offset", "log_end_offset", "lag"]
    rows = [
        [
            document["group"],
            *(_text(row[key]) for key in keys),
            *(row[key] or NONE for key in ("consumer_id", "host", "client_id")),
        ]
        for row in document["partitions"]
    ]
    headers = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    _print_table([*headers, "CONSUMER-ID", "HOST", "CLIENT-ID"], rows)


def _offsets(
    admin: AdminClient, partitions: Sequence[TopicPartition], spec: OffsetSpec | int
) -> dict[TopicPartition, int]:
    """Offsets by spec of the partitions that answered (others are left out)."""
    result = admin.list_offsets(dict.fromkeys(partitions, spec))
    return {tp: info.offset for tp, info in result.values_by_item.items()}


def _text(value: object) -> str:
    return NONE if value is None else str(value)


# --- delete -----------------------------------------------------------------------------------


@groups.command("delete")
@bootstrap_server_option
@_timeout_option
@click.option("--group", "group_ids", multiple=True, help="The group (repeatable).")
@click.option("--all-groups", is_flag=True, help="Every consumer group.")
def delete(
    bootstrap_server: str, timeout_ms: int, group_ids: tuple[str, ...], all_groups: bool
) -> None:
    """Delete consumer groups (only groups without active members)."""
    if bool(group_ids) == all_groups:
        raise click.UsageError("give --group (repeatable) or --all-groups")
    with _admin(bootstrap_server, timeout_ms) as admin:
        if all_groups:
            group_ids = tuple(g.group_id for g in admin.list_groups() if g.is_consumer_group)
            if not group_ids:
                click.echo("There are no consumer groups to delete.")
                return
        result = admin.delete_groups(group_ids)
    failures = result.errors
    if failures:
        raise click.ClickException(
            "; ".join(
                f"{error.error_code.name}: group '{group_id}' could not be deleted"
                for group_id, error in failures.items()
            )
        )
    names = ", ".join(f"'{group_id}'" for group_id in result)
    click.echo(f"Deletion of requested consumer groups ({names}) was successful.")


# --- delete-offsets ---------------------------------------------------------------------------


@groups.command("delete-offsets")
@bootstrap_server_option
@_timeout_option
@click.option("--group", "group_id", required=True, help="The group.")
@click.option(
    "--topic", "topics", multiple=True, required=True, metavar="T[:P,P...]", help="Topic."
)
def delete_offsets(
    bootstrap_server: str, timeout_ms: int, group_id: str, topics: tuple[str, ...]
) -> None:
    """Delete a group's committed offsets of topics or partitions (OffsetDelete)."""
    wanted = [parse_topic(value) for value in topics]
    with _admin(bootstrap_server, timeout_ms) as admin:
        partitions = _partitions(admin, wanted)
        result = admin.delete_group_offsets(group_id, partitions)
        errors = result.errors
    rows = [
        [tp.topic, str(tp.partition), errors[tp].error_code.name if tp in errors else "Successful"]
        for tp in partitions
    ]
    _print_table(["TOPIC", "PARTITION", "STATUS"], rows)
    if errors:
        raise click.ClickException(
            f"{len(errors)} of {len(partitions)} offsets of group '{group_id}' were not deleted"
        )


# --- reset-offsets ----------------------------------------------------------------------------


@groups.command("reset-offsets")
@bootstrap_server_option
@_timeout_option
@click.option("--group", "group_id", required=True, help="The group.")
@click.option("--topic", "topics", multiple=True, metavar="T[:P,P...]", help="Topic (partitions).")
@click.option("--all-topics", is_flag=True, help="Every topic the group has offsets for.")
@click.option(
    "--from-file",
    type=click.File("r"),
    metavar="CSV",
    help="The plan itself: topic,partition,offset lines (what --export prints).",
)
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offsets.")
@click.option("--to-latest", is_flag=True, help="Reset to the log end offsets.")
@click.option("--to-current", is_flag=True, help="Keep the committed offsets.")
@click.option("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="Reset to a time.")
@click.option("--by-duration", metavar="PnDTnHnMnS", help="Reset to now minus a duration.")
@click.option("--to-offset", type=int, metavar="N", help="Reset to an offset (clamped).")
@click.option("--shift-by", type=int, metavar="N", help="Move the offsets by N (clamped).")
@click.option("--dry-run", is_flag=True, help="Only print the plan (the default).")
@click.option("--execute", is_flag=True, help="Apply the plan.")
@click.option("--export", is_flag=True, help="Print the plan as topic,partition,offset CSV.")
def reset_offsets(
    bootstrap_server: str,
    timeout_ms: int,
    group_id: str,
    topics: tuple[str, ...],
    all_topics: bool,
    from_file: TextIO | None,
    to_earliest: bool,
    to_latest: bool,
    to_current: bool,
    to_datetime: str | None,
    by_duration: str | None,
    to_offset: int | None,
    shift_by: int | None,
    dry_run: bool,
    execute: bool,
    export: bool,
) -> None:
    """Reset a group's committed offsets (a dry run unless --execute)."""
    scopes = [bool(topics), all_topics, from_file is not None]
    if sum(scopes) != 1:
        raise click.UsageError("give one of --topic, --all-topics or --from-file")
    specs = [to_earliest, to_latest, to_current, to_datetime is not None]
    specs += [by_duration is not None, to_offset is not None, shift_by is not None]
    if sum(specs) != (0 if from_file is not None else 1):
        raise click.UsageError(
            "give one of --to-earliest, --to-latest, --to-current, --to-datetime, "
            "--by-duration, --to-offset, --shift-by (none with --from-file)"
        )
    if dry_run and execute:
        raise click.UsageError("--dry-run and --execute are mutually exclusive")
    timestamp_ms = None if to_datetime is None else parse_datetime(to_datetime)
    if by_duration is not None:
        timestamp_ms = int(time.time() * 1000) - parse_duration(by_duration)
    from_plan = None if from_file is None else parse_plan(from_file)
    wanted = [parse_topic(value) for value in topics]
    with _admin(bootstrap_server, timeout_ms) as admin:
        state = admin.describe_groups([group_id])[group_id].state
        if state not in INACTIVE_STATES:
            raise click.ClickException(
                f"Assignments can only be reset if the group '{group_id}' is inactive, "
                f"but the current state is {state}."
            )
        committed = {
            tp: offset.offset
            for tp, offset in admin.list_group_offsets(group_id).values_by_item.items()
            if offset is not None
        }
        if from_plan is not None:
            partitions = list(from_plan)
        elif all_topics:
            partitions = sorted(committed, key=lambda tp: (tp.topic, tp.partition))
        else:
            partitions = _partitions(admin, wanted)
        if not partitions:
            raise click.ClickException(f"group '{group_id}' has no offsets to reset")
        earliest = _known_offsets(admin, partitions, OffsetSpec.earliest())
        latest = _known_offsets(admin, partitions, OffsetSpec.latest())
        at_time = (
            None
            if timestamp_ms is None
            else _known_offsets(admin, partitions, OffsetSpec.for_timestamp(timestamp_ms))
        )
        plan: dict[TopicPartition, int] = {}
        for tp in partitions:
            low, high = earliest[tp], latest[tp]
            if from_plan is not None:
                target = from_plan[tp]
            elif to_current:
                if tp not in committed:
                    raise click.ClickException(
                        f"cannot keep the offset of {tp}: the group has no committed offset"
                    )
                target = committed[tp]
            elif to_earliest:
                target = low
            elif to_latest:
                target = high
            elif at_time is not None:
                target = at_time[tp] if at_time[tp] >= 0 else high
            elif to_offset is not None:
                target = to_offset
            else:
                assert shift_by is not None
                if tp not in committed:
                    raise click.ClickException(
                        f"cannot shift the offset of {tp}: the group has no committed offset"
                    )
                target = committed[tp] + shift_by
            plan[tp] = min(max(target, low), high)
        if execute:
            admin.alter_group_offsets(group_id, plan).all()
    if export:
        for tp, offset in plan.items():
            click.echo(f"{tp.topic},{tp.partition},{offset}")
        return
    _print_table(
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        [[group_id, tp.topic, str(tp.partition), str(offset)] for tp, offset in plan.items()],
    )
    if not execute and not dry_run:
        click.echo("Dry run: nothing was changed; add --execute to apply the plan.", err=True)


def parse_topic(value: str) -> tuple[str, tuple[int, ...] | None]:
    """``T`` or ``T:P,P,...`` to a topic and its partitions (``None``: all of them).

    Raises:
        click.BadParameter: an empty topic or a partition that is not a number >= 0.
    """
    topic, sep, numbers = value.partition(":")
    if not topic:
        raise click.BadParameter(f"no topic in {value!r}", param_hint="--topic")
    if not sep:
        return topic, None
    try:
        partitions = tuple(int(number) for number in numbers.split(","))
    except ValueError:
        raise click.BadParameter(
            f"expected T:P,P,... with partition numbers, got {value!r}", param_hint="--topic"
        ) from None
    if any(p < 0 for p in partitions):
        raise click.BadParameter(f"negative partition in {value!r}", param_hint="--topic")
    return topic, partitions


def parse_plan(source: TextIO) -> dict[TopicPartition, int]:
    """Kafka's reset-offsets CSV: ``topic,partition,offset`` lines (blank lines skipped).

    Raises:
        click.BadParameter: a line of another shape, naming its number.
    """
    plan: dict[TopicPartition, int] = {}
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        topic, _, rest = line.strip().rpartition(",")
        topic, _, partition = topic.rpartition(",")
        try:
            tp, offset = TopicPartition(topic, int(partition)), int(rest)
        except ValueError:
            tp, offset = TopicPartition("", -1), -1
        if not topic or tp.partition < 0 or offset < 0:
            raise click.BadParameter(
                f"line {number}: expected topic,partition,offset, got {line.strip()!r}",
                param_hint="--from-file",
            )
        plan[tp] = offset
    if not plan:
        raise click.BadParameter("no topic,partition,offset lines", param_hint="--from-file")
    return plan


_DURATION: Final = re.compile(
    r"P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d{1,3})?)S)?)?"
)


def parse_duration(value: str) -> int:
    """An ISO-8601 duration ``PnDTnHnMnS`` (Kafka's ``--by-duration``) in milliseconds.

    Raises:
        click.BadParameter: another format, or a duration of nothing.
    """
    match = _DURATION.fullmatch(value)
    if match is None or value in ("P", "PT") or value.endswith("T"):
        raise click.BadParameter(
            f"expected an ISO-8601 duration like P1DT2H30M, got {value!r}",
            param_hint="--by-duration",
        )
    parts = {name: float(number or 0) for name, number in match.groupdict().items()}
    seconds = (
        parts["days"] * 86_400 + parts["hours"] * 3_600 + parts["minutes"] * 60 + parts["seconds"]
    )
    return int(seconds * 1000)


def parse_datetime(value: str) -> int:
    """``YYYY-MM-DDTHH:mm:SS[.sss][Z|±HH:MM]`` to ms since the epoch (local time without a
    zone, as Kafka's tool reads it).

    Raises:
        click.BadParameter: another format, or a date that does not exist.
    """
    if _DATETIME.fullmatch(value) is None:
        raise click.BadParameter(
            f"expected YYYY-MM-DDTHH:mm:SS.sss, got {value!r}", param_hint="--to-datetime"
        )
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--to-datetime") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # the local zone
    return int(moment.timestamp() * 1000)


def _partitions(
    admin: AdminClient, wanted: Sequence[tuple[str, tuple[int, ...] | None]]
) -> list[TopicPartition]:
    whole = [topic for topic, numbers in wanted if numbers is None]
    described = admin.describe_topics(whole).all() if whole else {}
    found: dict[TopicPartition, None] = {}
    for topic, numbers in wanted:
        if numbers is None:
            found.update(dict.fromkeys(described[topic].topic_partitions))
        else:
            found.update((TopicPartition(topic, number), None) for number in numbers)
    return list(found)


def _known_offsets(
    admin: AdminClient, partitions: Sequence[TopicPartition], spec: OffsetSpec
) -> dict[TopicPartition, int]:
    """Offsets by spec of every partition (a partition's error raises: one line, exit 1)."""
    result: Mapping[TopicPartition, ListOffsetsResultInfo] = admin.list_offsets(
        dict.fromkeys(partitions, spec)
    ).all()
    return {tp: info.offset for tp, info in result.items()}


# --- output -----------------------------------------------------------------------------------


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Left-aligned columns as wide as their widest cell, one space apart; a blank line first,
    as Kafka's tool prints its tables."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    click.echo()
    for row in [headers, *rows]:
        click.echo(
            " ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )

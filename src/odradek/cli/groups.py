"""``odradek groups list|describe|delete|reset-offsets``: consumer groups on a running broker.

Like Kafka's ``kafka-consumer-groups.sh``, over ``AdminClient`` to ``--bootstrap-server``::

    odradek groups list          [--state]
    odradek groups describe      --group G [--group G2 ...] [--members [--verbose] | --state]
    odradek groups delete        --group G [--group G2 ...]
    odradek groups reset-offsets --group G (--topic T[:P,P...] ... | --all-topics)
                                 (--to-earliest | --to-latest | --to-datetime DT
                                  | --to-offset N | --shift-by N) [--dry-run | --execute]

``describe`` prints Kafka's table, one row per partition that is assigned or has a committed
offset: GROUP, TOPIC, PARTITION, CURRENT-OFFSET (the committed one), LOG-END-OFFSET (ListOffsets
latest), LAG (their difference), CONSUMER-ID, HOST, CLIENT-ID; ``-`` where a value is unknown.
Columns are left-aligned, as wide as their widest cell, one space apart. Notes (a group with
no active members, one that is rebalancing) go to stderr, as Kafka's tool prints them.

``reset-offsets`` computes the new offsets and prints the plan (GROUP, TOPIC, PARTITION,
NEW-OFFSET); nothing changes unless ``--execute`` is given (a dry run is the default, as in
Kafka's tool). ``--to-offset`` and ``--shift-by`` are clamped to each partition's
[earliest, latest] offsets; ``--to-datetime YYYY-MM-DDTHH:mm:SS.sss`` (an optional ``Z`` or
``±HH:MM``; local time without one) takes the first offset at or after that time, or the log
end offset when there is none. The group must be inactive (Empty, or unknown): otherwise the
command refuses with one line, as Kafka does.

Errors: a usage mistake is one line and exit 2 (``cli.main``); a broker error or a refusal is
one line and exit 1 (``broker_errors``).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import click

from odradek._types import TopicPartition
from odradek.cli._options import bootstrap_server_option, broker_errors
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
            {
                "bootstrap.servers": bootstrap_server,
                "client.id": CLIENT_ID,
                "default.api.timeout.ms": timeout_ms,
                "request.timeout.ms": timeout_ms,
            }
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
def list_groups(bootstrap_server: str, timeout_ms: int, with_state: bool) -> None:
    """List the consumer groups."""
    with _admin(bootstrap_server, timeout_ms) as admin:
        listed = [g for g in admin.list_groups() if g.is_consumer_group]
        if not with_state:
            for group in listed:
                click.echo(group.group_id)
            return
        states = {g.group_id: g.state for g in listed if g.state is not None}
        unknown = [g.group_id for g in listed if g.state is None]
        if unknown:
            described = admin.describe_groups(unknown)
            states.update((gid, d.state) for gid, d in described.values_by_item.items())
    _print_table(["GROUP", "STATE"], [[g.group_id, states.get(g.group_id, NONE)] for g in listed])


# --- describe ---------------------------------------------------------------------------------


@groups.command("describe")
@bootstrap_server_option
@_timeout_option
@click.option("--group", "group_ids", multiple=True, required=True, help="The group (repeatable).")
@click.option("--members", is_flag=True, help="Show the members instead of the offsets.")
@click.option("--state", "with_state", is_flag=True, help="Show the group's state instead.")
@click.option("--verbose", is_flag=True, help="With --members: each member's partitions.")
def describe(
    bootstrap_server: str,
    timeout_ms: int,
    group_ids: tuple[str, ...],
    members: bool,
    with_state: bool,
    verbose: bool,
) -> None:
    """Describe consumer groups: offsets and lag (default), members, or state."""
    if members and with_state:
        raise click.UsageError("--members and --state are mutually exclusive")
    if verbose and not members:
        raise click.UsageError("--verbose goes with --members")
    with _admin(bootstrap_server, timeout_ms) as admin:
        described = admin.describe_groups(group_ids)
        for group_id in dict.fromkeys(group_ids):
            description = described[group_id]
            if with_state:
                _print_state(description)
                continue
            if description.state == "Dead":
                raise click.ClickException(f"Consumer group '{group_id}' does not exist.")
            _warn_state(description)
            if members:
                _print_members(description, verbose)
            else:
                _print_offsets(admin, description)


def _warn_state(description: ConsumerGroupDescription) -> None:
    if description.state == "Empty":
        click.echo(f"Consumer group '{description.group_id}' has no active members.", err=True)
    elif description.state in ("PreparingRebalance", "CompletingRebalance"):
        click.echo(f"Warning: Consumer group '{description.group_id}' is rebalancing.", err=True)


def _print_state(description: ConsumerGroupDescription) -> None:
    coordinator = description.coordinator
    where = (
        NONE
        if coordinator is None
        else f"{coordinator.host}:{coordinator.port} ({coordinator.node_id})"
    )
    _print_table(
        ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
        [
            [
                description.group_id,
                where,
                description.protocol or NONE,
                description.state,
                str(len(description.members)),
            ]
        ],
    )


def _print_members(description: ConsumerGroupDescription, verbose: bool) -> None:
    headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        headers.append("ASSIGNMENT")
    rows: list[list[str]] = []
    for member in description.members:
        row = [
            description.group_id,
            member.member_id,
            member.host or NONE,
            member.client_id or NONE,
            str(len(member.assignment)),
        ]
        if verbose:
            row.append(_assignment_text(member.assignment))
        rows.append(row)
    _print_table(headers, rows)


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


def _print_offsets(admin: AdminClient, description: ConsumerGroupDescription) -> None:
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
    rows: list[list[str]] = []
    for tp in partitions:
        current = committed.get(tp)
        end = ends.get(tp)
        lag = end - current if end is not None and current is not None else None
        owner = owners.get(tp)
        rows.append(
            [
                group_id,
                tp.topic,
                str(tp.partition),
                _text(current),
                _text(end),
                _text(lag),
                owner.member_id if owner else NONE,
                (owner.host or NONE) if owner else NONE,
                (owner.client_id or NONE) if owner else NONE,
            ]
        )
    for member in description.members:
        if not member.assignment:
            host, client = member.host or NONE, member.client_id or NONE
            rows.append([group_id, *[NONE] * 5, member.member_id, host, client])
    headers = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    _print_table([*headers, "CONSUMER-ID", "HOST", "CLIENT-ID"], rows)


def _offsets(
    admin: AdminClient, partitions: Sequence[TopicPartition], spec: OffsetSpec | int
) -> dict[TopicPartition, int]:
    """Offsets by spec of the partitions that answered (others are left out)."""
    result = admin.list_offsets(dict.fromkeys(partitions, spec))
    return {tp: info.offset for tp, info in result.values_by_item.items()}


def _text(value: int | None) -> str:
    return NONE if value is None else str(value)


# --- delete -----------------------------------------------------------------------------------


@groups.command("delete")
@bootstrap_server_option
@_timeout_option
@click.option("--group", "group_ids", multiple=True, required=True, help="The group (repeatable).")
def delete(bootstrap_server: str, timeout_ms: int, group_ids: tuple[str, ...]) -> None:
    """Delete consumer groups (only groups without active members)."""
    with _admin(bootstrap_server, timeout_ms) as admin:
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


# --- reset-offsets ----------------------------------------------------------------------------


@groups.command("reset-offsets")
@bootstrap_server_option
@_timeout_option
@click.option("--group", "group_id", required=True, help="The group.")
@click.option("--topic", "topics", multiple=True, metavar="T[:P,P...]", help="Topic (partitions).")
@click.option("--all-topics", is_flag=True, help="Every topic the group has offsets for.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offsets.")
@click.option("--to-latest", is_flag=True, help="Reset to the log end offsets.")
@click.option("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="Reset to a time.")
@click.option("--to-offset", type=int, metavar="N", help="Reset to an offset (clamped).")
@click.option("--shift-by", type=int, metavar="N", help="Move the offsets by N (clamped).")
@click.option("--dry-run", is_flag=True, help="Only print the plan (the default).")
@click.option("--execute", is_flag=True, help="Apply the plan.")
def reset_offsets(
    bootstrap_server: str,
    timeout_ms: int,
    group_id: str,
    topics: tuple[str, ...],
    all_topics: bool,
    to_earliest: bool,
    to_latest: bool,
    to_datetime: str | None,
    to_offset: int | None,
    shift_by: int | None,
    dry_run: bool,
    execute: bool,
) -> None:
    """Reset a group's committed offsets (a dry run unless --execute)."""
    scopes = [bool(topics), all_topics]
    if sum(scopes) != 1:
        raise click.UsageError("give one of --topic or --all-topics")
    specs = [to_earliest, to_latest, to_datetime is not None]
    specs += [to_offset is not None, shift_by is not None]
    if sum(specs) != 1:
        raise click.UsageError(
            "give one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by"
        )
    if dry_run and execute:
        raise click.UsageError("--dry-run and --execute are mutually exclusive")
    timestamp_ms = None if to_datetime is None else parse_datetime(to_datetime)
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
        partitions = (
            sorted(committed, key=lambda tp: (tp.topic, tp.partition))
            if all_topics
            else _partitions(admin, wanted)
        )
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
            if to_earliest:
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

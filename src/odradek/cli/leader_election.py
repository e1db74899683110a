"""``odradek leader-election``: leader elections on request, as ``kafka-leader-election.sh``.

::

    odradek leader-election --bootstrap-server HOST:PORT --election-type PREFERRED|UNCLEAN
        (--topic T --partition P | --all-topic-partitions | --path-to-json-file F)

The JSON file has Kafka's layout: ``{"partitions": [{"topic": "t", "partition": 0}, ...]}``.
The election goes through ``AdminClient.elect_leaders`` (ElectLeaders to the controller). The
outcome is printed as Kafka's tool prints it, partitions sorted and written ``topic-partition``:

- ``Successfully completed leader election (PREFERRED) for partitions t-0, t-1``;
- ``Valid replica already elected for partitions t-2`` (ELECTION_NOT_NEEDED);
- one line per other failure, ``Error completing leader election (PREFERRED) for partition:
  t-3: NAME: message``, then ``odradek: N replica(s) could not be elected`` on stderr, exit 1.

A usage mistake (no selection or two, ``--partition`` without ``--topic``, a JSON file that is
unreadable, malformed or lists a partition twice) is one line and exit 2; a broker that cannot
be reached, or a whole-request error, is one line and exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import click

from odradek._types import TopicPartition
from odradek.cli._options import bootstrap_server_option, broker_errors, client_settings
from odradek.client.admin import AdminClient
from odradek.client.admin_types import AdminResult, ElectionType
from odradek.errors import ErrorCode, KafkaError

CLIENT_ID: Final = "odradek-leader-election"
REQUEST_TIMEOUT_MS: Final = 30_000


@click.command("leader-election")
@bootstrap_server_option
@click.option(
    "--election-type",
    "election_type",
    default=None,
    metavar="PREFERRED|UNCLEAN",
    type=click.Choice([kind.name for kind in ElectionType], case_sensitive=False),
    help="PREFERRED: the preferred replica leads again; UNCLEAN: a leader for leaderless "
    "partitions, from outside the ISR if need be.",
)
@click.option("--topic", default=None, help="The topic of the partition (with --partition).")
@click.option(
    "--partition",
    type=click.IntRange(min=0, max=2**31 - 1),
    default=None,
    help="The partition (with --topic).",
)
@click.option("--all-topic-partitions", is_flag=True, help="Every partition of every topic.")
@click.option(
    "--path-to-json-file",
    "json_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='The partitions, as {"partitions": [{"topic": "t", "partition": 0}, ...]}.',
)
def leader_election(
    bootstrap_server: str,
    election_type: str | None,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    json_file: Path | None,
) -> None:
    """Elect partition leaders: preferred replicas, or unclean leaders for leaderless ones."""
    if election_type is None:
        # Not ``required=True``: click says what a missing Choice may be on several lines.
        raise click.UsageError("missing option '--election-type' (PREFERRED or UNCLEAN)")
    kind = ElectionType[election_type.upper()]
    partitions = _selection(topic, partition, all_topic_partitions, json_file)
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
            results = client.elect_leaders(kind, partitions)
    lines, failed = outcome_lines(kind, results)
    for line in lines:
        click.echo(line)
    if failed:
        raise click.ClickException(f"{failed} replica(s) could not be elected")


def outcome_lines(
    kind: ElectionType, results: AdminResult[TopicPartition, None]
) -> tuple[list[str], int]:
    """The lines printed for ``results``, and how many partitions failed (not counting those
    whose right leader leads already)."""
    errors = results.errors
    elected = sorted(tp for tp in results if tp not in errors)
    not_needed = sorted(tp for tp, e in errors.items() if _is(e, ErrorCode.ELECTION_NOT_NEEDED))
    failed = sorted(
        (tp, e) for tp, e in errors.items() if not _is(e, ErrorCode.ELECTION_NOT_NEEDED)
    )
    lines: list[str] = []
    if elected:
        lines.append(
            f"Successfully completed leader election ({kind.name}) for partitions "
            + ", ".join(str(tp) for tp in elected)
        )
    if not_needed:
        lines.append(
            "Valid replica already elected for partitions "
            + ", ".join(str(tp) for tp in not_needed)
        )
    for tp, error in failed:
        detail = str(error).removeprefix(f"{tp}: ")
        name = error.error_code.name
        lines.append(
            f"Error completing leader election ({kind.name}) for partition: {tp}: {name}"
            + ("" if detail in ("", name) else f": {detail}")
        )
    return lines, len(failed)


def _is(error: KafkaError, code: ErrorCode) -> bool:
    return error.error_code == code


def _selection(
    topic: str | None, partition: int | None, every: bool, json_file: Path | None
) -> list[TopicPartition] | None:
    """The partitions asked for (``None``: all), from exactly one way of naming them.

    Raises:
        click.UsageError: none or several selections, or half of ``--topic --partition``.
        click.BadParameter: an unreadable or malformed JSON file.
    """
    chosen = [
        name
        for name, given in (
            ("--topic/--partition", topic is not None or partition is not None),
            ("--all-topic-partitions", every),
            ("--path-to-json-file", json_file is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "give exactly one of --topic with --partition, --all-topic-partitions, "
            "--path-to-json-file" + (f" (got {', '.join(chosen)})" if chosen else "")
        )
    if every:
        return None
    if json_file is not None:
        return read_partitions_file(json_file)
    if topic is None or partition is None:
        raise click.UsageError("--topic and --partition go together: give both")
    if not topic:
        raise click.BadParameter("must not be empty", param_hint="'--topic'")
    return [TopicPartition(topic, partition)]


def read_partitions_file(path: Path) -> list[TopicPartition]:
    """The partitions a ``--path-to-json-file`` lists.

    Raises:
        click.BadParameter: the file cannot be read, is not JSON of Kafka's layout, or lists
            a partition twice.
    """
    hint = "'--path-to-json-file'"
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise click.BadParameter(f"cannot read {path}: {error.strerror}", param_hint=hint) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise click.BadParameter(f"{path} is not JSON: {error}", param_hint=hint) from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise click.BadParameter(
            f'{path}: expected {{"partitions": [{{"topic": ..., "partition": ...}}, ...]}}',
            param_hint=hint,
        )
    partitions: list[TopicPartition] = []
    for index, entry in enumerate(entries):
        topic = entry.get("topic") if isinstance(entry, dict) else None
        number = entry.get("partition") if isinstance(entry, dict) else None
        if (
            not isinstance(topic, str)
            or not topic
            or not isinstance(number, int)
            or isinstance(number, bool)
            or not 0 <= number < 2**31
        ):
            raise click.BadParameter(
                f"{path}: partitions[{index}] needs a topic (string) and a partition (int >= 0)",
                param_hint=hint,
            )
        tp = TopicPartition(topic, number)
        if tp in partitions:
            raise click.BadParameter(f"{path}: {tp} is listed twice", param_hint=hint)
        partitions.append(tp)
    if not partitions:
        raise click.BadParameter(f"{path}: no partitions listed", param_hint=hint)
    return partitions

"""``odradek records delete``: delete the records before offsets, like Kafka's
kafka-delete-records.sh (DeleteRecords; the partitions' log start offsets move there).

    odradek records delete --topic T --partition P --offset N     (one partition)
    odradek records delete --offset-json-file FILE                (Kafka's JSON file)

Kafka's file: ``{"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}``;
offset -1 means the high watermark (everything). Prints Kafka's report, one line per partition
(``partition: T-P  low_watermark: N`` or ``partition: T-P  error: NAME``); exit 1 if any failed.
A usage mistake or a malformed file is one line and exit 2.
"""

from __future__ import annotations

import json
from typing import Any, Final, TextIO

import click

from odradek._types import TopicPartition
from odradek.cli._options import admin_client, bootstrap_server_option, output_option, print_json

CLIENT_ID: Final = "odradek-records"


@click.group("records")
def records() -> None:
    """Delete records."""


def parse_offset_json(source: TextIO) -> dict[TopicPartition, int]:
    """Kafka's offset JSON file.

    Raises:
        click.BadParameter: not JSON, or not of that shape (names what is wrong).
    """
    hint = "--offset-json-file"
    try:
        document: Any = json.load(source)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint=hint) from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise click.BadParameter('expected {"partitions": [...]} with entries', param_hint=hint)
    plan: dict[TopicPartition, int] = {}
    for index, entry in enumerate(entries):
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        offset = entry.get("offset") if isinstance(entry, dict) else None
        if (
            not isinstance(topic, str)
            or not topic
            or type(partition) is not int
            or partition < 0
            or type(offset) is not int
            or offset < -1
        ):
            raise click.BadParameter(
                f"partitions[{index}]: expected topic, partition >= 0 and offset >= -1",
                param_hint=hint,
            )
        tp = TopicPartition(topic, partition)
        if tp in plan:
            raise click.BadParameter(f"partitions[{index}]: {tp} appears twice", param_hint=hint)
        plan[tp] = offset
    return plan


@records.command("delete")
@bootstrap_server_option
@click.option("--topic", help="The topic (with --partition and --offset).")
@click.option("--partition", type=click.IntRange(min=0), help="The partition.")
@click.option("--offset", type=click.IntRange(min=-1), help="Delete before this (-1: all).")
@click.option("--offset-json-file", type=click.File("r"), help="Kafka's offsets JSON file.")
@output_option
def delete(
    bootstrap_server: str,
    topic: str | None,
    partition: int | None,
    offset: int | None,
    offset_json_file: TextIO | None,
    output: str,
) -> None:
    """Delete the records before the given offsets."""
    single = (topic, partition, offset)
    if offset_json_file is not None:
        if any(value is not None for value in single):
            raise click.UsageError("give --offset-json-file or --topic/--partition/--offset")
        plan = parse_offset_json(offset_json_file)
    elif any(value is None for value in single) or not topic:
        raise click.UsageError("give --topic, --partition and --offset (or --offset-json-file)")
    else:
        assert partition is not None
        assert offset is not None
        plan = {TopicPartition(topic, partition): offset}
    with admin_client(bootstrap_server, CLIENT_ID) as admin:
        result = admin.delete_records(plan)
    errors = result.errors
    values = result.values_by_item
    if output == "json":
        print_json(
            [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "low_watermark": values[tp].low_watermark if tp in values else None,
                    "error": errors[tp].error_code.name if tp in errors else None,
                }
                for tp in plan
            ]
        )
    else:
        click.echo("Records delete operation completed:")
        for tp in plan:
            if tp in errors:
                click.echo(
                    f"partition: {tp.topic}-{tp.partition}\terror: {errors[tp].error_code.name}"
                )
            else:
                low = values[tp].low_watermark
                click.echo(f"partition: {tp.topic}-{tp.partition}\tlow_watermark: {low}")
    if errors:
        raise click.ClickException(f"{len(errors)} of {len(plan)} partitions failed")

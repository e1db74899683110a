"""``odradek transactions list|describe|describe-producers``: transactions on a running
cluster, like Kafka's ``kafka-transactions.sh`` (KIP-664), over ``AdminClient``::

    odradek transactions list               [--state S ...] [--producer-id N ...]
                                            [--duration-ms MS] [--output json]
    odradek transactions describe           --transactional-id ID [--output json]
    odradek transactions describe-producers --topic T --partition P [--output json]

``list`` prints TransactionalId, Coordinator, ProducerId, TransactionState (Kafka's tool's
columns), one row per id of the cluster, sorted by id; ``--state`` (Kafka's names: ``Empty``,
``Ongoing``, ``PrepareCommit``, ``PrepareAbort``, ``CompleteCommit``, ``CompleteAbort``,
``PrepareEpochFence``, ``Dead``), ``--producer-id`` and ``--duration-ms`` (open at least that
long) filter it. ``describe`` prints CoordinatorId, TransactionalId, ProducerId,
ProducerEpoch, TransactionState, TransactionTimeoutMs, CurrentTransactionStartTimeMs,
TransactionDurationMs, TopicPartitions (``None`` where there is no transaction).
``describe-producers`` prints ProducerId, ProducerEpoch, LatestCoordinatorEpoch,
LastSequence, LastTimestamp, CurrentTransactionStartOffset for each producer the partition's
leader knows. ``--output json`` prints one JSON document instead.

Errors: a usage mistake is one line and exit 2 (``cli.main``); a broker error (an unknown
transactional id, topic or partition, an unknown state name) is one line and exit 1
(``broker_errors``).
"""

from __future__ import annotations

import time
from typing import Final

import click

from odradek._types import TopicPartition
from odradek.cli._options import (
    admin_client,
    bootstrap_server_option,
    broker_errors,
    output_option,
    print_json,
    print_table,
)
from odradek.client.admin_transactions import TransactionDescription

__all__ = ["transactions"]

CLIENT_ID: Final = "odradek-transactions"
NONE: Final = "None"


@click.group()
def transactions() -> None:
    """List and describe transactions and the producers of a partition."""


@transactions.command("list")
@bootstrap_server_option
@click.option("--state", "states", multiple=True, help="Only ids in this state (repeatable).")
@click.option(
    "--producer-id",
    "producer_ids",
    type=click.IntRange(min=0),
    multiple=True,
    help="Only ids of this producer id (repeatable).",
)
@click.option(
    "--duration-ms",
    type=click.IntRange(min=0),
    default=None,
    help="Only transactions open at least this long.",
)
@output_option
def list_transactions(
    bootstrap_server: str,
    states: tuple[str, ...],
    producer_ids: tuple[int, ...],
    duration_ms: int | None,
    output: str,
) -> None:
    """List the transactional ids of the cluster."""
    with admin_client(bootstrap_server, CLIENT_ID) as admin:
        try:
            listed = admin.list_transactions(
                states=states, producer_ids=producer_ids, duration_ms=duration_ms
            )
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="'--state'") from None
    if output == "json":
        print_json(
            [
                {
                    "transactional_id": t.transactional_id,
                    "coordinator": t.coordinator_id,
                    "producer_id": t.producer_id,
                    "state": t.state,
                }
                for t in listed
            ]
        )
        return
    print_table(
        ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
        [[t.transactional_id, str(t.coordinator_id), str(t.producer_id), t.state] for t in listed],
    )


@transactions.command("describe")
@bootstrap_server_option
@click.option("--transactional-id", required=True, help="The transactional id.")
@output_option
def describe_transaction(bootstrap_server: str, transactional_id: str, output: str) -> None:
    """Describe a transactional id's state at its coordinator."""
    with admin_client(bootstrap_server, CLIENT_ID) as admin:
        description = admin.describe_transactions([transactional_id])[transactional_id]
    now_ms = int(time.time() * 1000)
    if output == "json":
        print_json(_describe_json(description, now_ms))
        return
    started = description.start_time_ms
    print_table(
        [
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs",
            "TransactionDurationMs",
            "TopicPartitions",
        ],
        [
            [
                str(description.coordinator_id),
                description.transactional_id,
                str(description.producer_id),
                str(description.producer_epoch),
                description.state,
                str(description.timeout_ms),
                str(started) if started >= 0 else NONE,
                str(max(0, now_ms - started)) if started >= 0 else NONE,
                ",".join(f"{tp.topic}-{tp.partition}" for tp in description.partitions),
            ]
        ],
    )


def _describe_json(description: TransactionDescription, now_ms: int) -> dict[str, object]:
    started = description.start_time_ms
    return {
        "coordinator_id": description.coordinator_id,
        "transactional_id": description.transactional_id,
        "producer_id": description.producer_id,
        "producer_epoch": description.producer_epoch,
        "state": description.state,
        "timeout_ms": description.timeout_ms,
        "start_time_ms": started if started >= 0 else None,
        "duration_ms": max(0, now_ms - started) if started >= 0 else None,
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition} for tp in description.partitions
        ],
    }


@transactions.command("describe-producers")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic.")
@click.option("--partition", type=click.IntRange(min=0), required=True, help="The partition.")
@output_option
def describe_producers(bootstrap_server: str, topic: str, partition: int, output: str) -> None:
    """Describe the producers a partition's leader knows."""
    if not topic.strip():
        raise click.BadParameter("must not be empty", param_hint="'--topic'")
    with admin_client(bootstrap_server, CLIENT_ID) as admin, broker_errors():
        producers = admin.describe_producers(TopicPartition(topic, partition))
    if output == "json":
        print_json(
            [
                {
                    "producer_id": p.producer_id,
                    "producer_epoch": p.producer_epoch,
                    "coordinator_epoch": p.coordinator_epoch,
                    "last_sequence": p.last_sequence,
                    "last_timestamp_ms": p.last_timestamp_ms,
                    "current_txn_start_offset": (
                        p.current_txn_start_offset if p.current_txn_start_offset >= 0 else None
                    ),
                }
                for p in producers
            ]
        )
        return
    print_table(
        [
            "ProducerId",
            "ProducerEpoch",
            "LatestCoordinatorEpoch",
            "LastSequence",
            "LastTimestamp",
            "CurrentTransactionStartOffset",
        ],
        [
            [
                str(p.producer_id),
                str(p.producer_epoch),
                str(p.coordinator_epoch),
                str(p.last_sequence),
                str(p.last_timestamp_ms),
                str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else NONE,
            ]
            for p in producers
        ],
    )

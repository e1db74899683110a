"""``odradek transactions list|describe|describe-producers|abort|find-hanging``: transactions
on a running cluster, like Kafka's ``kafka-transactions.sh`` (KIP-664), over
``AdminClient``::

    odradek transactions list               [--state S ...] [--producer-id N ...]
                                            [--duration-ms MS] [--output json]
    odradek transactions describe           --transactional-id ID [--output json]
    odradek transactions describe-producers --topic T --partition P [--output json]
    odradek transactions abort              --topic T --partition P --start-offset O
    odradek transactions abort              --topic T --partition P --producer-id N
                                            --producer-epoch E --coordinator-epoch C
    odradek transactions find-hanging       --broker-id N [--max-transaction-timeout MIN]
                                            [--output json]

``odradek producers describe`` is ``describe-producers`` under Kafka's other name for it.

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

``abort`` writes an ABORT marker for one producer to the partition's leader (WriteTxnMarkers),
ending a *hanging* transaction: one the partition holds open but no coordinator will ever end
(its coordinator lost it), which holds back every read_committed reader at its first offset.
With ``--start-offset`` the producer is the one whose open transaction starts there
(DescribeProducers; its coordinator epoch, 0 when the partition knows none); otherwise the
producer id, epoch and coordinator epoch are given. It prints the producer it aborted.

``find-hanging`` lists them: the open transactions of the partitions broker ``--broker-id``
leads (DescribeProducers answers on leaders) whose last write is older than
``--max-transaction-timeout`` minutes (default 15, Kafka's ``transaction.max.timeout.ms``)
and that no coordinator lists as ongoing: no transactional id has the producer id
(ListTransactions), or its coordinator describes another epoch, a state other than Ongoing /
PrepareCommit / PrepareAbort, or a transaction without the partition. It prints Topic,
Partition, ProducerId, ProducerEpoch, CoordinatorEpoch, StartOffset, LastTimestamp,
Duration(min) (Kafka's columns).

Errors: a usage mistake is one line and exit 2 (``cli.main``); a broker error (an unknown
transactional id, topic or partition, an unknown state name, a start offset at which no
transaction starts, an unknown broker id) is one line and exit 1 (``broker_errors``).
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
from odradek.client.admin import AdminClient
from odradek.client.admin_transactions import (
    AbortTransactionSpec,
    ProducerState,
    TransactionDescription,
)

__all__ = ["transactions"]

CLIENT_ID: Final = "odradek-transactions"
NONE: Final = "None"
#: Coordinator states in which a transaction is still ongoing.
OPEN_STATES: Final = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort"})


@click.group()
def transactions() -> None:
    """List, describe, find hanging and abort transactions; describe a partition's producers."""


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


@transactions.command("abort")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic of the transaction's partition.")
@click.option("--partition", type=click.IntRange(min=0), required=True, help="The partition.")
@click.option(
    "--start-offset",
    type=click.IntRange(min=0),
    default=None,
    help="The first offset of the transaction (finds its producer).",
)
@click.option("--producer-id", type=click.IntRange(min=0), default=None, help="The producer id.")
@click.option(
    "--producer-epoch", type=click.IntRange(0, 32767), default=None, help="The producer epoch."
)
@click.option(
    "--coordinator-epoch",
    type=click.IntRange(min=0),
    default=None,
    help="The coordinator epoch for the marker.",
)
def abort_transaction(
    bootstrap_server: str,
    topic: str,
    partition: int,
    start_offset: int | None,
    producer_id: int | None,
    producer_epoch: int | None,
    coordinator_epoch: int | None,
) -> None:
    """Abort a hanging transaction on one partition."""
    if not topic.strip():
        raise click.BadParameter("must not be empty", param_hint="'--topic'")
    by_producer = (producer_id, producer_epoch, coordinator_epoch)
    tp = TopicPartition(topic, partition)
    if start_offset is not None:
        if any(value is not None for value in by_producer):
            raise click.UsageError(
                "give either --start-offset or --producer-id, --producer-epoch and "
                "--coordinator-epoch, not both"
            )
    elif producer_id is None or producer_epoch is None or coordinator_epoch is None:
        raise click.UsageError(
            "give --start-offset, or all of --producer-id, --producer-epoch and --coordinator-epoch"
        )
    with admin_client(bootstrap_server, CLIENT_ID) as admin, broker_errors():
        if start_offset is not None:
            spec = _spec_at(admin, tp, start_offset)
        else:
            assert producer_id is not None
            assert producer_epoch is not None
            assert coordinator_epoch is not None
            spec = AbortTransactionSpec(tp, producer_id, producer_epoch, coordinator_epoch)
        admin.abort_transaction(spec)
    click.echo(
        f"Aborted the transaction of producer {spec.producer_id} (epoch {spec.producer_epoch}, "
        f"coordinator epoch {spec.coordinator_epoch}) on {topic}-{partition}."
    )


def _spec_at(admin: AdminClient, tp: TopicPartition, start_offset: int) -> AbortTransactionSpec:
    """The producer whose open transaction on ``tp`` starts at ``start_offset``."""
    for producer in admin.describe_producers(tp):
        if producer.current_txn_start_offset == start_offset:
            return AbortTransactionSpec(
                tp,
                producer.producer_id,
                producer.producer_epoch,
                max(producer.coordinator_epoch, 0),  # -1: none known (Kafka uses 0)
            )
    raise click.ClickException(
        f"no open transaction on {tp.topic}-{tp.partition} starts at offset {start_offset}"
    )


@transactions.command("find-hanging")
@bootstrap_server_option
@click.option(
    "--broker-id",
    type=click.IntRange(min=0),
    required=True,
    help="Look at the partitions this broker leads.",
)
@click.option(
    "--max-transaction-timeout",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Minutes after which an open transaction may hang (transaction.max.timeout.ms).",
)
@output_option
def find_hanging(
    bootstrap_server: str, broker_id: int, max_transaction_timeout: int, output: str
) -> None:
    """Find open transactions that no coordinator will end."""
    with admin_client(bootstrap_server, CLIENT_ID) as admin, broker_errors():
        brokers = {b.node_id for b in admin.describe_cluster().brokers}
        if broker_id not in brokers:
            raise click.ClickException(
                f"broker {broker_id} is not in the cluster (brokers: "
                f"{', '.join(str(b) for b in sorted(brokers))})"
            )
        now_ms = int(time.time() * 1000)
        hanging = find_hanging_transactions(
            admin, broker_id, max_transaction_timeout * 60_000, now_ms
        )
    if output == "json":
        print_json(
            [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "producer_id": p.producer_id,
                    "producer_epoch": p.producer_epoch,
                    "coordinator_epoch": p.coordinator_epoch,
                    "start_offset": p.current_txn_start_offset,
                    "last_timestamp_ms": p.last_timestamp_ms,
                    "duration_min": (now_ms - p.last_timestamp_ms) // 60_000,
                }
                for tp, p in hanging
            ]
        )
        return
    print_table(
        [
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
        ],
        [
            [
                tp.topic,
                str(tp.partition),
                str(p.producer_id),
                str(p.producer_epoch),
                str(p.coordinator_epoch),
                str(p.current_txn_start_offset),
                str(p.last_timestamp_ms),
                str((now_ms - p.last_timestamp_ms) // 60_000),
            ]
            for tp, p in hanging
        ],
    )


def find_hanging_transactions(
    admin: AdminClient, broker_id: int, max_timeout_ms: int, now_ms: int
) -> list[tuple[TopicPartition, ProducerState]]:
    """The hanging transactions of the partitions ``broker_id`` leads (see the module
    docstring), by partition and producer id."""
    described = admin.describe_topics(admin.list_topics(include_internal=True))
    led = sorted(
        TopicPartition(description.name, p.partition)
        for description in described.values_by_item.values()
        for p in description.partitions
        if p.leader == broker_id
    )
    candidates: list[tuple[TopicPartition, ProducerState]] = []
    for tp in led:
        for producer in admin.describe_producers(tp):
            if (
                producer.current_txn_start_offset >= 0
                and now_ms - producer.last_timestamp_ms > max_timeout_ms
            ):
                candidates.append((tp, producer))
    if not candidates:
        return []
    listed = admin.list_transactions(producer_ids=sorted({p.producer_id for _, p in candidates}))
    ids_of: dict[int, list[str]] = {}
    for listing in listed:
        ids_of.setdefault(listing.producer_id, []).append(listing.transactional_id)
    result = admin.describe_transactions([i for ids in ids_of.values() for i in ids])
    # An id whose describe failed (gone since it was listed) has no transaction going.
    descriptions = result.values_by_item
    return [
        (tp, producer)
        for tp, producer in candidates
        if not any(
            _ongoing_here(descriptions.get(i), tp, producer)
            for i in ids_of.get(producer.producer_id, ())
        )
    ]


def _ongoing_here(
    description: TransactionDescription | None, tp: TopicPartition, producer: ProducerState
) -> bool:
    """Whether the coordinator's ``description`` is the partition's open transaction."""
    return (
        description is not None
        and description.producer_id == producer.producer_id
        and description.producer_epoch == producer.producer_epoch
        and description.state in OPEN_STATES
        and tp in description.partitions
    )

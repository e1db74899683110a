"""Driver-side lookups: which partitions a read covers and where its limits are in offsets.

``OffsetReader`` turns the options' strategy (assign / subscribe / subscribePattern) into
topic-partitions, and the options' offset limits (earliest, latest, per-partition offsets,
timestamps) into offsets, through one admin client. It also commits a consumer group's offsets
for the streaming source's ``groupId`` option.

Rules (Spark's Kafka connector's):
- ``subscribe`` covers the partitions of the named topics that exist; ``subscribePattern``
  those of every non-internal topic whose name the pattern finds; ``assign`` exactly its list.
- Per-partition offsets or timestamps must name every partition the read covers when given
  for a fixed set (assign), else ``ValueError``; for subscriptions a partition they do not name
  starts at the earliest offset (new partitions) — the same answer Spark gives for partitions
  that appear later.
- -2 / -1 in per-partition offsets mean earliest / latest.
- With ``kafka.isolation.level=read_committed`` latest is the last stable offset (the first
  offset of the oldest open transaction), not the high watermark: a read_committed Fetch
  returns nothing past it, so a range ending later would look like data loss.
- A timestamp with no record at or after it resolves to the latest offset with
  ``startingOffsetsByTimestampStrategy=latest``, and is an error otherwise.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import TracebackType
from typing import Literal, Self

from odradek.client import AdminClient, TopicPartition
from odradek.spark.clients import admin_client
from odradek.spark.options import (
    EARLIEST,
    LATEST,
    Assign,
    GlobalTimestamp,
    OffsetLimit,
    PartitionOffsets,
    PartitionTimestamps,
    SourceOptions,
    Subscribe,
    SubscribePattern,
)

__all__ = ["OffsetReader"]


class OffsetReader:
    """Partition and offset lookups for one data source's options (see the module docstring).

    Not thread-safe; close it when done (it holds an admin client's connections).
    """

    def __init__(self, options: SourceOptions, admin: AdminClient | None = None) -> None:
        self._options = options
        self._admin = admin if admin is not None else admin_client(options.client_config)
        # ListOffsets' isolation level (KIP-98): with read_committed "latest" is the last
        # stable offset, where a read_committed Fetch stops while a transaction is open.
        self._isolation = 1 if options.read_committed else 0

    def close(self) -> None:
        self._admin.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ partitions

    def partitions(self) -> list[TopicPartition]:
        """The topic-partitions the read covers now, sorted."""
        strategy = self._options.strategy
        if isinstance(strategy, Assign):
            return sorted(set(strategy.partitions))
        if isinstance(strategy, Subscribe):
            topics = list(strategy.topics)
        else:
            assert isinstance(strategy, SubscribePattern)
            topics = [t for t in self._admin.list_topics() if strategy.matches(t)]
        if not topics:
            return []
        described = self._admin.describe_topics(topics)
        found: list[TopicPartition] = []
        for description in described.values_by_item.values():
            found.extend(description.topic_partitions)
        return sorted(found)

    # ------------------------------------------------------------------ offsets

    def earliest(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list(dict.fromkeys(partitions, EARLIEST))

    def latest(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list(dict.fromkeys(partitions, LATEST))

    def resolve(
        self, limit: OffsetLimit, partitions: Collection[TopicPartition], *, which: str
    ) -> dict[TopicPartition, int]:
        """Offsets of ``limit`` for ``partitions``; ``which`` ("starting"/"ending") names the
        option in error messages.

        Raises:
            ValueError: per-partition values that miss partitions of an ``assign`` read, or a
                timestamp with no offset (strategy ``error``).
        """
        if not partitions:
            return {}
        if limit == "earliest":
            return self.earliest(partitions)
        if limit == "latest":
            return self.latest(partitions)
        if isinstance(limit, PartitionOffsets):
            given = self._covering(limit.offsets, partitions, f"{which}Offsets")
            return self._list(given)
        if isinstance(limit, GlobalTimestamp):
            return self._by_timestamp(dict.fromkeys(partitions, limit.timestamp), which)
        assert isinstance(limit, PartitionTimestamps)
        given = self._covering(limit.timestamps, partitions, f"{which}OffsetsByTimestamp")
        stamps = {tp: v for tp, v in given.items() if v not in (EARLIEST, LATEST)}
        positions = {tp: v for tp, v in given.items() if v in (EARLIEST, LATEST)}
        return {**self._list(positions), **self._by_timestamp(stamps, which)}

    def commit_group(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commits ``offsets`` for ``group_id`` from outside the group (the group must have no
        active members; a streaming query is the only writer of its group).

        Raises:
            KafkaError: the first partition the coordinator refused.
        """
        if not offsets:
            return
        result = self._admin.alter_group_offsets(group_id, dict(offsets))
        for error in result.errors.values():
            raise error

    # ------------------------------------------------------------------ internals

    def _covering(
        self,
        given: Mapping[TopicPartition, int],
        partitions: Collection[TopicPartition],
        option: str,
    ) -> dict[TopicPartition, int]:
        wanted = set(partitions)
        if isinstance(self._options.strategy, Assign) and set(given) != wanted:
            raise ValueError(
                f"If {option} contains specific offsets, you must specify all "
                f"TopicPartitions.\nUse -1 for latest, -2 for earliest.\n"
                f"Specified: {_names(given)} Assigned: {_names(wanted)}"
            )
        return {tp: given.get(tp, EARLIEST) for tp in wanted}

    def _list(self, specs: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Offsets for -2 / -1 values (looked up) and plain offsets (kept)."""
        lookups = {tp: v for tp, v in specs.items() if v in (EARLIEST, LATEST)}
        out = {tp: v for tp, v in specs.items() if v not in (EARLIEST, LATEST)}
        if lookups:
            answers = self._admin.list_offsets(lookups, isolation_level=self._isolation)
            for tp in lookups:
                out[tp] = answers[tp].offset  # raises the partition's error
        return out

    def _by_timestamp(
        self, stamps: Mapping[TopicPartition, int], which: str
    ) -> dict[TopicPartition, int]:
        if not stamps:
            return {}
        answers = self._admin.list_offsets(dict(stamps), isolation_level=self._isolation)
        out: dict[TopicPartition, int] = {}
        missing: list[TopicPartition] = []
        for tp, stamp in stamps.items():
            offset = answers[tp].offset
            if offset >= 0:
                out[tp] = offset
                continue
            strategy: Literal["error", "latest"] = self._options.timestamp_strategy
            if which == "ending" or strategy == "latest":
                missing.append(tp)
            else:
                raise ValueError(
                    f"No offset matched from request of topic-partition {tp} and timestamp {stamp}."
                )
        out.update(self.latest(missing))
        return out


def _names(partitions: Collection[TopicPartition]) -> str:
    return "[" + ", ".join(str(tp) for tp in sorted(partitions)) + "]"

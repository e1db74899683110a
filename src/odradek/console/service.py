"""``ConsoleService``: the broker calls behind every console page, answering with ``views``.

It owns one ``AdminClient`` (topics, configs, offsets, groups, the cluster) and one
``SimpleConsumer`` (the message browser, the next unconsumed record of a lagging partition).
Both serialise their calls, so the service may be shared by the web server's worker threads;
every method blocks until the broker answered (or ``timeout_ms`` passed).

Errors: input that cannot be used raises ``ConsoleInputError``; a topic or group that does not
exist raises ``ConsoleNotFoundError``; what the broker refuses raises its ``KafkaError``. The web
layer turns each into a page with one clear line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import (
    ConfigResource,
    ListOffsetsResultInfo,
    NewTopic,
    OffsetSpec,
    TopicDescription,
)
from odradek.client.closeable import Closeable
from odradek.client.simple_consumer import Message, SimpleConsumer
from odradek.console import broker_http
from odradek.console.inputs import (
    ConsoleInputError,
    ConsoleNotFoundError,
    ResetSpec,
    parse_int,
    parse_partition,
    parse_start_offset,
    parse_timestamp_ms,
    parse_topic_name,
)
from odradek.console.lag import read_group_lag
from odradek.console.views import (
    ClusterView,
    GroupRow,
    GroupView,
    MessageRow,
    RebalancesView,
    ResetRow,
    TopicRow,
    TopicView,
    cluster_view,
    group_rows,
    group_view,
    message_rows,
    partition_sizes,
    rebalances_view,
    reset_plan,
    topic_rows,
    topic_view,
)
from odradek.errors import KafkaError, UnknownTopicOrPartitionError

__all__ = ["ConsoleService", "MessagesPage"]

CLIENT_ID: Final = "odradek-console"
DEFAULT_TIMEOUT_MS: Final = 10_000
#: Records the message browser shows at most on one page.
MAX_LIMIT: Final = 500
#: The longest wait for a coordinator's HTTP endpoint (the rebalance history).
REBALANCES_TIMEOUT_S: Final = 2.0
#: Bytes one browser fetch asks for per partition.
FETCH_BYTES: Final = 1_048_576


@dataclass(frozen=True, slots=True)
class MessagesPage:
    """One page of the message browser: where it starts and the records found."""

    topic: str
    partition: int
    partition_count: int
    start_offset: int
    log_start_offset: int
    log_end_offset: int
    rows: tuple[MessageRow, ...]
    notice: str | None

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts; None when this one reached the log end."""
        following = self.rows[-1].offset + 1 if self.rows else self.start_offset
        return following if following < self.log_end_offset else None


class ConsoleService(Closeable):
    """The console's broker calls (see the module docstring).

    Args:
        bootstrap_servers: ``host:port[,...]``.
        clock: the time source (lag in seconds is measured against ``now_ms``).
        timeout_ms: the longest one broker call may take, retries included.
        settings: more client settings (security.protocol, ssl.*, sasl.*: the identity the
            service acts as).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        settings = {
            **(settings or {}),
            "bootstrap.servers": bootstrap_servers,
            "client.id": CLIENT_ID,
            "default.api.timeout.ms": timeout_ms,
        }
        self.bootstrap_servers = bootstrap_servers
        self._clock = clock
        self._admin = AdminClient(settings, clock=clock)
        self._consumer = SimpleConsumer(settings, clock=clock)

    def close(self) -> None:
        self._admin.close()
        self._consumer.close()

    # ------------------------------------------------------------------ cluster and topics

    def cluster(self) -> ClusterView:
        return cluster_view(self._admin.describe_cluster())

    def topics(self, *, include_internal: bool = True) -> list[TopicRow]:
        names = self._admin.list_topics(include_internal=include_internal)
        descriptions = list(self._admin.describe_topics(names).values_by_item.values())
        starts, ends = self._offsets(descriptions)
        return topic_rows(descriptions, starts, ends, self._sizes(descriptions))

    def topic(self, name: str) -> TopicView:
        description = self._describe(name)
        starts, ends = self._offsets([description])
        configs = self._admin.describe_configs([ConfigResource.topic(name)])
        return topic_view(
            description,
            starts,
            ends,
            self._sizes([description]),
            configs.values_by_item.get(ConfigResource.topic(name), {}),
        )

    def log_end_offsets(self, topic: str | None = None) -> dict[str, Any]:
        """The log end offsets now, for the throughput charts: ``{"now_ms", "total",
        "partitions": {"topic/partition": offset}}`` over one topic, or every non-internal
        topic (``topic`` None)."""
        names = [topic] if topic is not None else self._admin.list_topics()
        descriptions = [self._describe(topic)] if topic is not None else []
        if topic is None and names:
            descriptions = list(self._admin.describe_topics(names).values_by_item.values())
        _, ends = self._offsets(descriptions, earliest=False)
        return {
            "now_ms": self._clock.now_ms(),
            "total": sum(ends.values()),
            "partitions": {f"{tp.topic}/{tp.partition}": end for tp, end in sorted(ends.items())},
        }

    def create_topic(self, name: str, partitions: str, replication_factor: str) -> str:
        """Creates a topic; returns its name. Empty counts take the broker's defaults."""
        topic = parse_topic_name(name)
        count = -1 if not partitions.strip() else parse_int(partitions, "partitions", minimum=1)
        factor = (
            -1
            if not replication_factor.strip()
            else parse_int(replication_factor, "replication factor", minimum=1, maximum=32_767)
        )
        self._admin.create_topics([NewTopic(topic, count, factor)]).all()
        return topic

    def delete_topic(self, name: str) -> None:
        topic = parse_topic_name(name)
        self._describe(topic)
        self._admin.delete_topics([topic]).all()

    def alter_config(self, topic: str, config: str, value: str | None) -> None:
        """Sets a topic config (``value`` None: removes the override, back to the default)."""
        self._describe(topic)
        name = config.strip()
        if not name:
            raise ConsoleInputError("a config name is required")
        resource = ConfigResource.topic(topic)
        self._admin.alter_configs({resource: {name: value}}).all()

    # ------------------------------------------------------------------ messages

    def messages(
        self,
        topic: str,
        partition: str | None,
        offset: str | None = None,
        timestamp: str | None = None,
        limit: str | None = None,
    ) -> MessagesPage:
        """Records of one partition from an offset (``earliest``, ``latest`` = the last
        ``limit`` records, or a number) or from the first record at or after a time."""
        description = self._describe(topic)
        count = len(description.partitions)
        number = parse_partition(partition or "0", count)
        wanted = parse_int(limit or "50", "limit", minimum=1, maximum=MAX_LIMIT)
        tp = TopicPartition(topic, number)
        start_info = self._admin.list_offsets({tp: OffsetSpec.earliest()})[tp]
        end_info = self._admin.list_offsets({tp: OffsetSpec.latest()})[tp]
        log_start, log_end = start_info.offset, end_info.offset
        notice = None
        if timestamp and timestamp.strip():
            millis = parse_timestamp_ms(timestamp)
            found: ListOffsetsResultInfo = self._admin.list_offsets({tp: millis})[tp]
            if found.offset < 0:
                start = log_end
                notice = "no record at or after that time"
            else:
                start = found.offset
        else:
            where = parse_start_offset(offset)
            if where == "earliest":
                start = log_start
            elif where == "latest":
                start = max(log_end - wanted, log_start)
            else:
                start = where
                if not log_start <= start <= log_end:
                    raise ConsoleInputError(
                        f"offset {start} is outside partition {number}'s records: offsets "
                        f"{log_start} to {log_end - 1}"
                        if log_end > log_start
                        else f"offset {start}: partition {number} holds no records "
                        f"(its log end offset is {log_end})"
                    )
        rows = self._read(topic, number, start, log_end, wanted)
        if not rows and notice is None and start >= log_end:
            notice = "no records from here (the log end)"
        return MessagesPage(
            topic, number, count, start, log_start, log_end, tuple(message_rows(rows)), notice
        )

    def _read(self, topic: str, partition: int, start: int, end: int, limit: int) -> list[Message]:
        found: list[Message] = []
        position = start
        while position < end and len(found) < limit:
            batch = self._consumer.fetch(topic, partition, position, FETCH_BYTES)
            if not batch:
                break
            found.extend(batch[: limit - len(found)])
            position = batch[-1].offset + 1
        return found

    # ------------------------------------------------------------------ groups

    def groups(self) -> list[GroupRow]:
        listings = self._admin.list_groups()
        ids = [g.group_id for g in listings]
        descriptions = self._admin.describe_groups(ids).values_by_item if ids else {}
        return group_rows(listings, descriptions)

    def rebalances(self, group_id: str) -> RebalancesView:
        """The group's last rebalances from its coordinator's HTTP endpoint (no Kafka API
        carries them); when they cannot be read the view says why instead (the page stays)."""
        try:
            records = broker_http.rebalances(self._admin, group_id, REBALANCES_TIMEOUT_S)
        except (broker_http.BrokerHttpError, KafkaError) as error:
            return rebalances_view([], f"The rebalance history cannot be shown: {error}")
        return rebalances_view(records, None)

    def group(self, group_id: str) -> GroupView:
        if not group_id:
            raise ConsoleInputError("a group id is required")
        description = self._admin.describe_groups([group_id])[group_id]
        committed = self._admin.list_group_offsets(group_id).values_by_item
        if description.state == "Dead" and not any(committed.values()):
            raise ConsoleNotFoundError(f"no consumer group {group_id!r}")
        partitions = {tp for tp, meta in committed.items() if meta is not None}
        partitions.update(tp for m in description.members for tp in m.assignment)
        lag = read_group_lag(
            self._admin, self._consumer, group_id, self._clock.now_ms(), sorted(partitions)
        )
        return group_view(description, lag)

    def reset_offsets(
        self, group_id: str, topic: str | None, spec: ResetSpec, *, execute: bool
    ) -> list[ResetRow]:
        """The new offsets of the group's partitions (of ``topic``, or every topic it has
        offsets for); applied only with ``execute``, and only while the group is inactive."""
        view = self.group(group_id)
        if topic:
            description = self._describe(topic)
            partitions = description.topic_partitions
        else:
            partitions = [TopicPartition(r.topic, r.partition) for r in view.lags]
        if not partitions:
            raise ConsoleInputError(f"group {group_id!r} has no offsets: name a topic")
        if execute and not view.is_inactive:
            raise ConsoleInputError(
                f"group {group_id!r} is {view.state} with {len(view.members)} member(s): offsets"
                " can be reset only while it has none (stop its consumers first)"
            )
        committed = {
            tp: meta.offset
            for tp, meta in self._admin.list_group_offsets(
                group_id, partitions
            ).values_by_item.items()
            if meta is not None
        }
        starts = self._list(partitions, OffsetSpec.EARLIEST_TIMESTAMP)
        ends = self._list(partitions, OffsetSpec.LATEST_TIMESTAMP)
        by_time = self._list(partitions, spec.value) if spec.strategy == "timestamp" else None
        plan = reset_plan(spec, partitions, committed, starts, ends, by_time)
        if execute and plan:
            offsets = {TopicPartition(r.topic, r.partition): r.new_offset for r in plan}
            self._admin.alter_group_offsets(group_id, offsets).all()
        return plan

    # ------------------------------------------------------------------ plumbing

    def _describe(self, topic: str) -> TopicDescription:
        name = parse_topic_name(topic)
        try:
            return self._admin.describe_topics([name])[name]
        except UnknownTopicOrPartitionError:
            raise ConsoleNotFoundError(f"no topic {name!r}") from None

    def _list(self, partitions: Sequence[TopicPartition], spec: int) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        answer = self._admin.list_offsets(dict.fromkeys(partitions, spec)).values_by_item
        return {tp: info.offset for tp, info in answer.items() if info.offset >= 0}

    def _offsets(
        self, descriptions: Sequence[TopicDescription], *, earliest: bool = True
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        partitions = [tp for d in descriptions for tp in d.topic_partitions]
        starts = self._list(partitions, OffsetSpec.EARLIEST_TIMESTAMP) if earliest else {}
        return starts, self._list(partitions, OffsetSpec.LATEST_TIMESTAMP)

    def _sizes(self, descriptions: Sequence[TopicDescription]) -> dict[TopicPartition, int]:
        if not descriptions:
            return {}
        leaders = {
            TopicPartition(d.name, p.partition): p.leader
            for d in descriptions
            for p in d.partitions
        }
        try:
            dirs = self._admin.describe_log_dirs(topics=[d.name for d in descriptions])
        except KafkaError:  # sizes are a nicety: a page does without them
            return {}
        return partition_sizes(dirs.values_by_item, leaders)

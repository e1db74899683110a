"""The Prometheus collector: a ``BrokerSnapshot`` as metric families, Kafka's names mapped to
Prometheus conventions (``kafka_<group>_<type>_<name>``, lower case, units and ``_total`` as
suffixes, the MBean's tags as labels):

==========================================================  =====================================
kafka.server:BrokerTopicMetrics BytesInPerSec / MessagesIn  ``kafka_server_brokertopicmetrics_
/ BytesOutPerSec (topic=…)                                  {bytesin,messagesin,bytesout}_total``
kafka.network:RequestMetrics RequestsPerSec, RequestQueue-  ``kafka_network_requestmetrics_
TimeMs, TotalTimeMs (request=…)                             {requests_total,requestqueuetime_
                                                            seconds,totaltime_seconds}``
kafka.network:SocketServer NetworkProcessorAvgIdlePercent   ``kafka_network_socketserver_
                                                            networkprocessoravgidle_ratio``
kafka.log:LogFlushStats LogFlushRateAndTimeMs               ``kafka_log_logflushstats_logflush_
                                                            seconds`` (count, sum)
kafka.log:Log Size / NumLogSegments / LogStartOffset /      ``kafka_log_log_{size_bytes,
LogEndOffset (topic, partition)                             numlogsegments,logstartoffset,
                                                            logendoffset}``
kafka.server:ReplicaManager UnderReplicatedPartitions,      ``kafka_server_replicamanager_…``
UnderMinIsrPartitionCount, PartitionCount, LeaderCount,
IsrShrinksPerSec, IsrExpandsPerSec
kafka.controller:KafkaController ActiveControllerCount,     ``kafka_controller_kafkacontroller_…``
OfflinePartitionsCount
kafka.coordinator.group:GroupMetadataManager NumGroups…     ``kafka_coordinator_group_
                                                            groupmetadatamanager_numgroups
                                                            {state=…}``
==========================================================  =====================================

odradek's own: ``odradek_group_rebalances_total`` and ``odradek_group_members`` per group,
``kafka_consumergroup_lag`` / ``kafka_consumergroup_lag_seconds`` /
``kafka_consumergroup_current_offset`` per group and partition (the names lag exporters use),
``odradek_event_loop_cpu_seconds_total``, ``odradek_network_connections``. The process's
RSS, file descriptors and GC come from prometheus_client's own collectors (``http``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from odradek.broker.metrics.loop import LoopBusy
from odradek.broker.metrics.snapshot import BrokerSnapshot
from odradek.protocol import ApiKey

Family = CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily | SummaryMetricFamily


def _api_name(api_key: int) -> str:
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return str(api_key)


class BrokerCollector(Collector):
    """Yields the broker's families from a fresh snapshot at every scrape.

    Args:
        snapshot: takes a ``BrokerSnapshot`` (the endpoint's, run on the event loop); raising
            makes the scrape fail (HTTP 500), never the broker.
        loop_busy: the event loop's CPU clock (None: not reported).
    """

    def __init__(
        self, snapshot: Callable[[], BrokerSnapshot], loop_busy: LoopBusy | None = None
    ) -> None:
        self._snapshot = snapshot
        self._loop_busy = loop_busy

    def describe(self) -> Iterable[Family]:
        return ()  # no collect() at registration: the loop may not run yet

    def collect(self) -> Iterator[Family]:
        snap = self._snapshot()
        yield from _topic_families(snap)
        yield from _request_families(snap)
        yield from _log_families(snap)
        yield from _replica_families(snap)
        yield from _group_families(snap)
        yield from self._loop_families()
        connections = GaugeMetricFamily(
            "odradek_network_connections", "Client connections open on the listener."
        )
        connections.add_metric([], snap.connections)
        yield connections

    def _loop_families(self) -> Iterator[Family]:
        if self._loop_busy is None:
            return
        cpu = self._loop_busy.cpu_seconds()
        if cpu is not None:
            yield CounterMetricFamily(
                "odradek_event_loop_cpu_seconds",
                "CPU time of the event-loop thread (rate() of it is the busy fraction).",
                value=cpu,
            )
        busy = self._loop_busy.busy_fraction()
        if busy is not None:
            yield GaugeMetricFamily(
                "kafka_network_socketserver_networkprocessoravgidle_ratio",
                "Share of wall time the event loop was not on the CPU since the last scrape "
                "(Kafka's NetworkProcessorAvgIdlePercent).",
                value=1.0 - busy,
            )


def _topic_families(snap: BrokerSnapshot) -> Iterator[Family]:
    names = {
        "bytes_in": ("bytesin", "Bytes appended by producers to partitions led here."),
        "messages_in": ("messagesin", "Records appended by producers to partitions led here."),
        "bytes_out": ("bytesout", "Record bytes read by consumer fetches (not replication)."),
    }
    per_topic: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in snap.partitions:
        per_topic[p.topic]["bytes_in"] += p.bytes_in
        per_topic[p.topic]["messages_in"] += p.messages_in
        per_topic[p.topic]["bytes_out"] += p.bytes_out
    for attribute, (name, documentation) in names.items():
        family = CounterMetricFamily(
            f"kafka_server_brokertopicmetrics_{name}", documentation, labels=["topic"]
        )
        for topic, counts in sorted(per_topic.items()):
            family.add_metric([topic], counts[attribute])
        yield family


def _request_families(snap: BrokerSnapshot) -> Iterator[Family]:
    requests = CounterMetricFamily(
        "kafka_network_requestmetrics_requests", "Requests answered, by API.", labels=["request"]
    )
    queue = HistogramMetricFamily(
        "kafka_network_requestmetrics_requestqueuetime_seconds",
        "Time from the read that brought a request to the start of its handling.",
        labels=["request"],
    )
    total = HistogramMetricFamily(
        "kafka_network_requestmetrics_totaltime_seconds",
        "Time from the read that brought a request to its response's write.",
        labels=["request"],
    )
    for api in snap.requests:
        name = _api_name(api.api_key)
        requests.add_metric([name], api.total.count)
        queue.add_metric([name], api.queue.cumulative(), api.queue.sum_s)
        total.add_metric([name], api.total.cumulative(), api.total.sum_s)
    yield requests
    yield queue
    yield total


def _log_families(snap: BrokerSnapshot) -> Iterator[Family]:
    flush = SummaryMetricFamily(
        "kafka_log_logflushstats_logflush_seconds",
        "fsyncs of logs and the time they took.",
        count_value=snap.flushes,
        sum_value=snap.flush_seconds,
    )
    yield flush
    gauges = {
        "size_bytes": "Bytes of the partition's segments.",
        "numlogsegments": "Segments of the partition.",
        "logstartoffset": "The partition's log start offset.",
        "logendoffset": "The partition's log end offset.",
    }
    families = {
        name: GaugeMetricFamily(f"kafka_log_log_{name}", doc, labels=["topic", "partition"])
        for name, doc in gauges.items()
    }
    for p in snap.partitions:
        labels = [p.topic, str(p.partition)]
        families["size_bytes"].add_metric(labels, p.size_bytes)
        families["numlogsegments"].add_metric(labels, p.segments)
        families["logstartoffset"].add_metric(labels, p.log_start_offset)
        families["logendoffset"].add_metric(labels, p.log_end_offset)
    yield from families.values()


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _replica_families(snap: BrokerSnapshot) -> Iterator[Family]:
    prefix = "kafka_server_replicamanager_"
    parts = snap.partitions
    yield _gauge(f"{prefix}partitioncount", "Partitions hosted here.", len(parts))
    yield _gauge(f"{prefix}leadercount", "Partitions led here.", sum(1 for p in parts if p.leader))
    yield _gauge(
        f"{prefix}underreplicatedpartitions",
        "Partitions led here whose ISR is smaller than their replica set.",
        sum(1 for p in parts if p.under_replicated),
    )
    yield _gauge(
        f"{prefix}underminisrpartitioncount",
        "Partitions led here whose ISR is smaller than min.insync.replicas.",
        sum(1 for p in parts if p.under_min_isr),
    )
    yield CounterMetricFamily(
        f"{prefix}isrshrinks", "ISR shrinks committed by this leader.", value=snap.isr_shrinks
    )
    yield CounterMetricFamily(
        f"{prefix}isrexpands", "ISR expands committed by this leader.", value=snap.isr_expands
    )
    yield _gauge(
        "kafka_controller_kafkacontroller_activecontrollercount",
        "1 on the active controller, else 0.",
        1 if snap.active_controller else 0,
    )
    yield _gauge(
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "Partitions without a leader (reported by the active controller).",
        snap.offline_partitions,
    )


def _group_families(snap: BrokerSnapshot) -> Iterator[Family]:
    by_state = GaugeMetricFamily(
        "kafka_coordinator_group_groupmetadatamanager_numgroups",
        "Groups this broker coordinates, by state.",
        labels=["state"],
    )
    counts: dict[str, int] = defaultdict(int)
    for g in snap.groups:
        counts[g.state] += 1
    for state in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"):
        by_state.add_metric([state], counts.pop(state, 0))
    for state, count in sorted(counts.items()):
        by_state.add_metric([state], count)
    yield by_state
    rebalances = CounterMetricFamily(
        "odradek_group_rebalances", "Rebalances since the group was loaded.", labels=["group"]
    )
    members = GaugeMetricFamily("odradek_group_members", "Members.", labels=["group"])
    for g in snap.groups:
        rebalances.add_metric([g.group_id], g.rebalances)
        members.add_metric([g.group_id], g.members)
    yield rebalances
    yield members
    labels = ["group", "topic", "partition"]
    lag = GaugeMetricFamily(
        "kafka_consumergroup_lag", "High watermark minus committed offset.", labels=labels
    )
    seconds = GaugeMetricFamily(
        "kafka_consumergroup_lag_seconds",
        "Age of the next unconsumed record (now minus its timestamp); 0 when caught up.",
        labels=labels,
    )
    current = GaugeMetricFamily(
        "kafka_consumergroup_current_offset", "Committed offset.", labels=labels
    )
    for entry in snap.lags:
        values = [entry.group_id, entry.topic, str(entry.partition)]
        lag.add_metric(values, entry.lag_offsets)
        current.add_metric(values, entry.committed_offset)
        if entry.lag_seconds is not None:
            seconds.add_metric(values, entry.lag_seconds)
    yield lag
    yield seconds
    yield current


__all__ = ["BrokerCollector"]

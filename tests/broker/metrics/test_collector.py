"""``metrics.snapshot`` + ``metrics.collector``: a broker's state read through ``BrokerParts``
becomes Kafka-named Prometheus families — partition health counts, ISR changes, the active
controller, groups by state, per-API histograms — checked in the text format a scrape gets."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest

from odradek._types import TopicPartition
from odradek.broker.metrics import (
    BrokerCollector,
    BrokerParts,
    LagReader,
    LoopBusy,
    RequestMetrics,
    take_snapshot,
)
from odradek.protocol import ApiKey


@dataclass
class FakeLog:
    size_bytes: int = 1000
    flushes: int = 2
    flush_seconds: float = 0.5

    def segments(self) -> list[object]:
        return [object(), object()]


@dataclass
class FakePartition:
    isr: list[int]
    replicas: list[int]
    min_insync_replicas: int = 1
    is_leader: bool = True
    high_watermark: int = 10
    log_end_offset: int = 10
    log_start_offset: int = 0
    bytes_in: int = 100
    messages_in: int = 5
    bytes_out: int = 40
    log: FakeLog = field(default_factory=FakeLog)

    def read(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("no lag is asked of these partitions")


class State(enum.Enum):
    STABLE = "Stable"
    EMPTY = "Empty"


@dataclass
class Offset:
    offset: int


@dataclass
class History:
    total: int


@dataclass
class FakeGroup:
    group_id: str
    state: State
    members: dict[str, object]
    rebalances: History
    offsets: dict[TopicPartition, Offset] = field(default_factory=dict)


@dataclass
class FakeCoordinator:
    listed: list[FakeGroup]

    def groups(self) -> list[FakeGroup]:
        return self.listed


def scrape(parts: BrokerParts, requests: RequestMetrics) -> dict[str, float]:
    registry = CollectorRegistry(auto_describe=False)
    snapshot = lambda: take_snapshot(parts, LagReader(), requests.snapshot(), 0)  # noqa: E731
    registry.register(BrokerCollector(snapshot))
    samples = {}
    for line in generate_latest(registry).decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_partition_health_controller_groups_and_requests() -> None:
    partitions = {
        TopicPartition("a", 0): FakePartition(isr=[1, 2, 3], replicas=[1, 2, 3]),
        TopicPartition("a", 1): FakePartition(isr=[1], replicas=[1, 2, 3], min_insync_replicas=2),
        TopicPartition("b", 0): FakePartition(isr=[1, 2], replicas=[1, 2, 3]),
        # A follower's small ISR is its leader's business.
        TopicPartition("b", 1): FakePartition(isr=[2], replicas=[1, 2], is_leader=False),
    }
    coordinator = FakeCoordinator(
        [
            FakeGroup("g1", State.STABLE, {"m1": object(), "m2": object()}, History(3)),
            FakeGroup("g2", State.EMPTY, {}, History(0)),
        ]
    )
    parts = BrokerParts(
        broker_id=1,
        partitions=lambda: partitions,
        coordinators=lambda: [coordinator],
        controller_active=lambda: True,
        offline_partitions=lambda: 4,
        isr_changes=lambda: (7, 5),
        connections=lambda: 9,
    )
    requests = RequestMetrics()
    requests.record(ApiKey.PRODUCE, 0.0002, 0.003)
    requests.record(ApiKey.PRODUCE, 0.0, 20.0)  # past the last bucket: +Inf only
    requests.record(ApiKey.FETCH, 0.001, 0.5)
    samples = scrape(parts, requests)
    prefix = "kafka_server_replicamanager_"
    assert samples[f"{prefix}partitioncount"] == 4
    assert samples[f"{prefix}leadercount"] == 3
    assert samples[f"{prefix}underreplicatedpartitions"] == 2
    assert samples[f"{prefix}underminisrpartitioncount"] == 1
    assert samples[f"{prefix}isrshrinks_total"] == 7
    assert samples[f"{prefix}isrexpands_total"] == 5
    assert samples["kafka_controller_kafkacontroller_activecontrollercount"] == 1
    assert samples["kafka_controller_kafkacontroller_offlinepartitionscount"] == 4
    assert samples['kafka_server_brokertopicmetrics_bytesin_total{topic="a"}'] == 200
    assert samples['kafka_server_brokertopicmetrics_messagesin_total{topic="b"}'] == 10
    assert samples['kafka_log_log_numlogsegments{partition="1",topic="b"}'] == 2
    assert samples["kafka_log_logflushstats_logflush_seconds_count"] == 8
    assert samples["kafka_log_logflushstats_logflush_seconds_sum"] == 2.0
    groups = "kafka_coordinator_group_groupmetadatamanager_numgroups"
    assert samples[f'{groups}{{state="Stable"}}'] == 1
    assert samples[f'{groups}{{state="Empty"}}'] == 1
    assert samples[f'{groups}{{state="PreparingRebalance"}}'] == 0
    assert samples['odradek_group_rebalances_total{group="g1"}'] == 3
    assert samples['odradek_group_members{group="g1"}'] == 2
    assert samples["odradek_network_connections"] == 9
    total = "kafka_network_requestmetrics_totaltime_seconds"
    assert samples[f'{total}_count{{request="Produce"}}'] == 2
    assert samples[f'{total}_bucket{{le="0.0025",request="Produce"}}'] == 0
    assert samples[f'{total}_bucket{{le="0.005",request="Produce"}}'] == 1
    assert samples[f'{total}_bucket{{le="10.0",request="Produce"}}'] == 1
    assert samples[f'{total}_bucket{{le="+Inf",request="Produce"}}'] == 2
    assert samples[f'{total}_sum{{request="Produce"}}'] == 20.003
    queue = "kafka_network_requestmetrics_requestqueuetime_seconds"
    assert samples[f'{queue}_bucket{{le="0.00025",request="Produce"}}'] == 2
    assert samples['kafka_network_requestmetrics_requests_total{request="Fetch"}'] == 1


def test_the_loop_busy_fraction_is_measured_from_its_thread_clock() -> None:
    busy = LoopBusy()  # made on this thread: it reads this thread's CPU clock
    started = time.monotonic()
    while time.monotonic() - started < 0.05:  # burn CPU on this thread
        pass
    fraction = busy.busy_fraction()
    assert fraction is not None
    assert 0.0 < fraction <= 1.0
    cpu = busy.cpu_seconds()
    assert cpu is not None
    assert cpu > 0

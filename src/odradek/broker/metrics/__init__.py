"""The broker's metrics: a Prometheus endpoint, consumer lag, request timing.

The one place ``prometheus_client`` is imported (import-linter keeps it so). The API:

- ``MetricsServer`` (``http``): the endpoint — ``/metrics``, ``/groups/<g>/rebalances``,
  ``/groups/<g>/lag`` — on a thread of its own, reading the broker on its event loop.
- ``BrokerParts`` / ``take_snapshot`` / ``BrokerSnapshot`` (``snapshot``): what one scrape
  reads, as frozen values (``PartitionStats``, ``GroupStats``, ``GroupLag``).
- ``LagReader`` (``lag``): lag per group and partition in offsets and seconds; in a cluster
  the coordinator's, with ``LeaderPosition``s of partitions led elsewhere (``remote_pairs``
  names them, ``broker.leader_positions`` asks their leaders, ``gather_snapshot`` does both).
- ``RequestMetrics`` (``requests``): per-API queue / total time histograms, fed by the server.
- ``BrokerCollector`` (``collector``): the snapshot as Prometheus families (the name mapping
  from Kafka's MBeans is in its docstring).
- ``settings``: ``metrics.port``, ``metrics.host``, ``metric.reporters``.

Imports nothing of the broker's other modules (``broker.config`` imports ``settings``): the
app wires the broker's objects into ``BrokerParts``.
"""

from odradek.broker.metrics.collector import BrokerCollector
from odradek.broker.metrics.http import LoopUnavailableError, MetricsServer
from odradek.broker.metrics.lag import (
    GroupLag,
    LagReader,
    LeaderPosition,
    remote_pairs,
    timestamp_in,
)
from odradek.broker.metrics.loop import LoopBusy
from odradek.broker.metrics.requests import ApiTimes, Histogram, RequestMetrics
from odradek.broker.metrics.settings import (
    DEFAULT_METRICS_PORT,
    PROMETHEUS_REPORTER,
    metrics_endpoint,
)
from odradek.broker.metrics.snapshot import (
    BrokerParts,
    BrokerSnapshot,
    GroupStats,
    PartitionStats,
    gather_snapshot,
    take_snapshot,
)

__all__ = [
    "DEFAULT_METRICS_PORT",
    "PROMETHEUS_REPORTER",
    "ApiTimes",
    "BrokerCollector",
    "BrokerParts",
    "BrokerSnapshot",
    "GroupLag",
    "GroupStats",
    "Histogram",
    "LagReader",
    "LeaderPosition",
    "LoopBusy",
    "LoopUnavailableError",
    "MetricsServer",
    "PartitionStats",
    "RequestMetrics",
    "gather_snapshot",
    "metrics_endpoint",
    "remote_pairs",
    "take_snapshot",
    "timestamp_in",
]

"""The Prometheus endpoint's settings: ``metrics.port``, ``metrics.host``, ``metric.reporters``.

``metrics.port`` (odradek's own; -1, the default, leaves the endpoint off; 0 picks a free port)
turns the endpoint on. So does Kafka's ``metric.reporters`` naming the Prometheus reporter
(``odradek.broker.metrics.PrometheusReporter``, or ``prometheus``), on ``DEFAULT_METRICS_PORT``
unless ``metrics.port`` is given too. Kafka's default reporter (``JmxReporter``) is accepted
and has no effect; any other class name is refused, naming the ones that exist.
``metrics.host`` defaults to the first listener's host.

Imports nothing of the broker: ``broker.config`` parses with ``parse_reporters``.
"""

from __future__ import annotations

from odradek.errors import ConfigError

PROMETHEUS_REPORTER = "odradek.broker.metrics.PrometheusReporter"
JMX_REPORTER = "org.apache.kafka.common.metrics.JmxReporter"
_ALIASES = {"prometheus": PROMETHEUS_REPORTER, PROMETHEUS_REPORTER: PROMETHEUS_REPORTER}
#: Where the endpoint listens when ``metric.reporters`` turns it on without ``metrics.port``.
DEFAULT_METRICS_PORT = 9404


def parse_reporters(name: str, raw: str) -> tuple[str, ...]:
    """The reporters ``raw`` (a comma-separated list) names, JmxReporter dropped.

    Raises:
        ConfigError: an entry that is no reporter odradek has.
    """
    reporters: list[str] = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry or entry == JMX_REPORTER:
            continue
        reporter = _ALIASES.get(entry)
        if reporter is None:
            raise ConfigError(
                f"invalid value {raw!r} for {name}: unknown reporter {entry!r} (odradek has "
                f"{PROMETHEUS_REPORTER}, or 'prometheus'; {JMX_REPORTER} is accepted without "
                "effect)"
            )
        if reporter not in reporters:
            reporters.append(reporter)
    return tuple(reporters)


def metrics_endpoint(
    port: int, host: str | None, reporters: tuple[str, ...], listener_host: str
) -> tuple[str, int] | None:
    """Where the endpoint listens (host, port; port 0: a free one), or None when it is off."""
    if port < 0 and PROMETHEUS_REPORTER in reporters:
        port = DEFAULT_METRICS_PORT
    if port < 0:
        return None
    return (host if host is not None else listener_host), port

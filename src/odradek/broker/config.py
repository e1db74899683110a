"""``BrokerConfig``: the broker's static settings, by Kafka's names, from ``server.properties``.

Sources, later winning: Kafka's defaults (adapted where noted), a Java properties file, then
command-line overrides. Every value of a setting odradek implements must be valid, or
``ConfigError`` names the setting. A Kafka broker setting odradek does not implement (any name
in ``broker.kafka_settings``) is accepted and kept in ``unimplemented``: the broker logs one
warning line per such setting at start and DescribeConfigs reports it as having no effect. A
name that is not a Kafka setting at all is refused (a typo must not pass); nothing is silently
ignored.

Deviations from Kafka, on purpose:

- ``broker.id`` defaults to 0 and must be ≥ 0 (Kafka's -1 asks for a generated id, which we do
  not support).
- ``log.dir`` defaults to ``./data/kafka-logs``, relative to the process's working directory
  (Kafka: ``/tmp/kafka-logs``); relative ``log.dirs`` are kept as given and resolved against the
  working directory by the log manager, never against the properties file's directory.
- ``log.flush.scheduler.interval.ms`` defaults to 1000 (Kafka: Long.MAX, which never checks):
  it is only how often the flusher looks for logs past ``flush.ms`` / ``flush.messages``.
  Kafka also uses it as the default of ``log.flush.interval.ms``; we do so only when it is set
  explicitly, so our 1000 ms default does not turn into an fsync of every log every second.
- Listener security (``listener.security.protocol.map``, ``ssl.*``, ``sasl.*``) is read by
  ``broker.security.listeners`` into ``security``; ssl keystores must be PEM.
- ``node.id`` (KRaft's name of the broker's id) is the broker id when ``broker.id`` is not
  given; given both, they must agree.
- KRaft's settings (``process.roles``, ``controller.quorum.*``, ``controller.listener.names``,
  ``metadata.log.*``) are accepted with a warning of their own (``broker.kraft_settings``); the
  listeners ``controller.listener.names`` names are neither opened nor advertised.
- The properties file is read as UTF-8 (Java reads ISO-8859-1; both agree on ASCII).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.broker.auth.authorizer import AuthorizerConfig
from odradek.broker.group.config import GroupConfig
from odradek.broker.kafka_settings import KAFKA_BROKER_SETTINGS, kafka_setting_base
from odradek.broker.kraft_settings import (
    controller_listener_names,
    is_kraft_setting,
    kraft_warning,
)
from odradek.broker.limits import BrokerLimits, parse_overrides, render_overrides
from odradek.broker.metrics.settings import parse_reporters
from odradek.broker.properties import parse_properties
from odradek.broker.replica_selector import LEADER_SELECTOR, REPLICA_SELECTORS
from odradek.broker.security.listeners import SecurityConfig, described_default, is_security_setting
from odradek.broker.txn.config import TXN_SETTINGS, TransactionConfig
from odradek.errors import ConfigError
from odradek.storage.cleaner.config import BROKER_NAMES as CLEANER_BROKER_NAMES
from odradek.storage.cleaner.config import CleanerConfig
from odradek.storage.config import BROKER_NAMES, LogConfig, broker_synonyms

_MAX_SHORT = 2**15 - 1
_MAX_INT = 2**31 - 1
_MAX_LONG = 2**63 - 1

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"
DEFAULT_LOG_DIR = "./data/kafka-logs"


# --- values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    """The follower fetchers' settings (``broker/replication/fetcher.py``), Kafka's defaults.

    ``num.replica.fetchers``: fetcher tasks per source broker (a partition goes to one by a
    stable hash); ``replica.fetch.max.bytes``: bytes per partition per fetch (a larger first
    batch still comes whole); ``replica.fetch.response.max.bytes``: bytes per response;
    ``replica.fetch.wait.max.ms`` / ``replica.fetch.min.bytes``: how long the leader may hold
    a fetch for how much data; ``replica.fetch.backoff.ms``: the pause after a failed fetch.
    """

    num_replica_fetchers: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000


@dataclass(frozen=True, slots=True)
class Listener:
    """One ``listeners`` entry: ``NAME://host:port``.

    ``host`` ``""`` binds every interface (and, advertised, stands for this machine's host
    name, which the server fills in); ``port`` 0 binds an ephemeral port (and, advertised,
    stands for the port actually bound by the listener of the same name).
    """

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One broker setting as DescribeConfigs reports it.

    ``value`` is ``None`` for a setting without a value (Kafka's null). ``is_default`` means
    not set in the file or overrides (config source DEFAULT_CONFIG, else
    STATIC_BROKER_CONFIG). Every setting is ``read_only``: there are no dynamic broker configs
    yet. ``kafka_type`` is Kafka's ConfigDef type name (``"UNKNOWN"`` for odradek's own
    settings of no simple type); ``implemented`` is false for a Kafka setting odradek accepts
    without effect, whose ``documentation`` says so.
    """

    name: str
    value: str | None
    is_default: bool
    read_only: bool = True
    sensitive: bool = False
    kafka_type: str = "UNKNOWN"
    implemented: bool = True
    documentation: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """The broker's settings; build one with ``from_properties`` or ``from_mapping``.

    Fields are the Kafka settings of the same name (dots → underscores); ``log_config`` holds
    the ``log.*`` storage defaults of every topic; ``originals`` the settings given explicitly,
    normalised, in name order.
    """

    broker_id: int
    listeners: tuple[Listener, ...]
    advertised_listeners: tuple[Listener, ...]
    log_dirs: tuple[str, ...]
    num_partitions: int
    default_replication_factor: int
    auto_create_topics_enable: bool
    delete_topic_enable: bool
    message_max_bytes: int
    socket_request_max_bytes: int
    log_flush_scheduler_interval_ms: int
    log_retention_check_interval_ms: int
    log_flush_offset_checkpoint_interval_ms: int
    zookeeper_connect: str | None
    offsets_topic_num_partitions: int
    offsets_topic_replication_factor: int
    group_initial_rebalance_delay_ms: int
    log_config: LogConfig
    group_config: GroupConfig = field(default_factory=GroupConfig)
    cleaner_config: CleanerConfig = field(default_factory=CleanerConfig)
    limits: BrokerLimits = field(default_factory=BrokerLimits)
    originals: tuple[tuple[str, str], ...] = ()
    zookeeper_session_timeout_ms: int = 18_000
    #: ``None``: the session timeout (Kafka's default).
    zookeeper_connection_timeout_ms: int | None = None
    broker_rack: str | None = None
    #: KIP-392: which replica a consumer reads from (``broker.replica_selector``).
    replica_selector_class: str = LEADER_SELECTOR
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    replica_lag_time_max_ms: int = 30_000
    replica_high_watermark_checkpoint_interval_ms: int = 5_000
    #: How long a partition keeps an idle idempotent producer's state (KIP-98).
    producer_id_expiration_ms: int = 86_400_000
    #: How many incremental fetch sessions (KIP-227) the broker keeps (0: none).
    max_incremental_fetch_session_cache_slots: int = 1000
    #: ``num.replica.fetchers`` and ``replica.fetch.*`` (the follower fetchers).
    replica_fetchers: FetcherSettings = field(default_factory=FetcherSettings)
    #: How the group coordinator's appends to ``__consumer_offsets`` are acknowledged
    #: (-1: once replicated to the ISR; 1: once appended by the leader), and for how long
    #: it waits for the replication before answering COORDINATOR_NOT_AVAILABLE.
    offsets_commit_required_acks: int = -1
    offsets_commit_timeout_ms: int = 5_000
    transaction_config: TransactionConfig = field(default_factory=TransactionConfig)
    #: Whether a partition leader asks the coordinator before a producer's first
    #: transactional batch there (KIP-890 part 1).
    transaction_partition_verification_enable: bool = True
    #: The Kafka settings given that odradek does not implement (accepted, no effect), by
    #: name, as given.
    unimplemented: tuple[tuple[str, str], ...] = ()
    #: The Prometheus endpoint's settings (``broker.metrics.settings``).
    metrics_port: int = -1
    metrics_host: str | None = None
    metric_reporters: tuple[str, ...] = ()
    #: The listeners' security protocols, TLS and SASL settings (``broker.security``).
    security: SecurityConfig = field(default_factory=SecurityConfig)

    @classmethod
    def from_properties(
        cls,
        path: str | os.PathLike[str] | None,
        overrides: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        """Reads a ``server.properties`` file (none: defaults only), then applies ``overrides``.

        Raises:
            ConfigError: the file cannot be read or parsed, or a setting is unknown or invalid.
        """
        settings: dict[str, str] = {}
        if path is not None:
            source = os.fspath(path)
            try:
                with open(source, encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError) as error:
                raise ConfigError(f"cannot read broker config file {source}: {error}") from None
            settings.update(parse_properties(text, source=source))
        settings.update(overrides or {})
        return cls.from_mapping(settings)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, str | int | bool]) -> BrokerConfig:
        """Builds the config from ``name → value`` (strings as in a properties file; ints and
        bools are accepted for convenience).

        Raises:
            ConfigError: a name that is not a Kafka broker setting (nor one of odradek's own),
                an invalid value, or ``broker.id`` and ``node.id`` that disagree; the message
                names the setting.
        """
        raw: dict[str, str] = {}
        unimplemented: dict[str, str] = {}
        security: dict[str, str] = {}
        for name, value in settings.items():
            text = (str(value).lower() if isinstance(value, bool) else str(value)).strip()
            if name in _SETTINGS:
                raw[name] = text
            elif is_security_setting(name):
                security[name] = text  # validated by SecurityConfig, described as given
            elif (kafka := kafka_setting_base(name)) is not None:
                _check_kafka_type(name, text, kafka.type)
                unimplemented[name] = text
            else:
                raise ConfigError(f"unknown setting {name!r}")
        parsed: dict[str, Any] = {}
        originals: dict[str, str] = dict(security)
        for name, text in raw.items():
            setting = _SETTINGS[name]
            value = setting.parse(name, text)
            parsed[name] = value
            originals[name] = setting.render(value)

        def get(name: str) -> Any:
            if name in parsed:
                return parsed[name]
            setting = _SETTINGS[name]
            return None if setting.default is None else setting.parse(name, setting.default)

        broker_id: int = get("broker.id")
        node_id: int = get("node.id")
        if "broker.id" not in parsed and node_id >= 0:
            broker_id = node_id
        elif node_id >= 0 and node_id != broker_id:
            raise ConfigError(f"node.id {node_id} and broker.id {broker_id} must agree")
        controllers = controller_listener_names(unimplemented)
        listeners: tuple[Listener, ...] = _without(get("listeners"), controllers) or ()
        if not listeners:
            raise ConfigError(
                "invalid value for listeners: every listener is a controller listener "
                f"(controller.listener.names={','.join(sorted(controllers))}); odradek serves on "
                "the others"
            )
        advertised = _advertised(
            listeners, _without(parsed.get("advertised.listeners"), controllers)
        )
        log_dirs: tuple[str, ...] = get("log.dirs") or get("log.dir")
        return cls(
            broker_id=broker_id,
            listeners=listeners,
            advertised_listeners=advertised,
            log_dirs=log_dirs,
            num_partitions=get("num.partitions"),
            default_replication_factor=get("default.replication.factor"),
            auto_create_topics_enable=get("auto.create.topics.enable"),
            delete_topic_enable=get("delete.topic.enable"),
            message_max_bytes=get("message.max.bytes"),
            socket_request_max_bytes=get("socket.request.max.bytes"),
            log_flush_scheduler_interval_ms=get("log.flush.scheduler.interval.ms"),
            log_retention_check_interval_ms=get("log.retention.check.interval.ms"),
            log_flush_offset_checkpoint_interval_ms=get("log.flush.offset.checkpoint.interval.ms"),
            zookeeper_connect=get("zookeeper.connect"),
            offsets_topic_num_partitions=get("offsets.topic.num.partitions"),
            offsets_topic_replication_factor=get("offsets.topic.replication.factor"),
            group_initial_rebalance_delay_ms=get("group.initial.rebalance.delay.ms"),
            group_config=_group_config(get),
            limits=_limits(get),
            log_config=_log_config(originals),
            cleaner_config=CleanerConfig.from_broker_settings(
                {name: value for name, value in originals.items() if name in _CLEANER_SETTINGS}
            ),
            originals=tuple(sorted(originals.items())),
            zookeeper_session_timeout_ms=get("zookeeper.session.timeout.ms"),
            zookeeper_connection_timeout_ms=get("zookeeper.connection.timeout.ms"),
            broker_rack=get("broker.rack"),
            replica_selector_class=get("replica.selector.class"),
            auto_leader_rebalance_enable=get("auto.leader.rebalance.enable"),
            leader_imbalance_check_interval_seconds=get("leader.imbalance.check.interval.seconds"),
            leader_imbalance_per_broker_percentage=get("leader.imbalance.per.broker.percentage"),
            replica_lag_time_max_ms=get("replica.lag.time.max.ms"),
            replica_high_watermark_checkpoint_interval_ms=get(
                "replica.high.watermark.checkpoint.interval.ms"
            ),
            producer_id_expiration_ms=get("producer.id.expiration.ms"),
            max_incremental_fetch_session_cache_slots=get(
                "max.incremental.fetch.session.cache.slots"
            ),
            replica_fetchers=FetcherSettings(
                num_replica_fetchers=get("num.replica.fetchers"),
                replica_fetch_max_bytes=get("replica.fetch.max.bytes"),
                replica_fetch_response_max_bytes=get("replica.fetch.response.max.bytes"),
                replica_fetch_wait_max_ms=get("replica.fetch.wait.max.ms"),
                replica_fetch_min_bytes=get("replica.fetch.min.bytes"),
                replica_fetch_backoff_ms=get("replica.fetch.backoff.ms"),
            ),
            offsets_commit_required_acks=get("offsets.commit.required.acks"),
            offsets_commit_timeout_ms=get("offsets.commit.timeout.ms"),
            transaction_config=TransactionConfig.from_settings(get),
            transaction_partition_verification_enable=get(
                "transaction.partition.verification.enable"
            ),
            unimplemented=tuple(sorted(unimplemented.items())),
            metrics_port=get("metrics.port"),
            metrics_host=get("metrics.host"),
            metric_reporters=get("metric.reporters"),
            security=SecurityConfig.from_settings(security, [item.name for item in listeners]),
        )

    def describe(self) -> dict[str, ConfigEntry]:
        """Every setting, by name (DescribeConfigs on the broker resource): the ones odradek
        implements with their values, and every other Kafka broker setting with the value
        given or Kafka's default, marked as not implemented. Kafka's PASSWORD settings are
        sensitive."""
        given = dict(self.originals)
        ignored = dict(self.unimplemented)
        entries = {}
        names = _SETTINGS.keys() | KAFKA_BROKER_SETTINGS.keys() | ignored.keys() | given.keys()
        for name in sorted(names):
            kafka = kafka_setting_base(name)
            kafka_type = kafka.type if kafka is not None else _ODRADEK_TYPES.get(name, "UNKNOWN")
            sensitive = kafka_type == "PASSWORD"
            if name in _SETTINGS or is_security_setting(name):
                is_default = name not in given
                default = _SETTINGS[name].default if name in _SETTINGS else described_default(name)
                value = default if is_default else given[name]
                entries[name] = ConfigEntry(
                    name, value, is_default, sensitive=sensitive, kafka_type=kafka_type
                )
                continue
            is_default = name not in ignored
            value = kafka.default if is_default and kafka is not None else ignored.get(name)
            entries[name] = ConfigEntry(
                name,
                value,
                is_default,
                sensitive=sensitive,
                kafka_type=kafka_type,
                implemented=False,
                documentation=NOT_IMPLEMENTED_DOC,
            )
        return entries

    def unimplemented_warnings(self) -> list[str]:
        """One line per Kafka setting given that odradek does not implement (a KRaft setting's
        says what odradek runs instead)."""
        return [
            kraft_warning(name, value, zookeeper_connect=self.zookeeper_connect)
            if is_kraft_setting(name)
            else f"setting {name!r} is a Kafka broker setting odradek does not implement; "
            "it has no effect"
            for name, value in self.unimplemented
        ]

    def settings(self) -> dict[str, str]:
        """Every implemented setting that has a value, by name, as strings (explicit or
        default)."""
        return {
            name: entry.value
            for name, entry in self.describe().items()
            if entry.value is not None and entry.implemented
        }


def topic_config_fallbacks(
    topic_config: str, described: Mapping[str, ConfigEntry]
) -> list[ConfigEntry]:
    """The broker settings (from ``BrokerConfig.describe()``) a topic config takes its value
    from when the topic does not override it, in Kafka's order of precedence."""
    return [described[name] for name in broker_synonyms(topic_config)]


def _check_kafka_type(name: str, raw: str, kafka_type: str) -> None:
    """A value of a setting odradek does not implement must still be one of its Kafka type
    (a typo in a value must not pass either); strings, lists, classes and passwords are free.

    Raises:
        ConfigError: not an integer / a number / true or false, as the type asks.
    """
    if kafka_type in ("INT", "SHORT", "LONG"):
        _integer(-_MAX_LONG - 1, _MAX_LONG)(name, raw)
    elif kafka_type == "DOUBLE":
        try:
            float(raw)
        except ValueError:
            raise _invalid(name, raw, "expected a number") from None
    elif kafka_type == "BOOLEAN":
        _boolean(name, raw)


#: DescribeConfigs' documentation of a Kafka setting odradek accepts without effect.
NOT_IMPLEMENTED_DOC = (
    "A Kafka broker setting that odradek accepts but does not implement: it has no effect."
)


def _group_config(get: Callable[[str], Any]) -> GroupConfig:
    """The group coordinator's settings (Kafka's names; see ``broker.group.config``)."""
    return GroupConfig(
        **{
            name.replace(".", "_"): get(name)
            for name in (
                "group.min.session.timeout.ms",
                "group.max.session.timeout.ms",
                "group.max.size",
                "group.initial.rebalance.delay.ms",
                "offsets.retention.minutes",
                "offsets.retention.check.interval.ms",
                "offset.metadata.max.bytes",
                "group.consumer.session.timeout.ms",
                "group.consumer.heartbeat.interval.ms",
                "group.consumer.max.size",
                "group.consumer.assignors",
                "group.coordinator.rebalance.protocols",
            )
        }
    )


def _limits(get: Callable[[str], Any]) -> BrokerLimits:
    """The admission limits (see ``broker.limits``)."""
    return BrokerLimits(**{name.replace(".", "_"): get(name) for name in _LIMIT_SETTINGS})


# --- the settings table ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Setting:
    """How to parse and render one setting; ``default`` is Kafka-style text (None: null)."""

    parse: Callable[[str, str], Any]
    render: Callable[[Any], str]
    default: str | None


def _invalid(name: str, raw: str, reason: str) -> ConfigError:
    return ConfigError(f"invalid value {raw!r} for {name}: {reason}")


def _integer(minimum: int, maximum: int) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw, 10)
        except ValueError:
            raise _invalid(name, raw, "expected an integer") from None
        if value < minimum:
            raise _invalid(name, raw, f"must be at least {minimum}")
        if value > maximum:
            raise _invalid(name, raw, f"must be at most {maximum}")
        return value

    return parse


def _boolean(name: str, raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("true", "false"):
        raise _invalid(name, raw, "expected true or false")
    return lowered == "true"


def _optional_string(name: str, raw: str) -> str | None:
    return raw or None


def _replica_selector(name: str, raw: str) -> str:
    if raw not in REPLICA_SELECTORS:
        raise _invalid(name, raw, f"one of {', '.join(REPLICA_SELECTORS)}")
    return raw


def _names(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part.strip().lower() for part in raw.split(",") if part.strip())


def _directories(name: str, raw: str) -> tuple[str, ...]:
    directories = tuple(part.strip() for part in raw.split(",") if part.strip())
    if not directories:
        raise _invalid(name, raw, "expected a comma-separated list of directories")
    return directories


_LISTENER = re.compile(r"(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:\[\]/]*):(?P<port>\d+)")


def _listeners(name: str, raw: str) -> tuple[Listener, ...] | None:
    if not raw and name == "advertised.listeners":
        return None  # empty: advertise the listeners
    listeners: list[Listener] = []
    for entry in (part.strip() for part in raw.split(",")):
        match = _LISTENER.fullmatch(entry)
        if match is None:
            raise _invalid(name, raw, f"expected NAME://host:port entries, got {entry!r}")
        listener_name = match["name"].upper()
        port = int(match["port"])
        if port > 65535:
            raise _invalid(name, raw, f"port {port} is out of range 0..65535")
        if any(listener.name == listener_name for listener in listeners):
            raise _invalid(name, raw, f"listener name {listener_name} appears twice")
        listeners.append(Listener(listener_name, match["host"].strip("[]"), port))
    return tuple(listeners)


def _without(
    listeners: tuple[Listener, ...] | None, names: frozenset[str]
) -> tuple[Listener, ...] | None:
    """``listeners`` but the ones named in ``names`` (KRaft's controller listeners)."""
    if listeners is None or not names:
        return listeners
    return tuple(listener for listener in listeners if listener.name not in names)


def _advertised(
    listeners: tuple[Listener, ...], advertised: tuple[Listener, ...] | None
) -> tuple[Listener, ...]:
    setting = "advertised.listeners" if advertised is not None else "listeners"
    chosen = advertised if advertised is not None else listeners
    names = {listener.name for listener in listeners}
    for listener in chosen:
        if listener.name not in names:
            raise ConfigError(
                f"invalid value for advertised.listeners: listener {listener.name} is not one "
                f"of the listeners {sorted(names)}"
            )
        if listener.host in ("0.0.0.0", "::"):  # noqa: S104 (rejecting it, not binding)
            raise ConfigError(
                f"invalid value for {setting}: cannot advertise the non-routable address "
                f"{listener.host}; set advertised.listeners to an address clients can reach"
            )
    return chosen


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _render_bool(value: Any) -> str:
    return "true" if value else "false"


def _render_list(value: Any) -> str:
    return "" if value is None else ",".join(str(item) for item in value)


def _int_setting(default: int | None, minimum: int, maximum: int = _MAX_INT) -> _Setting:
    return _Setting(_integer(minimum, maximum), _text, None if default is None else str(default))


_SETTINGS: dict[str, _Setting] = {
    "broker.id": _int_setting(0, 0),
    "node.id": _int_setting(-1, -1),
    "listeners": _Setting(_listeners, _render_list, DEFAULT_LISTENERS),
    "advertised.listeners": _Setting(_listeners, _render_list, None),
    "log.dirs": _Setting(_directories, _render_list, None),
    "log.dir": _Setting(_directories, _render_list, DEFAULT_LOG_DIR),
    "num.partitions": _int_setting(1, 1),
    "default.replication.factor": _int_setting(1, 1, _MAX_SHORT),
    "auto.create.topics.enable": _Setting(_boolean, _render_bool, "true"),
    "delete.topic.enable": _Setting(_boolean, _render_bool, "true"),
    "message.max.bytes": _int_setting(1024 * 1024 + 12, 0),
    "socket.request.max.bytes": _int_setting(100 * 1024 * 1024, 1),
    "log.flush.scheduler.interval.ms": _int_setting(1000, 1, _MAX_LONG),
    "log.retention.check.interval.ms": _int_setting(300_000, 1, _MAX_LONG),
    "log.flush.offset.checkpoint.interval.ms": _int_setting(60_000, 1, _MAX_INT),
    "zookeeper.connect": _Setting(_optional_string, _text, None),
    "zookeeper.session.timeout.ms": _int_setting(18_000, 1),
    "zookeeper.connection.timeout.ms": _int_setting(None, 1),
    "broker.rack": _Setting(_optional_string, _text, None),
    "replica.selector.class": _Setting(_replica_selector, _text, LEADER_SELECTOR),
    "auto.leader.rebalance.enable": _Setting(_boolean, _render_bool, "true"),
    "leader.imbalance.check.interval.seconds": _int_setting(300, 1, _MAX_INT),
    "leader.imbalance.per.broker.percentage": _int_setting(10, 0, 100),
    "offsets.topic.num.partitions": _int_setting(50, 1),
    "replica.lag.time.max.ms": _int_setting(30_000, 1, _MAX_LONG),
    "replica.high.watermark.checkpoint.interval.ms": _int_setting(5_000, 1, _MAX_LONG),
    "producer.id.expiration.ms": _int_setting(86_400_000, 1, _MAX_INT),
    "transaction.partition.verification.enable": _Setting(_boolean, _render_bool, "true"),
    "max.incremental.fetch.session.cache.slots": _int_setting(1000, 0, _MAX_INT),
    # Kafka's 3, capped by the brokers alive when the topic is created (1 on a lone broker).
    "offsets.topic.replication.factor": _int_setting(3, 1, _MAX_SHORT),
    "offsets.commit.required.acks": _int_setting(-1, -1, 1),
    "offsets.commit.timeout.ms": _int_setting(5_000, 1),
    "group.initial.rebalance.delay.ms": _int_setting(3000, 0),
    "group.min.session.timeout.ms": _int_setting(6_000, 0),
    "group.max.session.timeout.ms": _int_setting(1_800_000, 0),
    "group.max.size": _int_setting(_MAX_INT, 1),
    "offsets.retention.minutes": _int_setting(7 * 24 * 60, 1),
    "offsets.retention.check.interval.ms": _int_setting(600_000, 1, _MAX_LONG),
    "offset.metadata.max.bytes": _int_setting(4_096, 0),
    # KIP-848 consumer groups (broker/group/consumer_membership.py).
    "group.consumer.session.timeout.ms": _int_setting(45_000, 1),
    "group.consumer.heartbeat.interval.ms": _int_setting(5_000, 1),
    "group.consumer.max.size": _int_setting(_MAX_INT, 1),
    "group.consumer.assignors": _Setting(_names, _render_list, "uniform,range"),
    "group.coordinator.rebalance.protocols": _Setting(_names, _render_list, "classic,consumer"),
    # Follower fetchers (FetcherSettings), Kafka's defaults.
    "num.replica.fetchers": _int_setting(1, 1, 64),
    "replica.fetch.max.bytes": _int_setting(1024 * 1024, 0),
    "replica.fetch.response.max.bytes": _int_setting(10 * 1024 * 1024, 0),
    "replica.fetch.wait.max.ms": _int_setting(500, 0),
    "replica.fetch.min.bytes": _int_setting(1, 1),
    "replica.fetch.backoff.ms": _int_setting(1000, 0),
    "metrics.port": _int_setting(-1, -1, 65535),
    "metrics.host": _Setting(_optional_string, _text, None),
    "metric.reporters": _Setting(parse_reporters, _render_list, ""),
}


def _rate(name: str, raw: str) -> float | None:
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise _invalid(name, raw, "expected a number") from None
    if not value > 0:
        raise _invalid(name, raw, "must be positive")
    return value


def _overrides(name: str, raw: str) -> tuple[tuple[str, int], ...]:
    return parse_overrides(raw)


#: The admission limits (``broker.limits``), by name; a field of BrokerLimits each.
_LIMIT_SETTINGS: dict[str, _Setting] = {
    "max.connections": _int_setting(_MAX_INT, 0),
    "max.connections.per.ip": _int_setting(_MAX_INT, 0),
    "max.connections.per.ip.overrides": _Setting(_overrides, render_overrides, ""),
    "connections.max.idle.ms": _int_setting(600_000, -1, _MAX_LONG),
    "queued.max.requests": _int_setting(500, 1),
    "queued.max.request.bytes": _int_setting(-1, -1, _MAX_LONG),
    "max.partitions": _int_setting(_MAX_INT, 1),
    "max.broker.partitions": _int_setting(100_000, 1),
    "max.partitions.per.request": _int_setting(10_000, 1),
    "controller.mutation.rate": _Setting(_rate, _text, None),
    "controller.quota.window.num": _int_setting(11, 1),
    "controller.quota.window.size.seconds": _int_setting(1, 1),
}
_SETTINGS.update(_LIMIT_SETTINGS)
_SETTINGS.update({name: _int_setting(d, low) for name, d, low in TXN_SETTINGS})


#: The authorizer's settings (read by ``broker.auth.authorizer.AuthorizerConfig``).
def _authorizer_setting(name: str, raw: str) -> str:
    AuthorizerConfig.from_settings({name: raw})  # raises ConfigError naming the setting
    return raw


_AUTHORIZER_SETTINGS: dict[str, _Setting] = {
    "authorizer.class.name": _Setting(_authorizer_setting, _text, ""),
    "super.users": _Setting(_authorizer_setting, _text, ""),
    "allow.everyone.if.no.acl.found": _Setting(_boolean, _render_bool, "false"),
    # The client quotas' burst (broker.auth.quotas; quota.window.num has no effect).
    "quota.window.size.seconds": _int_setting(1, 1),
}
_SETTINGS.update(_AUTHORIZER_SETTINGS)


# --- log.* settings: parsed here for the message, validated by LogConfig --------------------


def _log_setting(kind: str, default: str | None, hint: str = "") -> _Setting:
    def parse(name: str, raw: str) -> str:
        if kind == "int":
            _integer(-_MAX_LONG - 1, _MAX_LONG)(name, raw)
        elif kind == "float":
            try:
                float(raw)
            except ValueError:
                raise _invalid(name, raw, "expected a number") from None
        try:
            LogConfig.from_broker_settings({name: raw})
        except ConfigError:
            raise _invalid(name, raw, hint or "out of range") from None
        return raw

    return _Setting(parse, _text, default)


#: Kafka's broker defaults of the settings LogConfig takes (None: unset, a lower-precedence
#: setting applies). Kept equal to ``storage.config.BROKER_NAMES`` by a test.
_LOG_SETTINGS: dict[str, _Setting] = {
    "log.segment.bytes": _log_setting("int", str(1024**3)),
    "log.roll.ms": _log_setting("int", None),
    "log.roll.hours": _log_setting("int", "168"),
    "log.retention.ms": _log_setting("int", None),
    "log.retention.minutes": _log_setting("int", None),
    "log.retention.hours": _log_setting("int", "168"),
    "log.retention.bytes": _log_setting("int", "-1"),
    "log.index.size.max.bytes": _log_setting("int", str(10 * 1024 * 1024)),
    "log.index.interval.bytes": _log_setting("int", "4096"),
    "log.flush.interval.messages": _log_setting("int", str(_MAX_LONG)),
    "log.flush.interval.ms": _log_setting("int", None),
    "log.segment.delete.delay.ms": _log_setting("int", "60000"),
    "log.message.timestamp.type": _log_setting(
        "str", "CreateTime", "expected CreateTime or LogAppendTime"
    ),
    "log.cleanup.policy": _log_setting(
        "str", "delete", "expected delete, compact, or both separated by a comma"
    ),
    "log.cleaner.delete.retention.ms": _log_setting("int", str(24 * 3_600_000)),
    "log.cleaner.min.cleanable.ratio": _log_setting("float", "0.5", "expected 0.0..1.0"),
    "log.cleaner.min.compaction.lag.ms": _log_setting("int", "0"),
    "log.cleaner.max.compaction.lag.ms": _log_setting("int", str(_MAX_LONG)),
    "min.insync.replicas": _log_setting("int", "1"),
    "unclean.leader.election.enable": _log_setting("str", "false", "expected true or false"),
}

for _name in sorted(BROKER_NAMES - _SETTINGS.keys() - _LOG_SETTINGS.keys()):
    # A setting LogConfig learnt after this table was written: accepted, no default shown.
    _LOG_SETTINGS[_name] = _log_setting("str", None)

#: The LogConfig settings that are also broker fields (message.max.bytes) keep their
#: entry in ``_SETTINGS``; every other one is added.
_SETTINGS.update({name: s for name, s in _LOG_SETTINGS.items() if name not in _SETTINGS})


def _cleaner_setting(default: str, kind: type) -> _Setting:
    expected = {bool: "true or false", int: "an integer", float: "a number"}.get(kind, "")

    def parse(name: str, raw: str) -> str:
        try:
            CleanerConfig.from_broker_settings({name: raw})
        except ConfigError:
            raise _invalid(name, raw, f"expected {expected} in range") from None
        return raw

    return _Setting(parse, _text, default)


#: The log cleaner's settings (``log.cleaner.*`` besides the per-topic defaults above).
_CLEANER_SETTINGS: dict[str, _Setting] = {
    name: _cleaner_setting(str(getattr(CleanerConfig(), attribute)).lower(), kind)
    for name, (attribute, kind) in CLEANER_BROKER_NAMES.items()
}
_SETTINGS.update(_CLEANER_SETTINGS)

#: Every setting name BrokerConfig implements.
SETTING_NAMES: frozenset[str] = frozenset(_SETTINGS)

#: The ConfigDef types of odradek's own settings (the others take Kafka's).
_ODRADEK_TYPES: dict[str, str] = {
    "allow.everyone.if.no.acl.found": "BOOLEAN",
    "super.users": "STRING",
    "controller.mutation.rate": "DOUBLE",
    "max.broker.partitions": "INT",
    "max.partitions": "INT",
    "max.partitions.per.request": "INT",
    "offsets.commit.required.acks": "SHORT",
    "metrics.port": "INT",
    "metrics.host": "STRING",
}


def _log_config(originals: Mapping[str, str]) -> LogConfig:
    log_settings = {name: value for name, value in originals.items() if name in BROKER_NAMES}
    if (
        "log.flush.interval.ms" not in log_settings
        and "log.flush.scheduler.interval.ms" in originals
    ):
        # Kafka's fallback, applied only to an explicit scheduler interval (module docstring).
        log_settings["log.flush.interval.ms"] = originals["log.flush.scheduler.interval.ms"]
    try:
        return LogConfig.from_broker_settings(log_settings)
    except ConfigError as error:  # a combination no single setting shows: name them all
        raise ConfigError(f"invalid log settings {sorted(log_settings)}: {error}") from None

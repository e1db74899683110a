"""Options of the ``odradek`` data source: Spark's Kafka connector options, parsed and checked.

Option names are case-insensitive (Spark hands them over lower-cased). The rules, and the error
messages, are those of Spark's Kafka connector, so a job moves between the two unchanged:

- exactly one of ``assign`` (JSON ``{"topicA":[0,1]}``), ``subscribe`` (comma-separated topic
  names) or ``subscribePattern`` (a regular expression, matched with ``re.search``);
- ``kafka.bootstrap.servers`` (or ``bootstrap.servers``); ``kafka.isolation.level``
  (``read_uncommitted``, the default, or ``read_committed``: aborted transactions' records
  are left out and reads end at the last stable offset); other ``kafka.*`` options go to our
  client with the prefix removed, except those Spark rejects (``auto.offset.reset``,
  ``key.deserializer``, ``value.deserializer``, ``enable.auto.commit``,
  ``interceptor.classes``; for writes ``key.serializer`` and ``value.serializer``);
- where to start and stop, in order of preference: ``startingTimestamp`` (one time for every
  partition), ``startingOffsetsByTimestamp`` (JSON per partition), ``startingOffsets``
  (``earliest``, ``latest`` or JSON per partition with -2 = earliest, -1 = latest); the same
  three ``ending*`` options for batch reads (streaming refuses them);
- ``failOnDataLoss`` (default true), ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` with
  ``maxTriggerDelay`` (default 15m), ``minPartitions``, ``maxRecordsPerPartition``,
  ``includeHeaders``, ``startingOffsetsByTimestampStrategy`` (``error`` or ``latest``);
- beyond Spark: ``groupId`` — the streaming source commits each finished micro-batch's end
  offsets to this consumer group, so lag tools see the query;
- beyond Spark, for writes: ``deliveryGuarantee`` — ``atLeastOnce`` (the default, Spark's Kafka
  sink's guarantee) or ``exactlyOnce`` (each write task's rows in one Kafka transaction, see
  ``exactly_once``), and ``transactionalIdPrefix`` (default ``odradek-spark-``), the start of
  the transactional ids and progress groups of an exactly-once write. ``kafka.transactional.id``
  is refused: the sink derives one per task.

Invalid options raise ``ValueError`` (Spark's ``IllegalArgumentException``) with Spark's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from odradek.client import TopicPartition

__all__ = [
    "AT_LEAST_ONCE",
    "DEFAULT_TRANSACTIONAL_ID_PREFIX",
    "EARLIEST",
    "EXACTLY_ONCE",
    "LATEST",
    "Assign",
    "GlobalTimestamp",
    "OffsetLimit",
    "PartitionOffsets",
    "PartitionTimestamps",
    "SinkOptions",
    "SourceOptions",
    "Strategy",
    "Subscribe",
    "SubscribePattern",
    "parse_sink_options",
    "parse_source_options",
]

#: Offsets in ``startingOffsets``/``endingOffsets`` JSON that stand for a position, not a number.
EARLIEST: Final = -2
LATEST: Final = -1
#: ``deliveryGuarantee`` values (case-insensitive).
AT_LEAST_ONCE: Final = "atLeastOnce"
EXACTLY_ONCE: Final = "exactlyOnce"
DEFAULT_TRANSACTIONAL_ID_PREFIX: Final = "odradek-spark-"
#: ``kafka.isolation.level`` values (Kafka's consumer's).
ISOLATION_LEVELS: Final = ("read_uncommitted", "read_committed")

_STRATEGY_KEYS: Final = ("subscribe", "subscribepattern", "assign")
_STRATEGY_LIST: Final = ", ".join(_STRATEGY_KEYS)


# ----------------------------------------------------------------------------- strategies


@dataclass(frozen=True, slots=True)
class Assign:
    """Fixed partitions."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class Subscribe:
    """Every partition of these topics (topics that do not exist yet contribute none)."""

    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SubscribePattern:
    """Every partition of the topics whose name the pattern finds (``re.search``)."""

    pattern: str

    def matches(self, topic: str) -> bool:
        return re.search(self.pattern, topic) is not None


Strategy = Assign | Subscribe | SubscribePattern


# ----------------------------------------------------------------------------- offset limits


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Per-partition offsets (``EARLIEST``/``LATEST`` allowed as values)."""

    offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class GlobalTimestamp:
    """One timestamp (ms) for every partition."""

    timestamp: int


@dataclass(frozen=True, slots=True)
class PartitionTimestamps:
    """Per-partition timestamps (ms)."""

    timestamps: Mapping[TopicPartition, int]


#: ``"earliest"``, ``"latest"``, or one of the specific forms.
OffsetLimit = (
    Literal["earliest", "latest"] | PartitionOffsets | GlobalTimestamp | PartitionTimestamps
)


# ----------------------------------------------------------------------------- options


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """A read's options, checked (see the module docstring)."""

    bootstrap_servers: str
    strategy: Strategy
    starting: OffsetLimit
    ending: OffsetLimit
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    timestamp_strategy: Literal["error", "latest"] = "error"
    group_id: str | None = None
    #: ``kafka.*`` options without the prefix, ``bootstrap.servers`` included.
    client_config: Mapping[str, str] = field(default_factory=dict)

    @property
    def read_committed(self) -> bool:
        """``kafka.isolation.level=read_committed``: aborted transactions' records are dropped
        and reads end at the last stable offset."""
        return self.client_config.get("isolation.level") == "read_committed"


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """A write's options, checked."""

    bootstrap_servers: str
    topic: str | None
    client_config: Mapping[str, str] = field(default_factory=dict)
    #: ``deliveryGuarantee=exactlyOnce``.
    exactly_once: bool = False
    transactional_id_prefix: str = DEFAULT_TRANSACTIONAL_ID_PREFIX


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Checks a read's options like Spark's Kafka connector and returns them parsed.

    Raises:
        ValueError: an invalid option or combination, with Spark's message.
    """
    params = _lower(options)
    if streaming:
        if "endingoffsets" in params:
            raise ValueError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in params:
            raise ValueError("ending timestamp not valid in streaming queries")
    strategy = _strategy(params)
    client = _client_params(params)
    for key, message in _REJECTED_CONSUMER_KEYS.items():
        if key in client:
            raise ValueError(message)
    bootstrap = client.get("bootstrap.servers", "")
    if not bootstrap:
        raise ValueError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    isolation = client.get("isolation.level")
    if isolation is not None and isolation not in ISOLATION_LEVELS:
        raise ValueError(
            f"Invalid value {isolation} for configuration isolation.level: "
            f"String must be one of: {', '.join(ISOLATION_LEVELS)}"
        )
    min_partitions = _optional_int(params, "minpartitions")
    if min_partitions is not None and min_partitions <= 0:
        raise ValueError("minPartitions must be positive")
    max_records = _optional_int(params, "maxrecordsperpartition")
    if max_records is not None and max_records <= 0:
        raise ValueError("maxrecordsperpartition must be positive")
    max_per_trigger = _optional_int(params, "maxoffsetspertrigger")
    min_per_trigger = _optional_int(params, "minoffsetspertrigger")
    if (
        max_per_trigger is not None
        and min_per_trigger is not None
        and min_per_trigger > max_per_trigger
    ):
        raise ValueError(
            f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than the "
            f"maxOffsetsPerTrigger({max_per_trigger})."
        )
    timestamp_strategy = params.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if timestamp_strategy not in ("error", "latest"):
        raise ValueError(
            f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', got "
            f"'{params['startingoffsetsbytimestampstrategy']}'"
        )
    starting = _offset_limit(
        params, "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets",
        "latest" if streaming else "earliest",
    )  # fmt: skip
    ending = _offset_limit(
        params, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", "latest"
    )
    if not streaming:
        _check_batch_limits(starting, ending)
    group_id = params.get("groupid", "").strip() or None
    return SourceOptions(
        bootstrap_servers=bootstrap,
        strategy=strategy,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_bool(params, "failondataloss", True),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=_duration_ms(params.get("maxtriggerdelay", "15m")),
        min_partitions=min_partitions,
        max_records_per_partition=max_records,
        include_headers=_bool(params, "includeheaders", False),
        timestamp_strategy="latest" if timestamp_strategy == "latest" else "error",
        group_id=group_id,
        client_config=client,
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Checks a write's options like Spark's Kafka connector.

    Raises:
        ValueError: an invalid option, with Spark's message.
    """
    params = _lower(options)
    client = _client_params(params)
    if "key.serializer" in client:
        raise ValueError(
            "Kafka option 'key.serializer' is not supported as keys are serialized with "
            "ByteArraySerializer."
        )
    if "value.serializer" in client:
        raise ValueError(
            "Kafka option 'value.serializer' is not supported as value are serialized with "
            "ByteArraySerializer."
        )
    bootstrap = client.get("bootstrap.servers", "")
    if not bootstrap:
        raise ValueError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"
        )
    if "transactional.id" in client:
        raise ValueError(
            "Kafka option 'transactional.id' is not supported: for exactly-once writes set "
            "'deliveryGuarantee' to 'exactlyOnce' (each write task gets its own transactional "
            "id, starting with 'transactionalIdPrefix')"
        )
    topic = params.get("topic", "").strip() or None
    guarantee = params.get("deliveryguarantee", AT_LEAST_ONCE)
    if guarantee.lower() not in (AT_LEAST_ONCE.lower(), EXACTLY_ONCE.lower()):
        raise ValueError(
            f"Option 'deliveryGuarantee' must be '{AT_LEAST_ONCE}' or '{EXACTLY_ONCE}', "
            f"got '{guarantee}'"
        )
    prefix = params.get("transactionalidprefix", DEFAULT_TRANSACTIONAL_ID_PREFIX)
    if not prefix.strip():
        raise ValueError("Option 'transactionalIdPrefix' must not be empty")
    return SinkOptions(
        bootstrap_servers=bootstrap,
        topic=topic,
        client_config=client,
        exactly_once=guarantee.lower() == EXACTLY_ONCE.lower(),
        transactional_id_prefix=prefix,
    )


# ----------------------------------------------------------------------------- JSON forms


def parse_assign_json(text: str) -> tuple[TopicPartition, ...]:
    """``{"topicA":[0,1],"topicB":[2]}`` → partitions, in the order given."""
    example = '{"topicA":[0,1],"topicB":[0,1]}'
    data = _json_object(text, example)
    out: list[TopicPartition] = []
    for topic, partitions in data.items():
        if not isinstance(partitions, list) or not all(_is_int(p) for p in partitions):
            raise ValueError(f"Expected e.g. {example}, got {text}")
        out.extend(TopicPartition(topic, int(p)) for p in partitions)
    return tuple(out)


def parse_partition_offsets(text: str) -> dict[TopicPartition, int]:
    """``{"topicA":{"0":23,"1":-1}}`` → per-partition offsets."""
    return _partition_numbers(text, '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}')


def parse_partition_timestamps(text: str) -> dict[TopicPartition, int]:
    """``{"topicA":{"0":1000}}`` → per-partition timestamps (ms)."""
    return _partition_numbers(
        text,
        '{"topicA": {"0": 123456789, "1": 123456789}, "topicB": {"0": 123456789, "1": 123456789}}',
    )


# ----------------------------------------------------------------------------- helpers

_REJECTED_CONSUMER_KEYS: Final = {
    "auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported.\n"
        "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
        "to specify where to start. Structured Streaming manages which offsets are consumed\n"
        "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
        "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
        "'startingoffsets' only applies when a new Streaming query is started, and\n"
        "that resuming will always pick up from where the query left off. See the docs for more\n"
        "details."
    ),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
        "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
        "the keys."
    ),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
        "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
        "the values."
    ),
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _client_params(params: Mapping[str, str]) -> dict[str, str]:
    client = {k[len("kafka.") :]: v for k, v in params.items() if k.startswith("kafka.")}
    if "bootstrap.servers" not in client and params.get("bootstrap.servers"):
        client["bootstrap.servers"] = params["bootstrap.servers"]
    return client


def _strategy(params: Mapping[str, str]) -> Strategy:
    given = [k for k in _STRATEGY_KEYS if k in params]
    if not given:
        raise ValueError(
            "One of the following options must be specified for Kafka source: "
            f"{_STRATEGY_LIST}. See the docs for more details."
        )
    if len(given) > 1:
        raise ValueError(
            "Only one of the following options can be specified for Kafka source: "
            f"{_STRATEGY_LIST}. See the docs for more details."
        )
    [key] = given
    value = params[key]
    if key == "assign":
        if not value.strip().startswith("{"):
            raise ValueError(
                f"No topicpartitions to assign as specified value for option 'assign' is '{value}'"
            )
        return Assign(parse_assign_json(value))
    if key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
            )
        return Subscribe(topics)
    pattern = value.strip()
    if not pattern:
        raise ValueError(
            "Pattern to subscribe is empty as specified value for option 'subscribePattern' is "
            f"'{value}'"
        )
    try:
        re.compile(pattern)
    except re.error as error:
        raise ValueError(f"Invalid subscribePattern '{pattern}': {error}") from None
    return SubscribePattern(pattern)


def _offset_limit(
    params: Mapping[str, str],
    global_key: str,
    by_timestamp_key: str,
    offsets_key: str,
    default: Literal["earliest", "latest"],
) -> OffsetLimit:
    if global_key in params:
        text = params[global_key].strip()
        try:
            return GlobalTimestamp(int(text))
        except ValueError:
            raise ValueError(f"Expected a single long value, got {text}") from None
    if by_timestamp_key in params:
        return PartitionTimestamps(parse_partition_timestamps(params[by_timestamp_key].strip()))
    if offsets_key in params:
        text = params[offsets_key].strip()
        if text.lower() == "latest":
            return "latest"
        if text.lower() == "earliest":
            return "earliest"
        return PartitionOffsets(parse_partition_offsets(text))
    return default


def _check_batch_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    if starting == "latest":
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    if isinstance(starting, PartitionOffsets):
        for tp, offset in starting.offsets.items():
            if offset == LATEST:
                raise ValueError(
                    f"startingOffsets for {_tp(tp)} can't be latest for batch queries on Kafka"
                )
    if ending == "earliest":
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    if isinstance(ending, PartitionOffsets):
        for tp, offset in ending.offsets.items():
            if offset == EARLIEST:
                raise ValueError(
                    f"ending offset for {_tp(tp)} can't be earliest for batch queries on Kafka"
                )
    if isinstance(starting, PartitionOffsets) and isinstance(ending, PartitionOffsets):
        if set(starting.offsets) != set(ending.offsets):
            raise ValueError(
                "Kafka data source in batch query: the partitions of startingOffsets "
                f"({_tps(starting.offsets)}) and endingOffsets ({_tps(ending.offsets)}) differ"
            )
        for tp, start in starting.offsets.items():
            end = ending.offsets[tp]
            if start >= 0 and end >= 0 and start > end:
                raise ValueError(
                    f"The start offset {start} of {_tp(tp)} is greater than the end offset {end}"
                )
    if isinstance(starting, PartitionTimestamps) and isinstance(ending, PartitionTimestamps):
        if set(starting.timestamps) != set(ending.timestamps):
            raise ValueError(
                "Kafka data source in batch query: the partitions of startingOffsetsByTimestamp "
                f"({_tps(starting.timestamps)}) and endingOffsetsByTimestamp "
                f"({_tps(ending.timestamps)}) differ"
            )
        for tp, start in starting.timestamps.items():
            end = ending.timestamps[tp]
            if start > end:
                raise ValueError(
                    f"The start timestamp {start} of {_tp(tp)} is greater than the end "
                    f"timestamp {end}"
                )


def _tp(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _tps(partitions: Mapping[TopicPartition, int]) -> str:
    return ", ".join(sorted(_tp(tp) for tp in partitions))


def _json_object(text: str, example: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError(f"Expected e.g. {example}, got {text}") from None
    if not isinstance(data, dict):
        raise ValueError(f"Expected e.g. {example}, got {text}")
    return data


def _partition_numbers(text: str, example: str) -> dict[TopicPartition, int]:
    data = _json_object(text, example)
    out: dict[TopicPartition, int] = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict):
            raise ValueError(f"Expected e.g. {example}, got {text}")
        for partition, number in partitions.items():
            if not (_is_int(partition) and _is_int(number)):
                raise ValueError(f"Expected e.g. {example}, got {text}")
            out[TopicPartition(topic, int(partition))] = int(number)
    return out


def _is_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and re.fullmatch(r"-?\d+", value) is not None


def _optional_int(params: Mapping[str, str], key: str) -> int | None:
    if key not in params:
        return None
    text = params[key].strip()
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"Option '{key}' must be an integer, got '{text}'") from None


def _bool(params: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in params:
        return default
    text = params[key].strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"Option '{key}' must be 'true' or 'false', got '{params[key]}'")
    return text == "true"


_DURATION: Final = re.compile(r"(\d+)\s*(ms|s|sec|m|min|h|d)?", re.IGNORECASE)
_UNIT_MS: Final = {
    None: 1, "ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000,
    "h": 3_600_000, "d": 86_400_000,
}  # fmt: skip


def _duration_ms(text: str) -> int:
    """``"15m"``, ``"30s"``, ``"500ms"`` or a plain number of milliseconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"Invalid time string for maxTriggerDelay: '{text}'")
    unit = match.group(2).lower() if match.group(2) else None
    return int(match.group(1)) * _UNIT_MS[unit]

"""``odradek consume``: the console consumer, one line of stdout per record, read with
``odradek.Consumer``.

Like Kafka's ``kafka-console-consumer.sh`` (without a group: it assigns itself partitions and
commits nothing; with ``--group`` it joins that group and commits)::

    odradek consume --bootstrap-server HOST:PORT (--topic T | --include REGEX) [--partition N ...]
                    [--group G] [--isolation-level read_committed|read_uncommitted]
                    [--from-beginning | --offset O|earliest|latest] [--max-messages N]
                    [--timeout-ms MS] [--print-key] [--key-separator SEP] [--print-headers]
                    [--print-offset] [--print-partition] [--print-timestamp]
                    [--value-format string|json|hex|base64] [--consumer-property K=V ...]

Which records: every partition of the topic unless ``--partition`` names some
(``Consumer.assign``); from the end (only records produced from now on) unless
``--from-beginning`` / ``--offset earliest`` or a numeric ``--offset`` (which needs
``--partition``), applied with ``seek_to_end`` / ``seek_to_beginning`` / ``seek``.

``--include REGEX`` reads every topic whose whole name matches (without a group: the topics
that exist when it starts; with one: also the topics created later, as the group's pattern
subscription sees them). ``--group G`` subscribes with ``group.id`` G: the group assigns the
partitions (``--partition`` and a numeric ``--offset`` are refused), a partition without a
committed offset starts where ``--from-beginning`` / ``--offset`` say (``auto.offset.reset``),
and positions are committed (``enable.auto.commit``, and once more when the tool stops).
``--isolation-level read_committed`` reads only committed transactional records.

Consumer settings: ``--consumer-property K=V`` (repeatable, later wins) is any consumer setting
the client's configuration accepts (``fetch.min.bytes``, ``max.partition.fetch.bytes``,
``request.timeout.ms``, ...); an unknown key or a bad value is a usage mistake (exit 2). Not
accepted: ``bootstrap.servers`` (``--bootstrap-server`` says it), ``group.id`` (``--group``
says it), ``group.instance.id`` (no static membership), ``key.deserializer`` and
``value.deserializer`` (the tool prints bytes; ``--value-format`` chooses how). Console
defaults: ``client.id`` ``odradek-console-consumer``, ``allow.auto.create.topics`` false
(reading never creates a topic), ``default.api.timeout.ms`` 10 s: the bound on every wait for
the broker (finding the topic, an offset lookup).

An offset out of range: unless ``auto.offset.reset`` is given, the partition starts again at
its earliest offset with a note on stderr (``odradek: offset 100 is out of range for T-0;
resetting to the earliest offset 0``); the consumer runs with ``auto.offset.reset=none`` and
the tool resets when ``poll`` reports the error. A given ``auto.offset.reset`` is the
consumer's own rule instead (``earliest`` / ``latest`` without a note, ``none`` ends the run
with the error).

Output, as Kafka's default formatter lays it out: the chosen fields in the order timestamp
(``CreateTime:1700000000000``), ``Partition:N``, ``Offset:N``, headers (``k:v,k:v`` or
``NO_HEADERS``), key, value, separated by the key separator (default a tab; ``\\t`` and
friends understood) and ended by a newline. Keys and header values print as their bytes, an
absent one as ``null``. ``--value-format``: ``string`` (the bytes as they are), ``json`` (one
compact JSON value per line; a value that is not JSON prints as a JSON string of its text),
``hex`` or ``base64``.

Ending: after ``--max-messages`` records, after ``--timeout-ms`` without a new record, or on
Ctrl-C; each prints ``Processed a total of N messages`` on stderr and exits 0. An unknown topic
or partition, no answer from the broker within ``default.api.timeout.ms``, or a broker error is
one line and exit 1; a usage mistake exit 2.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final, Protocol

import click

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.cli._options import (
    bootstrap_server_options,
    broker_errors,
    command_settings,
    separator,
)
from odradek.client.admin import AdminClient
from odradek.client.config import ADMIN, CONSUMER, ClientConfig
from odradek.client.consumer import Consumer, ConsumerRecord, TopicPartition
from odradek.errors import (
    ConfigError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from odradek.records.batch import TimestampType

CLIENT_ID: Final = "odradek-console-consumer"
VALUE_FORMATS: Final = ("string", "json", "hex", "base64")
EARLIEST: Final = "earliest"
LATEST: Final = "latest"
#: The console's consumer settings where they differ from the consumer's (``--consumer-property``
#: overrides them).
CONSOLE_DEFAULTS: Final = {
    "client.id": CLIENT_ID,
    "allow.auto.create.topics": False,
    "default.api.timeout.ms": 10_000,
}
#: Consumer settings ``--consumer-property`` may not give, and why.
REFUSED_PROPERTIES: Final = {
    "bootstrap.servers": "give --bootstrap-server",
    "group.id": "give --group",
    "group.instance.id": "odradek consume does not join as a static member",
    "key.deserializer": "keys print as bytes",
    "value.deserializer": "values print as bytes; choose --value-format",
}
#: How long closing the consumer may take (no group: only its threads and connections).
CLOSE_TIMEOUT_MS: Final = 5_000
#: The longest single ``poll`` when there is no ``--timeout-ms``.
IDLE_POLL_MS: Final = 1_000
_TIMESTAMP_NAMES: Final = {
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}
_PROPERTY_HINT: Final = "'--consumer-property'"


@dataclass(frozen=True, slots=True)
class RecordFormat:
    """What ``format_record`` prints of a record (see the module docstring)."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    separator: bytes = b"\t"
    value_format: str = "string"


def format_record(record: ConsumerRecord, layout: RecordFormat) -> bytes:
    """The output line of one record, newline included (pure)."""
    columns: list[bytes] = []
    if layout.print_timestamp:
        name = _TIMESTAMP_NAMES.get(record.timestamp_type, "CreateTime")
        columns.append(f"{name}:{record.timestamp}".encode())
    if layout.print_partition:
        columns.append(f"Partition:{record.partition}".encode())
    if layout.print_offset:
        columns.append(f"Offset:{record.offset}".encode())
    if layout.print_headers:
        columns.append(
            b",".join(key.encode() + b":" + _or_null(value) for key, value in record.headers)
            if record.headers
            else b"NO_HEADERS"
        )
    if layout.print_key:
        columns.append(_or_null(_as_bytes(record.key)))
    columns.append(format_value(_as_bytes(record.value), layout.value_format))
    return layout.separator.join(columns) + b"\n"


def format_value(value: bytes | None, value_format: str) -> bytes:
    """A value in one of ``VALUE_FORMATS``; an absent value is ``null`` in each."""
    if value is None:
        return b"null"
    if value_format == "hex":
        return value.hex().encode()
    if value_format == "base64":
        return base64.b64encode(value)
    if value_format == "json":
        try:
            parsed: Any = json.loads(value)
        except ValueError:  # not JSON, or not UTF-8: print the text as a JSON string
            parsed = value.decode("utf-8", errors="replace")
        return json.dumps(parsed, ensure_ascii=False, separators=(",", ":")).encode()
    return value


def _as_bytes(data: object) -> bytes | None:
    """A key or value as the consumer returns it (bytes, the console's deserializer)."""
    if data is None or isinstance(data, bytes):
        return data
    return str(data).encode()


def _or_null(data: bytes | None) -> bytes:
    return b"null" if data is None else data


class OffsetType(click.ParamType[int | str]):
    """``earliest``, ``latest`` or a non-negative offset."""

    name = "offset"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) or value in (EARLIEST, LATEST):
            return value
        text = str(value)
        if not text.isdigit():
            self.fail(f"expected {EARLIEST}, {LATEST} or an offset >= 0, got {text!r}", param, ctx)
        return int(text)


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    """The checked consumer configuration and whether the tool resets out-of-range offsets
    itself (with a note) because no ``auto.offset.reset`` was given."""

    config: ClientConfig
    note_resets: bool


def consumer_config(
    bootstrap_server: str,
    properties: Sequence[str],
    *,
    group: str | None = None,
    isolation_level: str | None = None,
    start: int | str = LATEST,
) -> ConsoleConfig:
    """The consumer's configuration from ``--consumer-property K=V`` entries (later wins) over
    ``CONSOLE_DEFAULTS``, checked by the client's configuration (no connection made). With a
    ``group``: its ``group.id``, auto-commit on, and ``auto.offset.reset`` from ``start``
    unless given.

    Raises:
        click.BadParameter: an entry without ``=``, a refused or unknown key, a bad value.
    """
    given: dict[str, str] = {}
    for entry in properties:
        name, found, value = entry.partition("=")
        name = name.strip()
        if not found or not name:
            raise click.BadParameter(f"expected K=V, got {entry!r}", param_hint=_PROPERTY_HINT)
        if name in REFUSED_PROPERTIES:
            raise click.BadParameter(
                f"{name} cannot be set here ({REFUSED_PROPERTIES[name]})", param_hint=_PROPERTY_HINT
            )
        given[name] = value.strip()
    settings: dict[str, Any] = dict(CONSOLE_DEFAULTS)
    settings.update(command_settings())
    settings.update(given)
    settings["bootstrap.servers"] = bootstrap_server
    if isolation_level is not None:
        settings["isolation.level"] = isolation_level
    note_resets = "auto.offset.reset" not in given and group is None
    if group is not None:
        settings["group.id"] = group
        settings.setdefault("enable.auto.commit", True)
        settings.setdefault("auto.offset.reset", EARLIEST if start == EARLIEST else LATEST)
    elif note_resets:
        settings["auto.offset.reset"] = "none"  # poll reports it; the tool resets and says so
    try:
        config = ClientConfig(settings, client_type=CONSUMER)
    except ConfigError as error:
        raise click.BadParameter(str(error), param_hint=_PROPERTY_HINT) from None
    return ConsoleConfig(config, note_resets)


@click.command("consume")
@bootstrap_server_options("--consumer.config", client_type=CONSUMER)
@click.option("--topic", help="The topic (or --include).")
@click.option("--include", metavar="REGEX", help="Every topic whose name matches.")
@click.option("--group", help="Join this consumer group and commit (default: no group).")
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default=None,
    help="Whether aborted transactional records are read (isolation.level).",
)
@click.option(
    "--partition",
    "partitions",
    type=click.IntRange(min=0),
    multiple=True,
    help="Read this partition (repeatable). Default: every partition of the topic.",
)
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset.")
@click.option(
    "--offset",
    type=OffsetType(),
    default=None,
    metavar="O|earliest|latest",
    help="Where to start (a number needs --partition). Default: latest.",
)
@click.option(
    "--max-messages", type=click.IntRange(min=1), default=None, help="Stop after N records."
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=0),
    default=None,
    help="Stop after this long without a new record. Default: run until Ctrl-C.",
)
@click.option("--print-key", is_flag=True, help="Print each record's key.")
@click.option(
    "--key-separator",
    default="\\t",
    metavar="SEP",
    help="Between the printed fields (default a tab).",
)
@click.option("--print-headers", is_flag=True, help="Print each record's headers.")
@click.option("--print-offset", is_flag=True, help="Print each record's offset.")
@click.option("--print-partition", is_flag=True, help="Print each record's partition.")
@click.option("--print-timestamp", is_flag=True, help="Print each record's timestamp.")
@click.option(
    "--value-format",
    type=click.Choice(VALUE_FORMATS),
    default="string",
    show_default=True,
    help="How values are printed.",
)
@click.option(
    "--consumer-property",
    "consumer_properties",
    multiple=True,
    metavar="K=V",
    help="A consumer setting (fetch.min.bytes, max.partition.fetch.bytes, "
    "default.api.timeout.ms, ...).",
)
def consume(
    bootstrap_server: str,
    topic: str | None,
    include: str | None,
    group: str | None,
    isolation_level: str | None,
    partitions: tuple[int, ...],
    from_beginning: bool,
    offset: int | str | None,
    max_messages: int | None,
    timeout_ms: int | None,
    print_key: bool,
    key_separator: str,
    print_headers: bool,
    print_offset: bool,
    print_partition: bool,
    print_timestamp: bool,
    value_format: str,
    consumer_properties: tuple[str, ...],
) -> None:
    """Print the records of a topic, one per line."""
    if (topic is None) == (include is None):
        raise click.UsageError("give --topic or --include")
    pattern = None if include is None else _pattern(include)
    if from_beginning and offset is not None:
        raise click.UsageError("give --from-beginning or --offset, not both")
    if group is not None and (partitions or isinstance(offset, int)):
        raise click.UsageError("with --group the group assigns partitions and offsets")
    if include is not None and partitions:
        raise click.UsageError("--partition goes with --topic")
    if isinstance(offset, int) and not partitions:
        raise click.UsageError("--offset with a number needs --partition")
    start = EARLIEST if from_beginning else LATEST if offset is None else offset
    layout = RecordFormat(
        print_timestamp=print_timestamp,
        print_partition=print_partition,
        print_offset=print_offset,
        print_headers=print_headers,
        print_key=print_key,
        separator=separator(key_separator, "'--key-separator'").encode(),
        value_format=value_format,
    )
    console = consumer_config(
        bootstrap_server,
        consumer_properties,
        group=group,
        isolation_level=isolation_level,
        start=start,
    )
    out = _stdout()
    run = ConsoleRun(out, layout, max_messages, timeout_ms)
    try:
        with broker_errors():
            if group is not None:
                consumer = Consumer(console.config)
                try:
                    consumer.subscribe([topic] if topic is not None else [], pattern=pattern)
                    run.loop(consumer)
                finally:
                    consumer.close(CLOSE_TIMEOUT_MS)  # commits the positions reached
            else:
                assigned = _assignment(console.config, bootstrap_server, topic, pattern, partitions)
                consumer = Consumer(console.config)
                try:
                    reader = ConsoleReader(consumer, assigned, console.note_resets, _note)
                    reader.start(start)
                    run.loop(reader)
                finally:
                    consumer.close(CLOSE_TIMEOUT_MS)
    except KeyboardInterrupt:
        pass  # Ctrl-C is the usual way to stop: not an error
    except BrokenPipeError:
        _silence_stdout()  # the reader went away (``| head``): stop quietly
    else:
        out.flush()
    click.echo(f"Processed a total of {run.count} messages", err=True)


def _pattern(include: str) -> re.Pattern[str]:
    try:
        return re.compile(include)
    except re.error as error:
        raise click.BadParameter(
            f"not a regular expression: {error}", param_hint="--include"
        ) from None


def _assignment(
    config: ClientConfig,
    bootstrap_server: str,
    topic: str | None,
    pattern: re.Pattern[str] | None,
    partitions: Sequence[int],
) -> list[TopicPartition]:
    """The partitions to assign without a group: the topic's (or those named), or every
    partition of the topics whose whole name matches ``pattern``.

    Raises:
        UnknownTopicOrPartitionError: the topic or a named partition does not exist, or no
            topic matches.
    """
    if topic is not None:
        existing = _partitions_of(config, topic, bootstrap_server)
        for partition in partitions:
            if partition not in existing:
                raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {partition}")
        return [TopicPartition(topic, p) for p in dict.fromkeys(partitions or existing)]
    assert pattern is not None
    admin = AdminClient(config.for_type(ADMIN))
    try:
        names = sorted(name for name in admin.list_topics() if pattern.fullmatch(name))
    finally:
        admin.close()
    if not names:
        raise UnknownTopicOrPartitionError(f"no topic matches {pattern.pattern!r}")
    return [
        TopicPartition(name, p)
        for name in names
        for p in _partitions_of(config, name, bootstrap_server)
    ]


def _partitions_of(config: ClientConfig, topic: str, bootstrap_server: str) -> list[int]:
    """The topic's partition numbers, sorted, asked with an admin client (never creating the
    topic) within ``default.api.timeout.ms``.

    Raises:
        click.ClickException: no broker answered in time.
        UnknownTopicOrPartitionError: the topic does not exist.
        KafkaError: another error of the broker's for the topic.
    """
    timeout_ms = config.get_int("default.api.timeout.ms")
    admin = AdminClient(config.for_type(ADMIN))
    try:
        description = admin.describe_topics([topic], timeout_ms=timeout_ms)[topic]
    except KafkaTimeoutError:
        raise click.ClickException(
            f"REQUEST_TIMED_OUT: no broker at {bootstrap_server} answered within {timeout_ms} ms"
        ) from None
    except UnknownTopicOrPartitionError:
        raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist") from None
    finally:
        admin.close()
    return sorted(p.partition for p in description.partitions)


class RecordSource(Protocol):
    """What ``ConsoleRun`` reads from."""

    def poll(self, timeout_ms: int, max_records: int | None) -> Sequence[ConsumerRecord]: ...


class ConsoleReader:
    """A ``Consumer`` with the console's manual assignment, start position and
    out-of-range rule (see the module docstring).

    Args:
        consumer: the consumer (owned by the caller, who closes it).
        partitions: what to read.
        note_resets: reset a partition whose position is out of range to its earliest offset
            and tell ``on_note`` (the consumer runs with ``auto.offset.reset=none``); otherwise
            the consumer's own rule applies.
        on_note: told one line per reset.
    """

    def __init__(
        self,
        consumer: Consumer,
        partitions: Sequence[TopicPartition],
        note_resets: bool,
        on_note: Callable[[str], None],
    ) -> None:
        self._consumer = consumer
        self._partitions = list(partitions)
        self._note_resets = note_resets
        self._on_note = on_note
        #: The next offset of each partition as far as this reader knows it (seek, records).
        self._next: dict[TopicPartition, int] = {}

    def start(self, start: int | str) -> None:
        """Assigns the partitions and seeks: ``earliest``, ``latest`` or an offset in each."""
        consumer = self._consumer
        consumer.assign(self._partitions)
        if start == EARLIEST:
            consumer.seek_to_beginning(self._partitions)
        elif start == LATEST:
            consumer.seek_to_end(self._partitions)
        else:
            assert isinstance(start, int)
            for tp in self._partitions:
                consumer.seek(tp, start)
                self._next[tp] = start

    def poll(self, timeout_ms: int, max_records: int | None) -> Sequence[ConsumerRecord]:
        """Up to ``max_records`` records, waiting up to ``timeout_ms``; ``[]`` after a reset.

        Raises:
            KafkaError: as ``Consumer.poll``.
        """
        try:
            records = self._consumer.poll(timeout_ms, max_records)
        except OffsetOutOfRangeError:
            if not self._note_resets:
                raise
            self._reset_out_of_range()
            return []
        known = self._next
        for record in records:
            known[TopicPartition(record.topic, record.partition)] = record.offset + 1
        return records

    def _reset_out_of_range(self) -> None:
        consumer = self._consumer
        failed: list[TopicPartition] = []
        for tp in self._partitions:
            try:
                consumer.position(tp, timeout_ms=0)
            except OffsetOutOfRangeError:
                failed.append(tp)
            except KafkaTimeoutError:
                pass  # no position yet (being looked up): not the one out of range
        consumer.seek_to_beginning(failed)
        for tp in failed:
            earliest = consumer.position(tp)
            old = self._next.get(tp)
            what = (
                f"offset {old} is out of range for {tp}"
                if old is not None
                else (f"the position of {tp} is out of range")
            )
            self._on_note(f"{what}; resetting to the earliest offset {earliest}")
            self._next[tp] = earliest


class ByteSink(Protocol):
    """Where output lines go."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


class _TextSink:
    """Bytes to a text stream that has no binary buffer (a ``StringIO``)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, data: bytes, /) -> object:
        return self._stream.write(data.decode("utf-8", errors="replace"))

    def flush(self) -> object:
        return self._stream.flush()


def _stdout() -> ByteSink:
    sys.stdout.flush()
    buffer: ByteSink | None = getattr(sys.stdout, "buffer", None)
    return buffer if buffer is not None else _TextSink(sys.stdout)


class ConsoleRun:
    """The poll-and-print loop and its count of printed records.

    Args:
        out: where the lines go (flushed after every poll, so a tail shows at once).
        layout: what each line shows.
        max_messages: stop after this many records (``None``: no limit).
        timeout_ms: stop after this long without a new record (``None``: never).
        clock: measures the time without records.
    """

    def __init__(
        self,
        out: ByteSink,
        layout: RecordFormat,
        max_messages: int | None,
        timeout_ms: int | None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._out = out
        self._layout = layout
        self._max_messages = max_messages
        self._timeout_ms = timeout_ms
        self._clock = clock
        self.count = 0

    def loop(self, source: RecordSource) -> None:
        """Polls and prints until ``max_messages`` or ``timeout_ms`` (or an exception)."""
        last_record_ms = self._clock.monotonic_ms()
        while True:
            wait_ms = IDLE_POLL_MS
            if self._timeout_ms is not None:
                idle_ms = self._clock.monotonic_ms() - last_record_ms
                if idle_ms >= self._timeout_ms:
                    return
                wait_ms = self._timeout_ms - idle_ms
            limit = None if self._max_messages is None else self._max_messages - self.count
            records = source.poll(wait_ms, limit)
            if not records:
                continue
            last_record_ms = self._clock.monotonic_ms()
            for record in records:
                # Count first: Ctrl-C can land right after the write returns, and a printed
                # record must be counted.
                self.count += 1
                self._out.write(format_record(record, self._layout))
                if self.count == self._max_messages:
                    self._out.flush()
                    return
            self._out.flush()


def _note(text: str) -> None:
    click.echo(f"odradek: {text}", err=True)


def _silence_stdout() -> None:
    """Points stdout at /dev/null so that the interpreter's last flush does not fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass

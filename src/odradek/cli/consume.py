"""``odradek consume``: the console consumer, one line of stdout per record.

Like Kafka's ``kafka-console-consumer.sh`` (without a group: it reads partitions it assigns
itself and commits nothing)::

    odradek consume --bootstrap-server HOST:PORT --topic T [--partition N ...]
                    [--from-beginning | --offset O|earliest|latest] [--max-messages N]
                    [--timeout-ms MS] [--print-key] [--key-separator SEP] [--print-headers]
                    [--print-offset] [--print-partition] [--print-timestamp]
                    [--value-format string|json|hex|base64] [--consumer-property K=V ...]

Which records: every partition of the topic unless ``--partition`` names some; from the end
(only records produced from now on) unless ``--from-beginning`` / ``--offset earliest`` or a
numeric ``--offset`` (which needs ``--partition``). An offset out of range starts again at the
earliest offset, with a note on stderr. ``--consumer-property`` takes Kafka's fetch settings:
``fetch.min.bytes``, ``fetch.max.wait.ms``, ``fetch.max.bytes``, ``max.partition.fetch.bytes``.

Output, as Kafka's default formatter lays it out: the chosen fields in the order timestamp
(``CreateTime:1700000000000``), ``Partition:N``, ``Offset:N``, headers (``k:v,k:v`` or
``NO_HEADERS``), key, value, separated by the key separator (default a tab; ``\\t`` and
friends understood) and ended by a newline. Keys and header values print as their bytes, an
absent one as ``null``. ``--value-format``: ``string`` (the bytes as they are), ``json`` (one
compact JSON value per line; a value that is not JSON prints as a JSON string of its text),
``hex`` or ``base64``.

Ending: after ``--max-messages`` records, after ``--timeout-ms`` without a new record, or on
Ctrl-C; each prints ``Processed a total of N messages`` on stderr and exits 0. An unknown topic
or partition, an unreachable broker or a broker error is one line and exit 1; a usage mistake
exit 2.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import IO, Any, Final, Protocol

import click

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._version import __version__
from odradek.cli._options import bootstrap_server_option, broker_errors, separator, topic_option
from odradek.cli._wire_client import ConsumedRecord, FetchSettings, WireConsumer, WireSession
from odradek.errors import UnknownTopicOrPartitionError
from odradek.records.batch import TimestampType

CLIENT_ID: Final = "odradek-console-consumer"
VALUE_FORMATS: Final = ("string", "json", "hex", "base64")
EARLIEST: Final = "earliest"
LATEST: Final = "latest"
#: ``--consumer-property`` names and the ``FetchSettings`` fields they set.
CONSUMER_PROPERTIES: Final = {
    "fetch.max.wait.ms": "max_wait_ms",
    "fetch.min.bytes": "min_bytes",
    "fetch.max.bytes": "max_bytes",
    "max.partition.fetch.bytes": "max_partition_bytes",
}
_TIMESTAMP_NAMES: Final = {
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


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


def format_record(record: ConsumedRecord, layout: RecordFormat) -> bytes:
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
        columns.append(_or_null(record.key))
    columns.append(format_value(record.value, layout.value_format))
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


def fetch_settings(properties: Sequence[str]) -> FetchSettings:
    """``--consumer-property K=V`` entries to fetch settings (later wins).

    Raises:
        click.BadParameter: an unknown name, or a value that is not a whole number in range.
    """
    values: dict[str, int] = {}
    for entry in properties:
        name, found, text = entry.partition("=")
        name = name.strip()
        if not found or name not in CONSUMER_PROPERTIES:
            known = ", ".join(CONSUMER_PROPERTIES)
            raise click.BadParameter(
                f"expected K=V with K one of {known}, got {entry!r}",
                param_hint="'--consumer-property'",
            )
        text = text.strip()
        least = 0 if name in ("fetch.max.wait.ms", "fetch.min.bytes") else 1
        if not text.isdigit() or not least <= int(text) < 2**31:
            raise click.BadParameter(
                f"{name} must be a whole number from {least} to {2**31 - 1}, got {text!r}",
                param_hint="'--consumer-property'",
            )
        values[CONSUMER_PROPERTIES[name]] = int(text)
    defaults = FetchSettings()
    settings = {field.name: getattr(defaults, field.name) for field in fields(FetchSettings)}
    settings.update(values)
    return FetchSettings(**settings)


@click.command("consume")
@bootstrap_server_option
@topic_option
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
    help="A fetch setting: fetch.min.bytes, fetch.max.wait.ms, fetch.max.bytes, "
    "max.partition.fetch.bytes.",
)
def consume(
    bootstrap_server: str,
    topic: str,
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
    if from_beginning and offset is not None:
        raise click.UsageError("give --from-beginning or --offset, not both")
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
    settings = fetch_settings(consumer_properties)
    out = _stdout()
    run = ConsoleRun(out, layout, max_messages, timeout_ms)
    try:
        with (
            broker_errors(),
            WireSession(
                bootstrap_server, client_id=CLIENT_ID, software_version=__version__
            ) as session,
        ):
            consumer = WireConsumer(session, topic, settings, on_note=_note)
            _assign(consumer, session.partitions_for(topic), partitions, start)
            run.loop(consumer, settings.max_wait_ms)
    except KeyboardInterrupt:
        pass  # Ctrl-C is the usual way to stop: not an error
    except BrokenPipeError:
        _silence_stdout()  # the reader went away (``| head``): stop quietly
    else:
        out.flush()
    click.echo(f"Processed a total of {run.count} messages", err=True)


def _assign(
    consumer: WireConsumer, existing: list[int], chosen: Sequence[int], start: int | str
) -> None:
    for partition in chosen:
        if partition not in existing:
            raise UnknownTopicOrPartitionError(
                f"topic {consumer.topic!r} has no partition {partition}"
            )
    consumer.assign(chosen or existing)
    if start == EARLIEST:
        consumer.seek_to_beginning()
    elif start == LATEST:
        consumer.seek_to_end()
    else:
        assert isinstance(start, int)
        for partition in chosen:
            consumer.seek(partition, start)


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
    """The fetch-and-print loop and its count of printed records.

    Args:
        out: where the lines go (flushed after every fetch, so a tail shows at once).
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

    def loop(self, consumer: WireConsumer, max_wait_ms: int) -> None:
        """Polls and prints until ``max_messages`` or ``timeout_ms`` (or an exception)."""
        last_record_ms = self._clock.monotonic_ms()
        while True:
            wait_ms = max_wait_ms
            if self._timeout_ms is not None:
                idle_ms = self._clock.monotonic_ms() - last_record_ms
                if idle_ms >= self._timeout_ms:
                    return
                wait_ms = min(wait_ms, self._timeout_ms - idle_ms)
            records = consumer.poll(wait_ms)
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

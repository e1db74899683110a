"""``odradek produce``: the console producer, one record per line of stdin, sent with
``odradek.Producer``.

Like Kafka's ``kafka-console-producer.sh``::

    odradek produce --bootstrap-server HOST:PORT --topic T [--partition N]
                    [--key-separator SEP] [--header K=V ...] [--acks 0|1|all]
                    [--compression none|gzip|snappy|lz4|zstd] [--batch-size N]
                    [--max-block-ms MS] [--value-format string|json|base64] [--verbose]

Input: each line of stdin is one record; its line end (``\\n`` or ``\\r\\n``) is not part of
it and an empty line is an empty value. With ``--key-separator SEP`` (``\\t`` and friends
understood) a line is ``KEY SEP VALUE``, split at the first SEP, and the key is the UTF-8 text
before it; a line without SEP ends the run. ``--header K=V`` (repeatable) adds the same
headers to every record. ``--value-format`` says what the value text is: ``string`` (sent as
it is), ``json`` (checked to be one JSON value, sent as it is) or ``base64`` (decoded, so
binary values can be sent).

Producer settings: ``acks`` and ``compression.type`` from the options of those names,
``max.block.ms`` from ``--max-block-ms`` (default 10 s, not the producer's 60 s),
``linger.ms`` 1000 (Kafka's console default: batches leave when flushed or full), the
producer's defaults otherwise (``batch.size`` 16 KiB per partition's batch). Any producer
setting by ``--producer-property K=V`` (repeatable; it wins over the options above); an unknown
key or a bad value is a usage mistake (exit 2), and ``bootstrap.servers`` and the serializers
are refused.

Partitioning (the producer's default partitioner): ``--partition`` for every record, else
murmur2 of the key for keyed records, and for unkeyed ones a sticky partition kept until its
batch is full or sent (KIP-480), then another.

Batching: the producer is flushed after every ``--batch-size`` records, so a Produce request
carries at most that many; also when stdin has no further line ready (so lines typed by hand
go at once), and at the end of input or on Ctrl-C (what was read is sent; the summary and exit
status follow as at the end of input).

Topics: the producer's metadata requests let the broker create an unknown topic when its
``auto.create.topics.enable`` is on (as Kafka's console producer does); otherwise, or when no
broker answers, the run ends after ``--max-block-ms`` with one line and exit 1.

Errors: each partition the records of a flush failed for is one line on stderr
(``odradek: T-2: MESSAGE_TOO_LARGE (1 record not produced)``; ``odradek: T: ...`` for records
refused before a partition was chosen, such as one larger than ``max.request.size``) and the run
ends with exit 1 and a count; with ``--acks 0`` a record counts as produced once sent. A line
that does not parse is one line and exit 1 (records before it are sent); an unknown
``--partition`` is one line and exit 1; a usage mistake exit 2. ``--verbose`` adds
``produced N records to T`` on stderr.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
import select
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Final

import click

from odradek.cli._options import (
    bootstrap_server_options,
    broker_errors,
    command_settings,
    separator,
    topic_option,
)
from odradek.client.config import PRODUCER, ClientConfig
from odradek.client.producer import Producer, RecordMetadata
from odradek.errors import ConfigError, KafkaError, KafkaTimeoutError, UnknownTopicOrPartitionError
from odradek.records.record import Header

CLIENT_ID: Final = "odradek-console-producer"
DEFAULT_BATCH_SIZE: Final = 200
#: ``max.block.ms`` for the console: how long to wait for the topic's metadata (and memory).
DEFAULT_MAX_BLOCK_MS: Final = 10_000
#: ``linger.ms``: Kafka's console default; batches leave when flushed (or full) before that.
LINGER_MS: Final = 1_000
ACKS: Final = ("0", "1", "all", "-1")
COMPRESSION: Final = ("none", "gzip", "snappy", "lz4", "zstd")
VALUE_FORMATS: Final = ("string", "json", "base64")
_READ_BYTES: Final = 65536
#: The partition of a record that failed before the producer chose one.
_NO_PARTITION: Final = -1


class LineError(ValueError):
    """A line of input that is not a record in the chosen format; the message says why."""


@dataclass(frozen=True, slots=True)
class LineParser:
    """Turns one input line into a record's key and value (pure).

    Args:
        key_separator: split keys off at its first occurrence; ``None``: no keys.
        value_format: ``string``, ``json`` or ``base64`` (see the module docstring).
    """

    key_separator: bytes | None = None
    value_format: str = "string"

    def parse(self, line: bytes) -> tuple[bytes | None, bytes]:
        """Returns ``(key, value)``.

        Raises:
            LineError: no key separator, or a value that is not JSON / base64.
        """
        key: bytes | None = None
        value = line
        if self.key_separator is not None:
            key, found, value = line.partition(self.key_separator)
            if not found:
                raise LineError(f"no key separator {self.key_separator.decode()!r} in the line")
        if self.value_format == "json":
            try:
                json.loads(value)
            except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
                raise LineError(f"the value is not JSON: {error}") from None
        elif self.value_format == "base64":
            try:
                value = base64.b64decode(value, validate=True)
            except binascii.Error as error:
                raise LineError(f"the value is not base64: {error}") from None
        return key, value


class LineSource:
    """The lines of a binary stream, and whether another one is ready without waiting.

    On a stream with a file descriptor (a terminal, a pipe, a file) it reads with ``os.read``
    and asks ``select`` whether more is waiting; on an in-memory stream every line is ready.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._buffer = b""
        self._eof = False
        try:
            self._fd: int | None = stream.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):
            self._fd = None

    def __iter__(self) -> Iterator[bytes]:
        while True:
            line = self._next_line()
            if line is None:
                return
            yield line

    def ready(self) -> bool:
        """True when the next line (or the end of input) can be read without waiting."""
        if self._fd is None or self._eof or b"\n" in self._buffer:
            return True
        readable, _, _ = select.select([self._fd], [], [], 0)
        return bool(readable)

    def _next_line(self) -> bytes | None:
        if self._fd is None:
            line = self._stream.readline()
            return _strip_line_end(line) if line else None
        while b"\n" not in self._buffer and not self._eof:
            chunk = os.read(self._fd, _READ_BYTES)
            self._eof = not chunk
            self._buffer += chunk
        if not self._buffer:
            return None
        line, found, self._buffer = self._buffer.partition(b"\n")
        return _strip_line_end(line + found)


def _strip_line_end(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
    return line


def parse_header(text: str) -> Header:
    """``K=V`` to a record header (the value may be empty, the key may not).

    Raises:
        click.BadParameter: no ``=`` or an empty key.
    """
    key, found, value = text.partition("=")
    if not found or not key:
        raise click.BadParameter(f"expected K=V, got {text!r}", param_hint="'--header'")
    return key, value.encode()


class DeliveryTally:
    """The producer's delivery callback for every record: counts the acknowledged records and
    the failed ones by partition and error.

    Called on the producer's network thread (or the sending thread for a record refused in
    ``send``); read by the sending thread after ``Producer.flush``, which returns only after
    the callbacks of everything flushed ran.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._produced = 0
        self._failed: dict[tuple[int, str], int] = {}

    def __call__(self, metadata: RecordMetadata, error: BaseException | None) -> None:
        with self._lock:
            if error is None:
                self._produced += 1
            else:
                key = (metadata.partition, _error_name(error))
                self._failed[key] = self._failed.get(key, 0) + 1

    @property
    def produced(self) -> int:
        """Records acknowledged so far (with acks=0: sent)."""
        with self._lock:
            return self._produced

    def take_failures(self) -> list[tuple[int, str, int]]:
        """``(partition, error name, records)`` failed since the last call, by partition."""
        with self._lock:
            failed, self._failed = self._failed, {}
        return sorted((partition, name, count) for (partition, name), count in failed.items())


def _error_name(error: BaseException) -> str:
    if isinstance(error, KafkaError):
        return error.error_code.name
    return type(error).__name__


@click.command("produce")
@bootstrap_server_options("--producer.config", client_type=PRODUCER)
@topic_option
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    default=None,
    help="Send every record to this partition. Default: Kafka's default partitioner.",
)
@click.option(
    "--key-separator",
    default=None,
    metavar="SEP",
    help="Read a key before SEP on every line (\\t for a tab).",
)
@click.option(
    "--header", "headers", multiple=True, metavar="K=V", help="A header for every record."
)
@click.option(
    "--acks",
    type=click.Choice(list(ACKS)),
    default="all",
    show_default=True,
    help="Acknowledgements the broker waits for (Kafka's acks).",
)
@click.option(
    "--compression",
    type=click.Choice(list(COMPRESSION)),
    default="none",
    show_default=True,
    help="The record batches' compression codec (compression.type).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    help="The most records in one request (the producer is flushed after this many).",
)
@click.option(
    "--max-block-ms",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_BLOCK_MS,
    show_default=True,
    help="The longest wait for the topic's metadata (max.block.ms).",
)
@click.option(
    "--value-format",
    type=click.Choice(VALUE_FORMATS),
    default="string",
    show_default=True,
    help="What the value text is.",
)
@click.option(
    "--producer-property",
    "producer_properties",
    multiple=True,
    metavar="K=V",
    help="A producer setting (linger.ms, batch.size, enable.idempotence, ...).",
)
@click.option("--verbose", is_flag=True, help="Print a summary on stderr at the end.")
def produce(
    bootstrap_server: str,
    topic: str,
    partition: int | None,
    key_separator: str | None,
    headers: tuple[str, ...],
    acks: str,
    compression: str,
    batch_size: int,
    max_block_ms: int,
    value_format: str,
    producer_properties: tuple[str, ...],
    verbose: bool,
) -> None:
    """Send the lines of stdin to a topic, one record per line."""
    record_headers = [parse_header(text) for text in headers]
    key_sep = None
    if key_separator is not None:
        key_sep = separator(key_separator, "'--key-separator'").encode()
    parser = LineParser(key_sep, value_format)
    source = LineSource(_stdin())
    tally = DeliveryTally()
    config: dict[str, Any] = command_settings()
    config.update(
        {
            "bootstrap.servers": bootstrap_server,
            "client.id": CLIENT_ID,
            "acks": acks,
            "compression.type": compression,
            "linger.ms": LINGER_MS,
            "max.block.ms": max_block_ms,
        }
    )
    config.update(producer_settings(producer_properties))
    try:
        ClientConfig(config, client_type=PRODUCER)
    except ConfigError as error:
        raise click.BadParameter(str(error), param_hint=_PROPERTY_HINT) from None
    with broker_errors():
        try:
            producer = Producer(config)
        except ConfigError as error:  # a --producer-property value the producer refuses
            raise click.BadParameter(str(error), param_hint=_PROPERTY_HINT) from None
        try:
            _check_topic(producer, topic, partition, max_block_ms, bootstrap_server)
            failed, line_error = _run(
                source, parser, producer, tally, topic, record_headers, partition, batch_size
            )
        except BaseException:
            producer.close(0)
            raise
        producer.close()
    produced = tally.produced
    if verbose:
        click.echo(f"produced {produced} records to {topic}", err=True)
    if line_error is not None:
        raise click.ClickException(line_error)
    if failed:
        raise click.ClickException(
            f"{failed} of {failed + produced} records were not produced to {topic}"
        )


_PROPERTY_HINT: Final = "'--producer-property'"
#: Producer settings ``--producer-property`` may not give, and why.
REFUSED_PROPERTIES: Final = {
    "bootstrap.servers": "give --bootstrap-server",
    "key.serializer": "keys are sent as the bytes read",
    "value.serializer": "values are sent as the bytes read; choose --value-format",
}


def producer_settings(properties: tuple[str, ...]) -> dict[str, str]:
    """``K=V`` entries (later wins).

    Raises:
        click.BadParameter: an entry without ``=``, or a refused key.
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
    return given


def _check_topic(
    producer: Producer, topic: str, partition: int | None, max_block_ms: int, bootstrap: str
) -> None:
    """Waits for the topic's metadata (the broker may create the topic) and checks
    ``--partition`` against it.

    Raises:
        click.ClickException: no metadata within ``max_block_ms``.
        UnknownTopicOrPartitionError: the topic has no such partition.
        KafkaError: the broker refused the topic (an invalid name, authorization).
    """
    try:
        count = len(producer.partitions_for(topic))
    except KafkaTimeoutError:
        raise click.ClickException(
            f"REQUEST_TIMED_OUT: topic {topic!r} not present in metadata after {max_block_ms} ms"
            f" (no broker answered at {bootstrap}, or the topic does not exist and the broker"
            " does not create topics)"
        ) from None
    if partition is not None and partition >= count:
        raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {partition}")


def _run(
    source: LineSource,
    parser: LineParser,
    producer: Producer,
    tally: DeliveryTally,
    topic: str,
    headers: list[Header],
    partition: int | None,
    batch_size: int,
) -> tuple[int, str | None]:
    """Sends every line; returns the count of failed records and the first line error."""
    failed = 0
    line_error = None
    unflushed = 0
    try:
        for number, line in enumerate(source, start=1):
            try:
                key, value = parser.parse(line)
            except LineError as error:
                line_error = f"line {number}: {error}"
                break
            producer.send(topic, value, key, partition=partition, headers=headers, callback=tally)
            unflushed += 1
            if unflushed >= batch_size or not source.ready():
                producer.flush()
                unflushed = 0
                failed += _report(topic, tally.take_failures())
    except KeyboardInterrupt:
        pass  # Ctrl-C ends the input: what was read is still sent
    producer.flush()
    failed += _report(topic, tally.take_failures())
    return failed, line_error


def _report(topic: str, failures: list[tuple[int, str, int]]) -> int:
    for partition, name, records in failures:
        where = topic if partition == _NO_PARTITION else f"{topic}-{partition}"
        plural = "record" if records == 1 else "records"
        click.echo(f"odradek: {where}: {name} ({records} {plural} not produced)", err=True)
    return sum(records for _, _, records in failures)


def _stdin() -> IO[bytes]:
    stream = sys.stdin
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return buffer  # type: ignore[no-any-return]
    return io.BytesIO(stream.read().encode())

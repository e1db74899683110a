"""``odradek produce``: the console producer, one record per line of stdin.

Like Kafka's ``kafka-console-producer.sh``::

    odradek produce --bootstrap-server HOST:PORT --topic T [--partition N]
                    [--key-separator SEP] [--header K=V ...] [--acks 0|1|all]
                    [--compression none|gzip|snappy|lz4|zstd] [--batch-size N]
                    [--value-format string|json|base64] [--verbose]

Input: each line of stdin is one record; its line end (``\\n`` or ``\\r\\n``) is not part of
it and an empty line is an empty value. With ``--key-separator SEP`` (``\\t`` and friends
understood) a line is ``KEY SEP VALUE``, split at the first SEP, and the key is the UTF-8 text
before it; a line without SEP ends the run. ``--header K=V`` (repeatable) adds the same
headers to every record. ``--value-format`` says what the value text is: ``string`` (sent as
it is), ``json`` (checked to be one JSON value, sent as it is) or ``base64`` (decoded, so
binary values can be sent).

Partitioning (``_wire_client.WireProducer``): ``--partition`` for every record, else Kafka's
default partitioner: murmur2 of the key for keyed records, sticky per request for unkeyed ones.

Batching: a Produce request carries at most ``--batch-size`` records; it leaves early when
stdin has no further line ready (so lines typed by hand go at once), and at the end of input
or on Ctrl-C.

Errors: each partition the broker refuses records for is one line on stderr
(``odradek: T-2: MESSAGE_TOO_LARGE (1 record not produced)``) and the run ends with exit 1 and
a count; a line that does not parse is one line and exit 1 (records before it are sent); an
unknown topic or an unreachable broker is one line and exit 1; a usage mistake exit 2.
``--verbose`` adds ``produced N records to T`` on stderr.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
import select
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Final

import click

from odradek._version import __version__
from odradek.cli._options import bootstrap_server_option, broker_errors, separator, topic_option
from odradek.cli._wire_client import ProduceFailure, WireProducer, WireSession
from odradek.errors import UnknownTopicOrPartitionError
from odradek.records.batch import CompressionType
from odradek.records.record import Header

CLIENT_ID: Final = "odradek-console-producer"
DEFAULT_BATCH_SIZE: Final = 200
ACKS: Final = {"0": 0, "1": 1, "all": -1, "-1": -1}
COMPRESSION: Final = {
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}
VALUE_FORMATS: Final = ("string", "json", "base64")
_READ_BYTES: Final = 65536


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


@click.command("produce")
@bootstrap_server_option
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
    help="The record batches' compression codec.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    help="The most records in one request.",
)
@click.option(
    "--value-format",
    type=click.Choice(VALUE_FORMATS),
    default="string",
    show_default=True,
    help="What the value text is.",
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
    value_format: str,
    verbose: bool,
) -> None:
    """Send the lines of stdin to a topic, one record per line."""
    record_headers = [parse_header(text) for text in headers]
    key_sep = None
    if key_separator is not None:
        key_sep = separator(key_separator, "'--key-separator'").encode()
    parser = LineParser(key_sep, value_format)
    source = LineSource(_stdin())
    with (
        broker_errors(),
        WireSession(bootstrap_server, client_id=CLIENT_ID, software_version=__version__) as session,
    ):
        partitions = session.partitions_for(topic)
        if partition is not None and partition not in partitions:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {partition}")
        producer = WireProducer(
            session, topic, partitions, acks=ACKS[acks], compression=COMPRESSION[compression]
        )
        failed, line_error = _run(source, parser, producer, record_headers, partition, batch_size)
    if verbose:
        click.echo(f"produced {producer.produced} records to {topic}", err=True)
    if line_error is not None:
        raise click.ClickException(line_error)
    if failed:
        raise click.ClickException(
            f"{failed} of {failed + producer.produced} records were not produced to {topic}"
        )


def _run(
    source: LineSource,
    parser: LineParser,
    producer: WireProducer,
    headers: list[Header],
    partition: int | None,
    batch_size: int,
) -> tuple[int, str | None]:
    """Sends every line; returns the count of refused records and the first line error."""
    failed = 0
    line_error = None
    try:
        for number, line in enumerate(source, start=1):
            try:
                key, value = parser.parse(line)
            except LineError as error:
                line_error = f"line {number}: {error}"
                break
            producer.send(key, value, headers, partition)
            if producer.pending >= batch_size or not source.ready():
                failed += _report(producer.topic, producer.flush())
    except KeyboardInterrupt:
        pass  # Ctrl-C ends the input: what was read is still sent
    failed += _report(producer.topic, producer.close())
    return failed, line_error


def _report(topic: str, failures: list[ProduceFailure]) -> int:
    for failure in failures:
        plural = "record" if failure.records == 1 else "records"
        click.echo(
            f"odradek: {topic}-{failure.partition}: {failure.error_code.name} "
            f"({failure.records} {plural} not produced)",
            err=True,
        )
    return sum(failure.records for failure in failures)


def _stdin() -> IO[bytes]:
    stream = sys.stdin
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return buffer  # type: ignore[no-any-return]
    return io.BytesIO(stream.read().encode())

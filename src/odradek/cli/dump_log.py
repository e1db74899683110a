"""``odradek dump-log FILE...``: print the batches of log segment files, like kafka-dump-log.sh
(and the entries of their ``.index`` and ``.timeindex`` files: ``dump_index``; and the aborted
transactions of their ``.txnindex`` files, one line each: ``version: 0 producerId: 7
firstOffset: 0 lastOffset: 3 lastStableOffset: 0``).

Reads each ``.log`` file front to back with plain reads (one batch in memory at a time), and
prints one line per batch::

    baseOffset: 0 lastOffset: 2 count: 3 position: 0 size: 120 maxTimestamp: 1700000000002
    timestampType: CreateTime compresscodec: none producerId: -1 producerEpoch: -1
    baseSequence: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false
    crc: 3746531035 isvalid: true

(one line in the output). With ``--print-records`` (alias ``--print-data-log``) each record
follows its batch::

    | offset: 0 CreateTime: 1700000000000 sequence: -1 keySize: 1 valueSize: 5
    key: "k" payload: "hello" headers: ["trace"="abc"]

Bytes print as a JSON string when they are valid UTF-8, else as ``0x`` and hex; an absent key,
value or header value prints as ``null``.

The dump stops at the first batch that is truncated, malformed or fails its CRC32C, with a line
``Stopped at position P: reason`` — the valid prefix of the segment ends there, which is where
log recovery would truncate it. The command then exits with status 1 (after dumping every
file). A missing file or one not named ``*.log``, ``*.index``, ``*.timeindex`` or
``*.txnindex`` is a usage error: one line, status 2; an index with problems (see
``dump_index``; a ``.txnindex`` that is not whole 34-byte entries of version 0) exits with
status 1.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import click

from odradek.cli.dump_index import LogBatches, dump_index
from odradek.errors import (
    CorruptRecordError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)
from odradek.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    NO_SEQUENCE,
    BatchHeader,
    CompressionType,
    TimestampType,
    compute_crc,
    parse_header,
    read_prefix,
)
from odradek.records.codec import decode_records
from odradek.records.record import Header, Record
from odradek.storage.txn_index import TXN_INDEX_SUFFIX, read_txn_index_file

_SUFFIXES = (".log", ".index", ".timeindex", TXN_INDEX_SUFFIX)
_TIMESTAMP_TYPE_NAMES = {
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


class _StopDumpError(Exception):
    """The dump of one file cannot go on past ``position``."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


@click.command("dump-log")
@click.argument(
    "files",
    metavar="FILE...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option(
    "--print-records",
    "--print-data-log",
    "print_records",
    is_flag=True,
    help="Also print every record: offset, timestamp, key, value and headers.",
)
@click.option(
    "--verify-index-only",
    "verify_index",
    is_flag=True,
    help="Index files: check every entry against the segment's .log instead of printing it.",
)
@click.option(
    "--index-sanity-check",
    "sanity_only",
    is_flag=True,
    help="Index files: only check the length and the order of the entries.",
)
def dump_log(
    files: tuple[Path, ...], print_records: bool, verify_index: bool, sanity_only: bool
) -> None:
    """Print log segment FILEs (*.log, checking each batch's CRC) and their index files
    (*.index, *.timeindex, *.txnindex)."""
    for path in files:
        if path.suffix not in _SUFFIXES:
            raise click.BadParameter(
                f"{path} is not a log segment or index file (expected a name ending in "
                ".log, .index, .timeindex or .txnindex)",
                param_hint="FILE",
            )
        if path.suffix != ".log" and not path.stem.isdigit():
            raise click.BadParameter(
                f"{path}: an index file is named after its segment's base offset "
                "(e.g. 00000000000000000042.index)",
                param_hint="FILE",
            )
    corrupt: list[str] = []
    bad_indexes: list[str] = []
    for path in files:
        click.echo(f"Dumping {path}")
        try:
            if path.suffix == TXN_INDEX_SUFFIX:
                if not _dump_txn_index_file(path):
                    bad_indexes.append(f"{path} (malformed)")
                continue
            if path.suffix != ".log":
                problems = _dump_index_file(path, verify=verify_index, sanity_only=sanity_only)
                if problems:
                    bad_indexes.append(f"{path} ({problems} problems)")
                continue
            if path.stem.isdigit():
                click.echo(f"Log starting offset: {int(path.stem)}")
            with path.open("rb") as segment:
                for line in _dump_segment(segment, print_records=print_records):
                    click.echo(line)
        except _StopDumpError as stop:
            click.echo(f"Stopped at position {stop.position}: {stop.reason}")
            corrupt.append(f"{path} at position {stop.position}")
        except OSError as error:
            raise click.FileError(str(path), hint=error.strerror or str(error)) from None
    faults = []
    if corrupt:
        faults.append("corrupt log segment: " + "; ".join(corrupt))
    if bad_indexes:
        faults.append("index problems: " + "; ".join(bad_indexes))
    if faults:
        raise click.ClickException("; ".join(faults))


def _dump_txn_index_file(path: Path) -> bool:
    """Prints one ``.txnindex``: an aborted transaction per line, as Kafka's DumpLogSegments
    does (``version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 0``).
    Returns False, after a ``Problem:`` line, for a file that is not whole entries of
    version 0 (nothing else is printed then)."""
    try:
        entries = read_txn_index_file(str(path))
    except CorruptRecordError as error:
        click.echo(f"Problem: {error}")
        return False
    for entry in entries:
        click.echo(
            f"version: 0 producerId: {entry.producer_id} firstOffset: {entry.first_offset} "
            f"lastOffset: {entry.last_offset} lastStableOffset: {entry.last_stable_offset}"
        )
    return True


def _dump_index_file(path: Path, *, verify: bool, sanity_only: bool) -> int:
    """Dumps (or checks) one index file; returns how many problems it has."""
    log: LogBatches | None = None
    log_path = path.with_suffix(".log")
    missing_log = verify and not log_path.is_file()
    if verify and not missing_log:
        log = _log_batches(log_path)
    report = dump_index(path, int(path.stem), log, print_entries=not (verify or sanity_only))
    problems = report.problems
    if missing_log:
        problems = [*problems, f"cannot verify: {log_path} does not exist"]
    for line in report.lines:
        click.echo(line)
    for problem in problems:
        click.echo(f"Problem: {problem}")
    if not problems and verify:
        click.echo(f"{path} passed verification against {log_path}.")
    elif not problems and sanity_only:
        click.echo(f"{path} passed sanity check.")
    return len(problems)


def _log_batches(path: Path) -> LogBatches:
    """The batch headers of a ``.log`` up to its first bad batch (CRCs are not checked)."""
    by_position: dict[int, BatchHeader] = {}
    stopped: str | None = None
    with path.open("rb") as segment:
        file_size = os.fstat(segment.fileno()).st_size
        position = 0
        try:
            while position < file_size:
                segment.seek(position)
                remaining = file_size - position
                header = _check_header(
                    segment.read(min(HEADER_SIZE, remaining)), position, remaining
                )
                by_position[position] = header
                position += header.size
        except _StopDumpError as stop:
            stopped = f"position {stop.position}: {stop.reason}"
    by_base_offset = {header.base_offset: header for header in by_position.values()}
    return LogBatches(by_position, by_base_offset, stopped)


def _dump_segment(segment: BinaryIO, *, print_records: bool) -> Iterator[str]:
    """Yields the output lines of one segment; raises _StopDumpError at the first bad batch."""
    file_size = os.fstat(segment.fileno()).st_size
    position = 0
    while position < file_size:
        remaining = file_size - position
        head = segment.read(min(HEADER_SIZE, remaining))
        header = _check_header(head, position, remaining)
        data = head + segment.read(header.size - len(head))
        if len(data) < header.size:  # the file shrank while we read it
            raise _StopDumpError(position, f"truncated batch: needs {header.size} bytes")
        computed = compute_crc(data, 0, header.size)
        yield _batch_line(header, position, crc_valid=computed == header.crc)
        if computed != header.crc:
            raise _StopDumpError(
                position,
                f"CRC mismatch in batch with base offset {header.base_offset}: "
                f"stored {header.crc}, computed {computed}",
            )
        if print_records:
            try:
                records = decode_records(data, header)
            except (CorruptRecordError, UnsupportedCompressionTypeError) as error:
                raise _StopDumpError(position, f"cannot decode the records: {error}") from None
            sequence = header.base_sequence
            for record in records:
                record_sequence = (
                    NO_SEQUENCE
                    if sequence == NO_SEQUENCE
                    else sequence + record.offset - header.base_offset
                )
                yield _record_line(record, header.timestamp_type, record_sequence)
        position += header.size


def _check_header(head: bytes, position: int, remaining: int) -> BatchHeader:
    """Parses the header read at ``position``; raises _StopDumpError naming the fault."""
    if len(head) < LOG_OVERHEAD:
        raise _StopDumpError(
            position,
            f"truncated batch: {len(head)} bytes remain, the offset and length take {LOG_OVERHEAD}",
        )
    _, size = read_prefix(head)
    if len(head) > MAGIC_OFFSET and head[MAGIC_OFFSET] != MAGIC_V2:
        magic = head[MAGIC_OFFSET]
        if magic in (0, 1):
            raise _StopDumpError(
                position,
                f"message format v{magic} (magic {magic}) is not supported: "
                "odradek reads record batch v2 only",
            )
        raise _StopDumpError(position, f"unknown magic byte {magic}")
    if size - LOG_OVERHEAD < MIN_BATCH_LENGTH:
        raise _StopDumpError(
            position,
            f"impossible batch length {size - LOG_OVERHEAD} (the minimum is {MIN_BATCH_LENGTH})",
        )
    if size > remaining:
        raise _StopDumpError(position, f"truncated batch: needs {size} bytes, {remaining} remain")
    try:
        return parse_header(head)
    except (CorruptRecordError, UnsupportedForMessageFormatError):
        raise _StopDumpError(position, "negative last offset delta or records count") from None


def _batch_line(header: BatchHeader, position: int, *, crc_valid: bool) -> str:
    bits = header.compression_bits
    try:
        codec = CompressionType(bits).name.lower()
    except ValueError:
        codec = f"unknown({bits})"
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
        f"count: {header.records_count} position: {position} size: {header.size} "
        f"maxTimestamp: {header.max_timestamp} "
        f"timestampType: {_TIMESTAMP_TYPE_NAMES[header.timestamp_type]} "
        f"compresscodec: {codec} producerId: {header.producer_id} "
        f"producerEpoch: {header.producer_epoch} baseSequence: {header.base_sequence} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {_bool(header.is_transactional)} "
        f"isControl: {_bool(header.is_control)} "
        f"crc: {header.crc} isvalid: {_bool(crc_valid)}"
    )


def _record_line(record: Record, timestamp_type: TimestampType, sequence: int) -> str:
    return (
        f"| offset: {record.offset} {_TIMESTAMP_TYPE_NAMES[timestamp_type]}: "
        f"{record.timestamp} sequence: {sequence} "
        f"keySize: {_size(record.key)} valueSize: {_size(record.value)} "
        f"key: {_show(record.key)} payload: {_show(record.value)} "
        f"headers: {_show_headers(record.headers)}"
    )


def _show(data: bytes | None) -> str:
    """A JSON string for UTF-8 bytes (escapes keep it on one line), else 0x-hex; null."""
    if data is None:
        return "null"
    try:
        return json.dumps(data.decode(), ensure_ascii=False)
    except UnicodeDecodeError:
        return "0x" + data.hex()


def _show_headers(headers: tuple[Header, ...]) -> str:
    shown = (f"{json.dumps(key, ensure_ascii=False)}={_show(value)}" for key, value in headers)
    return "[" + ", ".join(shown) + "]"


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _bool(value: bool) -> str:
    return "true" if value else "false"

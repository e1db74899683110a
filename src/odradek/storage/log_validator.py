"""Validating the batches of a general-path append and assigning their offsets (Kafka's
``LogValidator``), for ``Log``.

This module owns what the log checks and rewrites in the bytes of an append that the fast path
(``LogSegment.append_batch``) declined: parsing and CRC-checking every batch, refusing a batch
over ``max.message.bytes`` or data over ``segment.bytes``, refusing keyless records on a
compacted topic, checking that a follower's offsets do not go backwards, and rewriting a
leader's batches in place — base offsets from the log end offset, the partition leader epoch,
LogAppendTime timestamps. The rule it keeps: it raises before changing anything the log owns;
it only rewrites the caller's ``bytearray`` (or a copy), never the log's state or files.

It is sans-I/O: values in (the data, the log end offset, the config, the time) and values out
(the payload to write and the batches' fresh headers). ``Log`` calls it under its lock, because
the offsets it assigns start at the log end offset.
"""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.errors import InvalidRecordError, MessageTooLargeError, RecordBatchTooLargeError
from odradek.records.batch import (
    HEADER_SIZE,
    BatchHeader,
    iter_batches,
    parse_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)
from odradek.records.codec import decode_records
from odradek.storage.config import LogConfig
from odradek.storage.segment import BatchPosition

__all__ = [
    "AppendData",
    "Payload",
    "assign_offsets",
    "batch_totals",
    "check_follower_offsets",
    "check_keys",
    "parse_batches",
    "prepare_payload",
]

#: What ``Log.append`` accepts.
AppendData = bytes | bytearray | memoryview
#: What ``LogSegment.append`` writes: the data, or a rewritten header and the untouched rest
#: (written as one piece with ``writev``).
Payload = bytes | bytearray | memoryview | tuple[bytearray, memoryview]


def parse_batches(data: AppendData) -> list[BatchPosition]:
    """Every batch of ``data`` (batches back to back), each fully validated (CRC32C included).

    Raises:
        InvalidRecordError: ``data`` is empty.
        CorruptRecordError: a batch is truncated, malformed or fails its CRC32C.
        UnsupportedForMessageFormatError: message format v0/v1.
    """
    if not data:
        raise InvalidRecordError("no record batches to append")
    header = validate_batch(data, 0)
    if header.size == len(data):  # the common case: one batch per produce request
        return [BatchPosition(0, header)]
    return [BatchPosition(position, header) for position, header in iter_batches(data)]


def check_keys(
    data: AppendData, batches: list[BatchPosition], topic_partition: TopicPartition
) -> None:
    """A compacted log keeps records by key, so a leader refuses keyless records; this
    decodes the batches (compacted topics only, as Kafka does).

    Raises:
        InvalidRecordError: a record (not in a control batch) has no key; its
            ``record_errors`` name every keyless record by its index in its batch (KIP-467).
    """
    keyless: list[tuple[int, str]] = []
    for position, header in batches:
        if header.is_control:
            continue
        for record in decode_records(data, header, position):
            if record.key is None:
                keyless.append(
                    (
                        record.offset - header.base_offset,
                        "a compacted topic cannot accept a record without a key",
                    )
                )
    if keyless:
        raise InvalidRecordError(
            f"{topic_partition}: a compacted topic cannot accept a record without a key "
            f"({len(keyless)} such record(s), the first at offset delta {keyless[0][0]})",
            record_errors=tuple(keyless),
        )


def check_follower_offsets(
    batches: list[BatchPosition], log_end_offset: int, topic_partition: TopicPartition
) -> None:
    """A follower's batches carry their offsets: each must start at or after the previous
    one's next offset, the first at or after the log end offset.

    Raises:
        InvalidRecordError: a batch's base offset goes backwards.
    """
    expected = log_end_offset
    for batch in batches:
        if batch.header.base_offset < expected:
            raise InvalidRecordError(
                f"{topic_partition}: batch offset {batch.header.base_offset} is below "
                f"the next expected offset {expected}"
            )
        expected = batch.header.next_offset


def assign_offsets(
    data: bytearray,
    batches: list[BatchPosition],
    log_end_offset: int,
    max_message_bytes: int,
    leader_epoch: int | None,
    log_append_time_ms: int,
) -> list[BatchPosition]:
    """Rewrites a leader's batches in ``data`` in place: base offsets from ``log_end_offset``,
    and the leader epoch (when not None) and LogAppendTime (when ``log_append_time_ms`` ≥ 0).
    ``data`` may hold only the batches' headers when only base offsets and epochs change.

    Returns:
        The batches with their fresh headers (positions unchanged).
    Raises:
        MessageTooLargeError: a batch exceeds ``max_message_bytes``; ``data`` is unchanged.
    """
    for batch in batches:
        if batch.header.size > max_message_bytes:
            raise MessageTooLargeError(
                f"batch of {batch.header.size} bytes exceeds max.message.bytes "
                f"({max_message_bytes})"
            )
    next_offset = log_end_offset
    assigned = []
    for position, original in batches:
        set_base_offset(data, position, next_offset)
        header = original
        if leader_epoch is not None:
            set_partition_leader_epoch(data, position, leader_epoch)
        if log_append_time_ms >= 0:
            set_log_append_time(data, position, log_append_time_ms)
        if leader_epoch is None and log_append_time_ms < 0:
            header = BatchHeader(next_offset, *header[1:])
        else:
            header = parse_header(data, position)
        assigned.append(BatchPosition(position, header))
        next_offset += original.last_offset_delta + 1
    return assigned


def prepare_payload(
    data: AppendData,
    batches: list[BatchPosition],
    *,
    assign: bool,
    log_end_offset: int,
    config: LogConfig,
    leader_epoch: int | None,
    log_append_time_ms: int,
    topic_partition: TopicPartition,
) -> tuple[Payload, list[BatchPosition]]:
    """Checks the append against the log's limits and offsets and rewrites what it must.

    Args:
        data: the parsed batches' bytes (``parse_batches``).
        batches: ``parse_batches(data)``.
        assign: a leader's append (offsets assigned from ``log_end_offset``), or a
            follower's (offsets kept and checked).
        log_end_offset: the log's, read under its lock.
        config: ``segment.bytes`` and ``max.message.bytes``.
        leader_epoch: written into each batch when given.
        log_append_time_ms: the log append time to stamp (leader appends to a LogAppendTime
            topic), or -1.
        topic_partition: for error messages.

    Returns:
        The payload for ``LogSegment.append`` and the batches with their final headers. A
        single leader batch in immutable ``data`` without LogAppendTime is not copied: only
        a copy of its 61-byte header is rewritten (the payload is then a tuple). Otherwise
        a ``bytearray`` ``data`` is rewritten in place, and other data is copied first.

    Raises:
        RecordBatchTooLargeError: ``data`` is larger than ``segment.bytes``.
        MessageTooLargeError: (leader) a batch exceeds ``max.message.bytes``.
        InvalidRecordError: (follower) offsets that go backwards.
    """
    size = len(data)
    if size > config.segment_bytes:
        raise RecordBatchTooLargeError(
            f"{size} bytes do not fit in a segment of {config.segment_bytes} bytes"
        )
    if assign and len(batches) == 1 and log_append_time_ms < 0 and not isinstance(data, bytearray):
        # Zero copy: rewrite a copy of the 61-byte header only, and write it and the
        # untouched rest of the batch with writev (no copy of the rest).
        head = bytearray(memoryview(data)[:HEADER_SIZE])
        batches = assign_offsets(
            head, batches, log_end_offset, config.max_message_bytes, leader_epoch, -1
        )
        return (head, memoryview(data)[HEADER_SIZE:]), batches
    if assign or leader_epoch is not None:
        writable = data if isinstance(data, bytearray) else bytearray(data)
        if assign:
            batches = assign_offsets(
                writable,
                batches,
                log_end_offset,
                config.max_message_bytes,
                leader_epoch,
                log_append_time_ms,
            )
        else:
            check_follower_offsets(batches, log_end_offset, topic_partition)
            for batch in batches:
                set_partition_leader_epoch(writable, batch.position, leader_epoch or 0)
        return writable, batches
    check_follower_offsets(batches, log_end_offset, topic_partition)
    return data, batches


def batch_totals(batches: list[BatchPosition]) -> tuple[int, int]:
    """The batches' largest max timestamp and their total record count."""
    if len(batches) == 1:
        header = batches[0].header
        return header.max_timestamp, header.records_count
    return (
        max(batch.header.max_timestamp for batch in batches),
        sum(batch.header.records_count for batch in batches),
    )

"""The hot-path Fetch response encoder: framing bytes with gaps for the partitions' records.

This module owns the bytes of Fetch responses v4-v18 *around* the records. The broker never
copies record bytes into a response: ``encode_fetch_response`` returns a ``FetchResponseFrame``
whose ``parts`` alternate framing ``bytes`` and ``RecordsSlot`` gaps, so the broker writes the
framing with one write and sends each slot's records (for example with ``os.sendfile`` from a
segment file) in order. The rules it keeps:

- the frame's size prefix counts every records slot (``RecordsSlot.size``);
- ``records`` is never null on the wire: a partition with nothing to return gets an empty
  records field (librdkafka rejects null records, docs/WIRE-NOTES.md);
- spliced with its records, the frame equals kio's encoding of the same response, byte for byte
  (tests/protocol/test_fetch_response.py checks it with hypothesis).

Fetch response body of v4-v11, by version (Kafka's ``FetchResponse.json``; none of them is
flexible, so the response header is v0, the correlation id alone)::

    throttle_time_ms: int32
    error_code: int16                          # v7+ (fetch sessions, KIP-227)
    session_id: int32                          # v7+
    responses: array of
        topic: string
        partitions: array of
            partition_index: int32
            error_code: int16
            high_watermark: int64
            last_stable_offset: int64
            log_start_offset: int64            # v5+
            aborted_transactions: nullable array of (producer_id: int64, first_offset: int64)
            preferred_read_replica: int32      # v11+ (KIP-392)
            records: int32 length + bytes      # <- the gap a RecordsSlot fills

v12+ are flexible (KIP-482): response header v1 (correlation id, tagged fields), compact arrays
and strings, and tagged fields after every struct; v13+ name a topic by its id (KIP-516)::

    throttle_time_ms: int32, error_code: int16, session_id: int32
    responses: compact array of
        topic: compact string (v12) | topic_id: uuid (v13+)
        partitions: compact array of
            partition_index: int32, error_code: int16, high_watermark: int64,
            last_stable_offset: int64, log_start_offset: int64
            aborted_transactions: compact nullable array of
                (producer_id: int64, first_offset: int64, tagged fields)
            preferred_read_replica: int32
            records: uvarint (length + 1) + bytes   # <- the gap a RecordsSlot fills
            tagged fields: 0 diverging_epoch (epoch: int32, end_offset: int64, tags),
                           1 current_leader (leader_id: int32, leader_epoch: int32, tags)
                           (KIP-951), each written only when not (-1, -1)
        tagged fields
    tagged fields: 0 node_endpoints (v16+, KIP-951), when not empty
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Final, Generic, NamedTuple, TypeVar

from odradek.protocol.api_keys import VersionRange
from odradek.protocol.produce_response import NodeEndpoint
from odradek.protocol.wire import (
    NO_TAGGED_FIELDS,
    compact_array_length,
    compact_nullable_string,
    compact_string,
    string,
    uvarint,
)

#: The Fetch versions ``encode_fetch_response`` writes.
FETCH_RESPONSE_VERSIONS: Final = VersionRange(4, 18)
#: The first flexible version, the first that names topics by id, the first with endpoints.
_FIRST_FLEXIBLE: Final = 12
_FIRST_TOPIC_ID: Final = 13
_FIRST_NODE_ENDPOINTS: Final = 16
_NO_EPOCH: Final = (-1, -1)
_HEADER_FLEXIBLE = struct.Struct(">ibihi")  # correlation_id, tags, throttle, error, session
_PARTITION_FLEXIBLE = struct.Struct(">ihqqq")
_DIVERGING_EPOCH = struct.Struct(">bbiqb")  # tag 0, size 13, epoch, end_offset, tags
_CURRENT_LEADER = struct.Struct(">bbiib")  # tag 1, size 9, leader_id, leader_epoch, tags
_ABORTED_FLEXIBLE = struct.Struct(">qqb")
_ZERO_UUID: Final = bytes(16)

R = TypeVar("R")

_INT32 = struct.Struct(">i")
_SIZE = struct.Struct(">i")
_PREFIX_V4 = struct.Struct(">iii")  # correlation_id, throttle_time_ms, responses count
_PREFIX_V7 = struct.Struct(">iihii")  # + error_code, session_id
_PARTITION_V4 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
# The partition fields through the records length, with aborted_transactions null (-1).
_PARTITION_V4_NOT_ABORTED = struct.Struct(">ihqqii")
_PARTITION_V5_NOT_ABORTED = struct.Struct(">ihqqqii")
_PARTITION_V11_NOT_ABORTED = struct.Struct(">ihqqqiii")
_MIN_VERSION: Final = FETCH_RESPONSE_VERSIONS.min_version
_MAX_VERSION: Final = FETCH_RESPONSE_VERSIONS.max_version
# NamedTuple.__new__ is a Python function; tuple.__new__ builds the same value 10x faster.
_new_tuple = tuple.__new__
_ABORTED = struct.Struct(">qq")


class AbortedTransaction(NamedTuple):
    """An aborted transaction overlapping the returned records (read_committed fetches)."""

    producer_id: int
    first_offset: int


class FetchPartitionData(NamedTuple, Generic[R]):
    """What the broker returns for one partition, with its records as an opaque handle.

    Field order is wire order (the encoder unpacks it), ``records`` and its size last.

    ``records`` is whatever the broker will write into the slot (a file region, or bytes);
    this module never looks at it. ``records_size`` is its length in bytes; with 0 no slot is
    made and ``records`` is ignored. ``aborted_transactions`` is ``None`` (null on the wire,
    as Kafka sends for read_uncommitted) or a tuple. ``log_start_offset`` is written from v5,
    ``preferred_read_replica`` from v11, and dropped before. (The values here are
    NamedTuples, not frozen dataclasses: they are built per partition per request, and a
    frozen dataclass costs more to build than the encoding does.)
    """

    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    preferred_read_replica: int = -1
    records: R | None = None
    records_size: int = 0
    #: v12+: the epoch and end offset where the fetcher's log diverges from the leader's
    #: (``last_fetched_epoch``, KIP-320 / KIP-595); ``(-1, -1)`` when it does not.
    diverging_epoch: tuple[int, int] = _NO_EPOCH
    #: v12+: ``(leader_id, leader_epoch)`` when this broker is not the leader (KIP-951).
    current_leader: tuple[int, int] = _NO_EPOCH


class FetchableTopicResponse(NamedTuple, Generic[R]):
    """The partitions returned for one topic; ``topic_id`` is written instead of the name
    from v13 (``None``: the zero UUID)."""

    topic: str
    partitions: Sequence[FetchPartitionData[R]]
    topic_id: uuid.UUID | None = None


class RecordsSlot(NamedTuple, Generic[R]):
    """A gap in a response frame: write exactly ``size`` bytes of ``records`` here."""

    topic: str
    partition_index: int
    records: R
    size: int


class FetchResponseFrame(NamedTuple, Generic[R]):
    """A whole Fetch response frame as framing bytes interleaved with records slots.

    ``parts`` starts with ``bytes`` (the size prefix and header) and never holds two
    ``bytes`` in a row; ``size`` is the frame's length on the wire, size prefix included.
    """

    correlation_id: int
    parts: tuple[bytes | RecordsSlot[R], ...]
    size: int

    @property
    def framing_bytes(self) -> int:
        """Bytes of the frame that are not records."""
        return sum(len(part) for part in self.parts if isinstance(part, bytes))

    @property
    def slots(self) -> tuple[RecordsSlot[R], ...]:
        return tuple(part for part in self.parts if isinstance(part, RecordsSlot))

    def to_bytes(self, read: Callable[[RecordsSlot[R]], bytes]) -> bytes:
        """Returns the frame with every slot filled by ``read(slot)`` (tests, small frames).

        Raises:
            ValueError: ``read`` returned a different number of bytes than the slot's size.
        """
        chunks: list[bytes] = []
        for part in self.parts:
            if isinstance(part, bytes):
                chunks.append(part)
                continue
            data = read(part)
            if len(data) != part.size:
                raise ValueError(
                    f"{part.topic}-{part.partition_index}: slot of {part.size} bytes "
                    f"filled with {len(data)}"
                )
            chunks.append(data)
        return b"".join(chunks)


def encode_fetch_response(
    api_version: int,
    correlation_id: int,
    responses: Sequence[FetchableTopicResponse[R]],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> FetchResponseFrame[R]:
    """Returns a Fetch response frame with a ``RecordsSlot`` for each non-empty records field.

    ``error_code`` and ``session_id`` (fetch sessions) are written from v7, dropped before;
    ``node_endpoints`` from v16.

    Raises:
        ValueError: ``api_version`` is outside ``FETCH_RESPONSE_VERSIONS``, or a partition has
            a negative ``records_size`` or ``records`` missing while ``records_size > 0``.
        struct.error: a number does not fit its field.
    """
    if not _MIN_VERSION <= api_version <= _MAX_VERSION:
        raise ValueError(
            f"Fetch response v{api_version} is not encoded here "
            f"(supported: {FETCH_RESPONSE_VERSIONS})"
        )
    if api_version >= _FIRST_FLEXIBLE:
        return _encode_flexible(
            api_version,
            correlation_id,
            responses,
            throttle_time_ms,
            error_code,
            session_id,
            node_endpoints if api_version >= _FIRST_NODE_ENDPOINTS else (),
        )
    with_log_start_offset = api_version >= 5
    with_preferred_read_replica = api_version >= 11
    # Partition fields up to the records length, for the usual null aborted_transactions.
    if with_preferred_read_replica:
        partition_tail = _PARTITION_V11_NOT_ABORTED
    elif with_log_start_offset:
        partition_tail = _PARTITION_V5_NOT_ABORTED
    else:
        partition_tail = _PARTITION_V4_NOT_ABORTED
    if api_version >= 7:
        head = _PREFIX_V7.pack(
            correlation_id, throttle_time_ms, error_code, session_id, len(responses)
        )
    else:
        head = _PREFIX_V4.pack(correlation_id, throttle_time_ms, len(responses))
    parts: list[bytes | RecordsSlot[R]] = []
    framing: list[bytes] = [head]
    size = 0
    # Unpacking relies on the input types' field order (see FetchPartitionData).
    for topic, partitions, _topic_id in responses:
        framing.append(string(topic) + _INT32.pack(len(partitions)))
        for (
            index,
            partition_error_code,
            high_watermark,
            last_stable_offset,
            log_start_offset,
            aborted,
            preferred_read_replica,
            records,
            records_size,
            _diverging_epoch,
            _current_leader,
        ) in partitions:
            if records_size < 0:
                raise ValueError(f"{topic}-{index}: negative records_size {records_size}")
            if aborted is None:
                if with_preferred_read_replica:
                    framing.append(
                        partition_tail.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            log_start_offset,
                            -1,
                            preferred_read_replica,
                            records_size,
                        )
                    )
                elif with_log_start_offset:
                    framing.append(
                        partition_tail.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            log_start_offset,
                            -1,
                            records_size,
                        )
                    )
                else:
                    framing.append(
                        partition_tail.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            -1,
                            records_size,
                        )
                    )
            else:
                if with_log_start_offset:
                    framing.append(
                        _PARTITION_V5.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            log_start_offset,
                        )
                    )
                else:
                    framing.append(
                        _PARTITION_V4.pack(
                            index, partition_error_code, high_watermark, last_stable_offset
                        )
                    )
                framing.append(_INT32.pack(len(aborted)))
                framing.extend(_ABORTED.pack(*txn) for txn in aborted)
                if with_preferred_read_replica:
                    framing.append(_INT32.pack(preferred_read_replica))
                framing.append(_INT32.pack(records_size))
            if records_size:
                if records is None:
                    raise ValueError(
                        f"{topic}-{index}: records_size {records_size} without records"
                    )
                chunk = b"".join(framing)
                parts.append(chunk)
                parts.append(_new_tuple(RecordsSlot, (topic, index, records, records_size)))
                size += len(chunk) + records_size
                framing = []
    if framing:
        chunk = b"".join(framing)
        parts.append(chunk)
        size += len(chunk)
    # The size prefix goes in front of the first framing chunk (small: header + one topic).
    first = parts[0]
    assert isinstance(first, bytes)
    parts[0] = _SIZE.pack(size) + first
    return FetchResponseFrame(correlation_id, tuple(parts), size + 4)


def _encode_flexible(
    api_version: int,
    correlation_id: int,
    responses: Sequence[FetchableTopicResponse[R]],
    throttle_time_ms: int,
    error_code: int,
    session_id: int,
    node_endpoints: Sequence[NodeEndpoint],
) -> FetchResponseFrame[R]:
    """v12+: the layout in the module docstring."""
    by_id = api_version >= _FIRST_TOPIC_ID
    parts: list[bytes | RecordsSlot[R]] = []
    framing: list[bytes] = [
        _HEADER_FLEXIBLE.pack(correlation_id, 0, throttle_time_ms, error_code, session_id),
        compact_array_length(len(responses)),
    ]
    size = 0
    for topic, partitions, topic_id in responses:
        if by_id:
            framing.append(_ZERO_UUID if topic_id is None else topic_id.bytes)
        else:
            framing.append(compact_string(topic))
        framing.append(compact_array_length(len(partitions)))
        for (
            index,
            partition_error_code,
            high_watermark,
            last_stable_offset,
            log_start_offset,
            aborted,
            preferred_read_replica,
            records,
            records_size,
            diverging_epoch,
            current_leader,
        ) in partitions:
            if records_size < 0:
                raise ValueError(f"{topic}-{index}: negative records_size {records_size}")
            framing.append(
                _PARTITION_FLEXIBLE.pack(
                    index,
                    partition_error_code,
                    high_watermark,
                    last_stable_offset,
                    log_start_offset,
                )
            )
            if aborted is None:
                framing.append(b"\x00")
            else:
                framing.append(compact_array_length(len(aborted)))
                framing.extend(_ABORTED_FLEXIBLE.pack(*txn, 0) for txn in aborted)
            framing.append(_INT32.pack(preferred_read_replica) + uvarint(records_size + 1))
            if records_size:
                if records is None:
                    raise ValueError(
                        f"{topic}-{index}: records_size {records_size} without records"
                    )
                chunk = b"".join(framing)
                parts.append(chunk)
                parts.append(_new_tuple(RecordsSlot, (topic, index, records, records_size)))
                size += len(chunk) + records_size
                framing = []
            framing.append(_partition_tags(diverging_epoch, current_leader))
        framing.append(NO_TAGGED_FIELDS)
    framing.append(_node_endpoints_tags(node_endpoints))
    chunk = b"".join(framing)
    parts.append(chunk)
    size += len(chunk)
    first = parts[0]
    assert isinstance(first, bytes)
    parts[0] = _SIZE.pack(size) + first
    return FetchResponseFrame(correlation_id, tuple(parts), size + 4)


def _partition_tags(diverging_epoch: tuple[int, int], current_leader: tuple[int, int]) -> bytes:
    diverges = diverging_epoch != _NO_EPOCH
    led_elsewhere = current_leader != _NO_EPOCH
    if not diverges and not led_elsewhere:
        return NO_TAGGED_FIELDS
    tags = [bytes([diverges + led_elsewhere])]
    if diverges:
        tags.append(_DIVERGING_EPOCH.pack(0, 13, *diverging_epoch, 0))
    if led_elsewhere:
        tags.append(_CURRENT_LEADER.pack(1, 9, *current_leader, 0))
    return b"".join(tags)


def _node_endpoints_tags(node_endpoints: Sequence[NodeEndpoint]) -> bytes:
    if not node_endpoints:
        return NO_TAGGED_FIELDS
    value = compact_array_length(len(node_endpoints)) + b"".join(
        _INT32.pack(node_id)
        + compact_string(host)
        + _INT32.pack(port)
        + compact_nullable_string(rack)
        + NO_TAGGED_FIELDS
        for node_id, host, port, rack in node_endpoints
    )
    return b"\x01\x00" + uvarint(len(value)) + value

"""The follower's Fetch exchange, hand-written: the v11 request out, the v11 response in.

A replica fetcher sends a Fetch after every answer it applies, so this exchange is the hot
path of replication. The generic client codec (``client_codec``: a kio entity built from a
mapping, then the whole response turned back into nested dicts) cost a follower ~95 µs per
fetch of one partition and ~620 µs for 17 partitions; this module writes and reads the same
bytes directly (``tests/protocol/test_replica_fetch.py`` checks both against kio's encoding,
byte for byte and field for field). The records of each partition come back as a
``memoryview`` into the response frame: no copy until the log writes them.

Request (Fetch v11, request header v1; none of v4-v11 is flexible)::

    api_key int16, api_version int16, correlation_id int32, client_id string
    replica_id int32, max_wait_ms int32, min_bytes int32, max_bytes int32,
    isolation_level int8, session_id int32, session_epoch int32
    topics: array of (topic string, partitions: array of (partition int32,
        current_leader_epoch int32, fetch_offset int64, log_start_offset int64,
        partition_max_bytes int32))
    forgotten_topics_data: array of (topic string, partitions: array of int32), rack_id string

The follower keeps an incremental fetch session (KIP-227) with its leader:
``session_id`` / ``session_epoch`` and ``forgotten`` come from
``broker.replication.follower_session``; ``response_session_id`` reads the session id back.

Response (response header v0: the correlation id; layout in ``fetch_response``): each
partition's ``aborted_transactions`` are skipped (a follower copies batches as they are) and
its ``preferred_read_replica`` ignored.

A response that is truncated, has trailing bytes, or announces counts or sizes past its end
raises ``ProtocolError``; nothing is allocated from a count before the bytes it announces are
known to be there.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final, NamedTuple

from odradek.errors import ProtocolError
from odradek.protocol.api_keys import ApiKey

__all__ = [
    "REPLICA_FETCH_VERSION",
    "FetchedPartition",
    "ReplicaFetchPartition",
    "decode_replica_fetch_response",
    "encode_replica_fetch_request",
    "response_session_id",
]

#: The Fetch version this module speaks (KIP-392's v11: current_leader_epoch, rack_id).
REPLICA_FETCH_VERSION: Final = 11

_HEADER = struct.Struct(">ihhih")  # size, api_key, api_version, correlation_id, client_id len
_BODY_FIXED = struct.Struct(">iiiibii")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_REQUEST = struct.Struct(">iiqqi")
_RESPONSE_PREFIX = struct.Struct(">iihii")  # correlation, throttle, error, session, topics
_PARTITION_RESPONSE = struct.Struct(">ihqqqi")  # ... log_start_offset, aborted count
_ABORTED_BYTES = 16  # producer_id int64, first_offset int64
_TAIL = struct.Struct(">ii")  # preferred_read_replica, records length
_SESSION_ID = struct.Struct(">i")
_SESSION_ID_OFFSET = 10  # after correlation_id int32, throttle_time_ms int32, error_code int16


class ReplicaFetchPartition(NamedTuple):
    """One partition of a follower's fetch."""

    topic: str
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    partition_max_bytes: int


class FetchedPartition(NamedTuple):
    """One partition of the leader's answer."""

    topic: str
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    #: The records field (empty for null), a view into the response frame.
    records: memoryview


def _string(value: str) -> bytes:
    data = value.encode()
    return _INT16.pack(len(data)) + data


def encode_replica_fetch_request(
    correlation_id: int,
    client_id: str,
    *,
    replica_id: int,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    partitions: Sequence[ReplicaFetchPartition],
    session_id: int = 0,
    session_epoch: int = -1,
    forgotten: Sequence[tuple[str, Sequence[int]]] = (),
) -> bytes:
    """A whole Fetch v11 request frame (size prefix included) with an empty rack id; by
    default with no fetch session (epoch -1) and no forgotten topics. Partitions of one topic
    are grouped under it, in the order the topics first appear.

    Raises:
        struct.error: a number does not fit its field.
    """
    by_topic: dict[str, list[bytes]] = {}
    pack = _PARTITION_REQUEST.pack
    for p in partitions:
        entries = by_topic.get(p.topic)
        if entries is None:
            entries = by_topic[p.topic] = []
        entries.append(
            pack(p.partition, p.current_leader_epoch, p.fetch_offset, -1, p.partition_max_bytes)
        )
    parts = [
        b"",  # the header, once the size is known
        _BODY_FIXED.pack(
            replica_id, max_wait_ms, min_bytes, max_bytes, 0, session_id, session_epoch
        ),
        _INT32.pack(len(by_topic)),
    ]
    for topic, entries in by_topic.items():
        parts.append(_string(topic))
        parts.append(_INT32.pack(len(entries)))
        parts.extend(entries)
    parts.append(_INT32.pack(len(forgotten)))
    for topic, indexes in forgotten:
        parts.append(_string(topic))
        parts.append(_INT32.pack(len(indexes)))
        parts.extend(_INT32.pack(index) for index in indexes)
    parts.append(_INT16.pack(0))  # rack_id ""
    client = client_id.encode()
    size = _HEADER.size - 4 + len(client) + sum(len(part) for part in parts)
    parts[0] = (
        _HEADER.pack(size, ApiKey.FETCH, REPLICA_FETCH_VERSION, correlation_id, len(client))
        + client
    )
    return b"".join(parts)


def decode_replica_fetch_response(
    frame: bytes | bytearray | memoryview,
) -> tuple[int, int, list[FetchedPartition]]:
    """Reads a Fetch v11 response frame (without its size prefix).

    Returns:
        The correlation id, the top-level error code and every partition in order.

    Raises:
        ProtocolError: the frame is malformed (see the module docstring).
    """
    view = memoryview(frame)
    end = len(view)
    try:
        correlation_id, _throttle, error_code, _session, topics = _RESPONSE_PREFIX.unpack_from(
            view, 0
        )
        offset = _RESPONSE_PREFIX.size
        _check_count(topics, 6, offset, end)  # a topic takes at least 6 bytes
        result: list[FetchedPartition] = []
        append = result.append
        for _ in range(topics):
            (length,) = _INT16.unpack_from(view, offset)
            offset += 2
            if length < 0 or offset + length > end:
                raise ValueError(f"topic name of {length} bytes at {offset}")
            topic = str(view[offset : offset + length], "utf-8")
            offset += length
            (count,) = _INT32.unpack_from(view, offset)
            offset += 4
            _check_count(count, _PARTITION_RESPONSE.size + _TAIL.size, offset, end)
            for _ in range(count):
                partition, code, high_watermark, _lso, log_start, aborted = (
                    _PARTITION_RESPONSE.unpack_from(view, offset)
                )
                offset += _PARTITION_RESPONSE.size
                if aborted > 0:
                    _check_count(aborted, _ABORTED_BYTES, offset, end)
                    offset += aborted * _ABORTED_BYTES
                elif aborted < -1:
                    raise ValueError(f"aborted_transactions count {aborted}")
                _preferred, size = _TAIL.unpack_from(view, offset)
                offset += _TAIL.size
                if size < -1 or offset + max(size, 0) > end:
                    raise ValueError(f"records of {size} bytes at {offset}")
                records = view[offset : offset + size] if size > 0 else view[0:0]
                offset += max(size, 0)
                append(FetchedPartition(topic, partition, code, high_watermark, log_start, records))
        if offset != end:
            raise ValueError(f"{end - offset} bytes after the response body")
    except (struct.error, ValueError) as error:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"malformed Fetch v{REPLICA_FETCH_VERSION} response: {error}") from None
    return correlation_id, error_code, result


def response_session_id(frame: bytes | bytearray | memoryview) -> int:
    """The ``session_id`` of a Fetch v11 response frame (without its size prefix).

    Raises:
        ProtocolError: the frame is too short to hold it.
    """
    try:
        (session_id,) = _SESSION_ID.unpack_from(frame, _SESSION_ID_OFFSET)
    except struct.error as error:
        raise ProtocolError(f"malformed Fetch v{REPLICA_FETCH_VERSION} response: {error}") from None
    return int(session_id)


def _check_count(count: int, min_item_bytes: int, offset: int, end: int) -> None:
    if count < 0 or count * min_item_bytes > end - offset:
        raise ValueError(f"array of {count} entries at {offset} runs past the frame")

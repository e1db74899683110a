"""ListOffsets: earliest (-2), latest (-1) or the first offset at or after a timestamp.

"Latest" is the high watermark (what a consumer can read); a timestamp after every record
answers offset -1 and timestamp -1, as Kafka does. The newer specs, answered as Kafka answers
them for a log without tiered storage (odradek has none): max timestamp (-3, v7+, KIP-734) is
the first record with the largest timestamp below the high watermark (-1 and -1 for an empty
log); earliest local (-4, v8+, KIP-405) is the log start offset, since every record is local;
latest tiered (-5, v9+, KIP-1005) and earliest pending upload (-6, v11+, KIP-1023) are offset
-1 with timestamp -1 (nothing is tiered, nothing waits for an upload: Kafka's answer for a
topic without remote storage). A spec
in a version older than the one that defined it, or any other negative timestamp, is
INVALID_REQUEST. The response is encoded by the hand-written
encoder (``protocol.metadata_response``) at the versions it writes, by kio at any other.
A partition's ``current_leader_epoch`` (v4+, KIP-320) is checked as Fetch checks it
(``_leader_epochs``): older than this broker's FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
"""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, topic_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._leader_epochs import check_leader_epoch, current_leader_epoch
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.metadata_response import (
    LIST_OFFSETS_RESPONSE_VERSIONS,
    ListOffsetsPartition,
    ListOffsetsTopic,
    encode_list_offsets_response,
)
from odradek.protocol.requests import list_offsets_body

API_KEY = ApiKey.LIST_OFFSETS

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6
#: The first version that may ask for each newer spec.
_SPEC_VERSIONS = {
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11,
}


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | bytes:
    topics = []
    body = list_offsets_body(request)
    # v2+: read_committed (1) readers are answered the last stable offset for "latest".
    read_committed = int(getattr(body, "isolation_level", 0)) == 1
    for topic in body.topics:
        name = str(topic.name)
        partitions = [
            _list_offset(
                ctx,
                name,
                p.partition_index,
                _spec(request.api_version, p.timestamp),
                current_leader_epoch(p),
                read_committed,
            )
            if topic_allowed(ctx, Op.DESCRIBE, name)
            else ListOffsetsPartition(p.partition_index, TOPIC_DENIED)
            for p in topic.partitions
        ]
        topics.append(ListOffsetsTopic(name, partitions))
    if request.api_version in LIST_OFFSETS_RESPONSE_VERSIONS:
        return encode_list_offsets_response(request.api_version, request.correlation_id, topics)
    fields = {  # a version the hand-written encoder does not write
        "throttle_time": 0,
        "topics": [
            {
                "name": topic.name,
                "partitions": [
                    {**p._asdict(), "old_style_offsets": [p.offset]} for p in topic.partitions
                ],
            }
            for topic in topics
        ],
    }
    return build_response(API_KEY, request.api_version, fields)


def _spec(version: int, timestamp: int) -> int:
    """The timestamp, or an invalid one (``_INVALID``) for a spec this version does not know."""
    if timestamp < EARLIEST_TIMESTAMP and version < _SPEC_VERSIONS.get(timestamp, 0):
        return _INVALID
    return timestamp


#: No spec and no timestamp (answered INVALID_REQUEST).
_INVALID = -(2**63)


def _list_offset(
    ctx: BrokerContext,
    topic: str,
    index: int,
    timestamp: int,
    leader_epoch: int,
    read_committed: bool = False,
) -> ListOffsetsPartition:
    partition = ctx.replicas.get(TopicPartition(topic, index))
    if partition is None:
        return ListOffsetsPartition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    fenced = check_leader_epoch(partition, leader_epoch)
    if fenced is not ErrorCode.NONE:
        return ListOffsetsPartition(index, fenced)
    if not partition.is_leader:
        return ListOffsetsPartition(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if timestamp == LATEST_TIMESTAMP:
        latest = partition.last_stable_offset if read_committed else partition.high_watermark
        offset, found_timestamp = latest, -1
    elif timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        offset, found_timestamp = partition.log_start_offset, -1
    elif timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
        offset, found_timestamp = -1, -1
    elif timestamp == MAX_TIMESTAMP:
        newest = partition.offset_of_max_timestamp()
        offset, found_timestamp = (-1, -1) if newest is None else (newest.offset, newest.timestamp)
    elif timestamp < 0:  # _INVALID among them
        return ListOffsetsPartition(index, ErrorCode.INVALID_REQUEST)
    else:
        found = partition.offset_for_timestamp(timestamp)
        if found is None:  # no record at or after it below the high watermark
            offset, found_timestamp = -1, -1
        else:
            offset, found_timestamp = found.offset, found.timestamp
    return ListOffsetsPartition(index, ErrorCode.NONE, found_timestamp, offset)

"""WriteTxnMarkers: a transaction coordinator asks this broker, the leader of each listed
partition, to append the COMMIT or ABORT marker of a producer's transaction (KIP-98).

Each partition is answered once its marker is replicated to the ISR
(``broker.txn.markers.write_local_marker``): NOT_LEADER_OR_FOLLOWER when this broker does
not lead it, UNKNOWN_TOPIC_OR_PARTITION when it does not hold it, INVALID_PRODUCER_EPOCH when
the producer has a newer epoch here.
"""

from __future__ import annotations

from typing import Any

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._txn import body_of
from odradek.broker.txn.markers import write_local_marker
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.WRITE_TXN_MARKERS
#: How long one marker waits for its replication (Kafka waits request.timeout.ms).
_TIMEOUT_MS = 30_000


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    markers: list[dict[str, Any]] = []
    for marker in body.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                code = await write_local_marker(
                    ctx.replicas,
                    ctx.groups,
                    TopicPartition(str(topic.name), int(index)),
                    int(marker.producer_id),
                    int(marker.producer_epoch),
                    bool(marker.transaction_result),
                    int(marker.coordinator_epoch),
                    _TIMEOUT_MS,
                )
                partitions.append({"partition_index": int(index), "error_code": code})
            topics.append({"name": str(topic.name), "partitions": partitions})
        markers.append({"producer_id": int(marker.producer_id), "topics": topics})
    return build_response(API_KEY, request.api_version, {"markers": markers})

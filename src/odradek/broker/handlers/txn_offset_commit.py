"""TxnOffsetCommit: a transactional producer commits a group's offsets inside its transaction
(``send_offsets_to_transaction``, KIP-98). The offsets are appended to ``__consumer_offsets``
as the producer's transactional batch and take effect when its COMMIT marker arrives there
(dropped at ABORT); until then OffsetFetch answers the offsets from before.

v3+ carry the consumer's generation and member id (KIP-447); they are accepted as given (the
producer epoch fences zombies). A coordinator error is every partition's error.
"""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import OffsetCommitPartition
from odradek.broker.handlers._groups import runtime
from odradek.broker.handlers._topics import by_topic
from odradek.broker.handlers._txn import body_of, optional
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.TXN_OFFSET_COMMIT


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    partitions = [
        OffsetCommitPartition(
            str(topic.name),
            int(p.partition_index),
            int(p.committed_offset),
            int(optional(p, "committed_leader_epoch", -1)),
            None if p.committed_metadata is None else str(p.committed_metadata),
        )
        for topic in body.topics
        for p in topic.partitions
    ]
    requested = [TopicPartition(p.topic, p.partition) for p in partitions]
    try:
        result = await runtime(ctx).txn_offset_commit(
            str(body.group_id), int(body.producer_id), int(body.producer_epoch), partitions
        )
        errors = [(tp, result[tp]) for tp in requested]
    except KafkaError as error:
        errors = [(tp, error.error_code) for tp in requested]
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "topics": by_topic(
                errors, lambda index, code: {"partition_index": index, "error_code": code}
            ),
        },
    )

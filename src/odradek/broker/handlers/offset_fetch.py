"""OffsetFetch: a group's committed offsets (-1 where none), served from the coordinator's
memory.

Versions: v1 names its partitions and has no group-level error (a coordinator error is put
on every partition); v2+ may ask for every committed offset (topics null) and report a
group-level error; v5 adds the leader epoch.
"""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, denied_topics, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import FetchedOffset
from odradek.broker.handlers._groups import runtime
from odradek.broker.handlers._topics import by_topic
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.group_requests import offset_fetch_body

API_KEY = ApiKey.OFFSET_FETCH


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = offset_fetch_body(request)
    requested = (
        None
        if body.topics is None
        else [
            TopicPartition(str(topic.name), int(index))
            for topic in body.topics
            for index in topic.partition_indexes
        ]
    )
    error_code = ErrorCode.NONE
    try:
        require_group(ctx, Op.DESCRIBE, str(body.group_id))
        result = await runtime(ctx).run(
            str(body.group_id),
            lambda coordinator, _now_ms: coordinator.fetch_offsets(str(body.group_id), requested),
        )
        error_code = result.error_code
        offsets = list(result.partitions.items())
    except KafkaError as error:
        error_code = error.error_code
        failed = FetchedOffset(-1, error_code=error_code)
        offsets = [(tp, failed) for tp in requested or ()]
    if denied := denied_topics(ctx, Op.DESCRIBE, {tp.topic for tp, _ in offsets}):
        # Named topics are answered TOPIC_AUTHORIZATION_FAILED; unnamed ones are not listed.
        hidden = FetchedOffset(-1, error_code=TOPIC_DENIED)
        offsets = [
            (tp, hidden if tp.topic in denied else fetched)
            for tp, fetched in offsets
            if requested is not None or tp.topic not in denied
        ]
    if request.api_version < 2 and error_code is not ErrorCode.NONE:
        failed = FetchedOffset(-1, error_code=error_code)
        offsets = [(tp, failed) for tp, _ in offsets]
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": error_code,
            "topics": by_topic(
                offsets,
                lambda index, fetched: {
                    "partition_index": index,
                    "committed_offset": fetched.committed_offset,
                    "committed_leader_epoch": fetched.committed_leader_epoch,
                    "metadata": fetched.metadata,
                    "error_code": fetched.error_code,
                },
            ),
        },
    )

"""ConsumerGroupDescribe (KIP-848): each consumer group's state, epochs, assignor and
members with their current and target assignments (topics by id and name).

Versions: v0-v1 (v1 answers GROUP_ID_NOT_FOUND for a classic group, as v0 does here too).
A group whose coordinator is not this broker gets that group's coordinator error.
"""

from __future__ import annotations

import uuid
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.broker.group.consumer_records import Assignment
from odradek.broker.group.consumer_results import (
    ConsumerGroupDescribeResult,
    DescribedConsumerGroup,
)
from odradek.broker.handlers._groups import runtime
from odradek.broker.handlers.consumer_group_heartbeat import topics_image
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.consumer_group_requests import consumer_group_describe_body

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
_NO_AUTHORIZED_OPERATIONS = -(1 << 31)
#: ``member_type`` of a member that speaks the consumer protocol (v1+).
_CONSUMER_MEMBER = 1


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = consumer_group_describe_body(request)
    group_ids = [str(group_id) for group_id in body.group_ids]
    described: dict[str, DescribedConsumerGroup] = {}
    try:
        answers, errors = await runtime(ctx).run_each(
            group_ids, lambda coordinator, _now_ms, ids: coordinator.consumer_group_describe(ids)
        )
    except KafkaError as error:
        answers, errors = [], dict.fromkeys(group_ids, error.error_code)
    for _, result in answers:
        assert isinstance(result, ConsumerGroupDescribeResult)
        described.update((group.group_id, group) for group in result.groups)
    for group_id, code in errors.items():
        described[group_id] = DescribedConsumerGroup(code, group_id)
    names = {image.topic_id: name for name, image in topics_image(ctx).items()}
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "groups": [_group(described[group_id], names) for group_id in group_ids],
        },
    )


def _assignment(assignment: Assignment, names: dict[uuid.UUID, str]) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": topic_id, "topic_name": names.get(topic_id, ""), "partitions": sorted(p)}
            for topic_id, p in sorted(assignment.items())
            if p
        ]
    }


def _group(group: DescribedConsumerGroup, names: dict[uuid.UUID, str]) -> dict[str, Any]:
    return {
        "error_code": group.error_code,
        "error_message": group.error_message,
        "group_id": group.group_id,
        "group_state": group.group_state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": group.assignor_name,
        "authorized_operations": _NO_AUTHORIZED_OPERATIONS,
        "members": [
            {
                "member_id": member.member_id,
                "instance_id": member.instance_id,
                "rack_id": member.rack_id,
                "member_epoch": member.member_epoch,
                "client_id": member.client_id,
                "client_host": member.client_host,
                "subscribed_topic_names": list(member.subscribed_topic_names),
                "subscribed_topic_regex": member.subscribed_topic_regex,
                "assignment": _assignment(member.assignment, names),
                "target_assignment": _assignment(member.target_assignment, names),
                "member_type": _CONSUMER_MEMBER,
            }
            for member in group.members
        ],
    }

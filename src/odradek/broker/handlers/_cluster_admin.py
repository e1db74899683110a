"""CreateTopics, CreatePartitions and DeleteTopics in a cluster: the controller runs them
(``ClusterController``, on its thread), any other broker forwards the request to the
controller and relays its answer. Either way the answer comes once every live broker serves
the result. NOT_CONTROLLER (retriable) when the controller changed meanwhile or cannot be
reached.

DeleteTopics v6 may name a topic by id (KIP-516): ``name_of`` turns an id into the topic's
name; an id no topic has is passed on as its text, which names no topic either
(UNKNOWN_TOPIC_OR_PARTITION). The ids that CreateTopics v7+ and DeleteTopics v6+ answer with
are the zero UUID here (the controller's results carry none; Metadata has the ids).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from odradek.broker.ports import ClusterPort
from odradek.controller.cluster import TopicRequest, TopicResult
from odradek.errors import ErrorCode, KafkaError, NotControllerError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, has_field
from odradek.protocol.client_codec import entity_fields

NameOf = Callable[[uuid.UUID], str | None]
_ZERO_UUID = uuid.UUID(int=0)


def _no_names(_topic_id: uuid.UUID) -> str | None:
    return None


async def run(
    cluster: ClusterPort, request: Request, name_of: NameOf = _no_names
) -> ResponsePayload:
    """Runs or forwards one of the three topic requests; see the module docstring."""
    body: Any = request.body
    api_key = request.api_key
    relayed = await relay_unless_controller(
        cluster,
        request,
        lambda reason: build_response(
            api_key,
            request.api_version,
            _all_failed(api_key, body, name_of, ErrorCode.NOT_CONTROLLER, reason),
        ),
    )
    if relayed is not None:
        return relayed
    try:
        results = await _on_controller(cluster, api_key, body, name_of)
    except KafkaError as error:
        fields = _all_failed(api_key, body, name_of, error.error_code, str(error))
    else:
        fields = _fields(api_key, results)
    return build_response(api_key, request.api_version, fields)


async def relay_unless_controller(
    cluster: ClusterPort, request: Request, refused: Callable[[str], ResponsePayload]
) -> ResponsePayload | None:
    """``None`` on the controller (the caller runs the request there); on any other broker
    the controller's answer to the forwarded request, or ``refused(reason)`` when the
    controller cannot be reached (the caller answers NOT_CONTROLLER, retriable)."""
    if cluster.is_controller:
        return None
    try:
        fields = await cluster.forward(
            request.api_key, request.api_version, entity_fields(request.body)
        )
    except NotControllerError as error:
        return refused(str(error))
    return build_response(request.api_key, request.api_version, fields)


async def _on_controller(
    cluster: ClusterPort, api_key: ApiKey, body: Any, name_of: NameOf
) -> list[TopicResult]:
    controller = cluster.controller
    validate_only = bool(getattr(body, "validate_only", False))
    if api_key is ApiKey.CREATE_TOPICS:
        requests = []
        for topic in body.topics:
            assignment = None
            if topic.assignments:
                assignment = {
                    int(entry.partition_index): [int(b) for b in entry.broker_ids]
                    for entry in topic.assignments
                }
            configs = {str(c.name): str(c.value) for c in topic.configs if c.value is not None}
            requests.append(
                TopicRequest(
                    str(topic.name),
                    int(topic.num_partitions),
                    int(topic.replication_factor),
                    assignment,
                    configs,
                )
            )
        return await cluster.run_on_controller(
            lambda: controller.create_topics(requests, validate_only=validate_only)
        )
    if api_key is ApiKey.CREATE_PARTITIONS:
        wanted = [
            (
                str(topic.name),
                int(topic.count),
                None
                if topic.assignments is None
                else [[int(b) for b in entry.broker_ids] for entry in topic.assignments],
            )
            for topic in body.topics
        ]
        return await cluster.run_on_controller(
            lambda: controller.create_partitions(wanted, validate_only=validate_only)
        )
    names = _names(api_key, body, name_of)
    return await cluster.run_on_controller(lambda: controller.delete_topics(names))


def _names(api_key: ApiKey, body: Any, name_of: NameOf) -> list[str]:
    if api_key is not ApiKey.DELETE_TOPICS:
        return [str(topic.name) for topic in body.topics]
    if has_field(body, "topic_names"):  # v0-v5
        return [str(name) for name in body.topic_names]
    return [  # v6+: by name or by id
        str(topic.name)
        if topic.name is not None
        else (name_of(topic.topic_id) or str(topic.topic_id))
        for topic in body.topics
    ]


def _all_failed(
    api_key: ApiKey, body: Any, name_of: NameOf, code: ErrorCode, message: str
) -> dict[str, Any]:
    return _fields(
        api_key, [TopicResult(name, code, message) for name in _names(api_key, body, name_of)]
    )


def _fields(api_key: ApiKey, results: list[TopicResult]) -> dict[str, Any]:
    if api_key is ApiKey.CREATE_TOPICS:
        topics = [
            {
                "name": result.name,
                "topic_id": _ZERO_UUID,  # v7+: the controller's results carry no id
                "error_code": result.error_code,
                "error_message": result.message,
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": None,
            }
            for result in results
        ]
        return {"throttle_time": 0, "topics": topics}
    if api_key is ApiKey.CREATE_PARTITIONS:
        return {
            "throttle_time": 0,
            "results": [
                {"name": r.name, "error_code": r.error_code, "error_message": r.message}
                for r in results
            ],
        }
    return {
        "throttle_time": 0,
        "responses": [
            {"name": r.name, "topic_id": _ZERO_UUID, "error_code": r.error_code} for r in results
        ],
    }

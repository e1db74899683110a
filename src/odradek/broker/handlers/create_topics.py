"""CreateTopics: creates each requested topic on its own, and answers one result per name.

Per topic: ``num_partitions`` and ``replication_factor`` of -1 take the broker's
``num.partitions`` and ``default.replication.factor``; a manual assignment (partition →
brokers) excludes both, as in Kafka (INVALID_REQUEST otherwise). Configs are validated by
``LogConfig`` before anything is stored (INVALID_CONFIG naming the setting; a null value too).
``validate_only`` runs every check and creates nothing. A name given twice in one request
answers INVALID_REQUEST and creates nothing for that name. One topic's failure never affects
another's result.

Creation is synchronous on a single node, so ``timeout`` is not waited on. Results of v5+
(partition count, replication factor, configs, topic id) are filled in for created topics so
the handler is ready when newer versions are advertised.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.broker.handlers import _cluster_admin
from odradek.broker.handlers._admin import (
    ConfigSource,
    duplicates,
    error_of,
    topic_uuid,
)
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.CREATE_TOPICS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    if ctx.cluster is not None:  # the controller decides (handlers/_cluster_admin.py)
        return _cluster_admin.run(ctx.cluster, request)
    body: Any = request.body  # a kio request of any supported version
    validate_only = bool(body.validate_only)
    names = [str(topic.name) for topic in body.topics]
    repeated = duplicates(names)
    results: list[dict[str, Any]] = []
    answered: set[str] = set()
    for topic in body.topics:
        name = str(topic.name)
        if name in answered:
            continue
        answered.add(name)
        if name in repeated:
            results.append(
                _failure(
                    name,
                    ErrorCode.INVALID_REQUEST,
                    f"topic {name!r} appears more than once in the request",
                )
            )
            continue
        try:
            _create(ctx, topic, validate_only=validate_only)
        except Exception as error:
            code, message = error_of(error, what=f"CreateTopics of topic {name!r}")
            results.append(_failure(name, code, message))
            continue
        results.append(_success(ctx, name, validate_only=validate_only))
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "topics": results})


def _create(ctx: BrokerContext, topic: Any, *, validate_only: bool) -> None:
    num_partitions = int(topic.num_partitions)
    replication_factor = int(topic.replication_factor)
    assignment: dict[int, list[int]] | None = None
    if topic.assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise KafkaError(
                "num_partitions and replication_factor must be -1 with a manual assignment",
                code=ErrorCode.INVALID_REQUEST,
            )
        assignment = {}
        for entry in topic.assignments:
            index = int(entry.partition_index)
            if index in assignment:
                raise KafkaError(
                    f"partition {index} is assigned twice",
                    code=ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                )
            assignment[index] = [int(broker) for broker in entry.broker_ids]
    configs: dict[str, str] = {}
    for config in topic.configs:
        config_name = str(config.name)
        if config_name in configs:
            raise KafkaError(
                f"config {config_name!r} is given more than once",
                code=ErrorCode.INVALID_REQUEST,
            )
        if config.value is None:
            raise KafkaError(
                f"null value for config {config_name!r}", code=ErrorCode.INVALID_CONFIG
            )
        configs[config_name] = str(config.value)
    ctx.topics.create_topic(
        str(topic.name),
        num_partitions,
        replication_factor,
        assignment=assignment,
        configs=configs,
        validate_only=validate_only,
    )


def _failure(name: str, code: int, message: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "error_code": code,
        "error_message": message,
        "topic_config_error_code": 0,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }


def _success(ctx: BrokerContext, name: str, *, validate_only: bool) -> dict[str, Any]:
    result = _failure(name, ErrorCode.NONE, "")
    result["error_message"] = None
    if validate_only:  # Kafka describes the would-be topic; its shape is not at hand here
        return result
    try:
        partitions = ctx.topics.describe(name)
        configs = [
            {
                "name": entry.name,
                "value": entry.value,
                "read_only": False,
                "config_source": int(
                    ConfigSource.DEFAULT_CONFIG
                    if entry.is_default
                    else ConfigSource.DYNAMIC_TOPIC_CONFIG
                ),
                "is_sensitive": False,
            }
            for entry in ctx.topics.topic_config_entries(name)
        ]
        topic_id = ctx.topics.metadata.topic_id(name)
    except Exception as error:  # created; only the v5+ description failed
        code, _ = error_of(error, what=f"describing new topic {name!r}")
        result["topic_config_error_code"] = code
        return result
    result.update(
        topic_id=topic_uuid(topic_id),
        num_partitions=len(partitions),
        replication_factor=len(partitions[0].replicas) if partitions else -1,
        configs=configs,
    )
    return result

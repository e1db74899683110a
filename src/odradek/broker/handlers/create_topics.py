"""CreateTopics: creates each requested topic on its own, and answers one result per name.

Per topic: ``num_partitions`` and ``replication_factor`` of -1 take the broker's
``num.partitions`` and ``default.replication.factor``; a manual assignment (partition →
brokers) excludes both, as in Kafka (INVALID_REQUEST otherwise). Configs are validated by
``LogConfig`` before anything is stored (INVALID_CONFIG naming the setting; a null value too).
``validate_only`` runs every check and creates nothing. A name given twice in one request
answers INVALID_REQUEST and creates nothing for that name. One topic's failure never affects
another's result.

Bounded work, checked before anything starts: a request asking for more than
``max.partitions.per.request`` partitions, all topics together, answers POLICY_VIOLATION for
every topic (as Kafka's controller does past 10,000); a topic that would pass
``max.partitions`` / ``max.broker.partitions`` answers POLICY_VIOLATION; a client over its
``controller.mutation.rate`` THROTTLING_QUOTA_EXCEEDED from v6 (older versions are admitted
and told the throttle time, as Kafka does).

The logs are made off the event loop (``TopicManager.start_create``): the response comes when
every topic is created, or when ``timeout`` passes — then the topics not done yet answer
REQUEST_TIMED_OUT and are created all the same. A timeout ≤ 0 answers at once, as Kafka does.
Results of v5+ (partition count, replication factor, configs, topic id) are filled in for
created topics so the handler is ready when newer versions are advertised.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

from odradek.broker.auth.checks import create_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import _cluster_admin
from odradek.broker.handlers._admin import (
    ConfigSource,
    await_changes,
    duplicates,
    error_of,
    quota_throttle_ms,
    record_mutations,
    throttled_error,
    topic_uuid,
)
from odradek.broker.handlers._topic_auth import authorize_topics
from odradek.broker.limits import check_request_partitions
from odradek.broker.ports import TopicPlan
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, request_value

API_KEY = ApiKey.CREATE_TOPICS
#: The first version that may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
QUOTA_ERROR_VERSION = 6


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    # Kafka's check: CREATE on the cluster or the topic (handlers/_topic_auth.py).
    return authorize_topics(ctx, request, create_allowed, _handle)


def _handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    if ctx.cluster is not None:  # the controller decides (handlers/_cluster_admin.py)
        return _cluster_admin.run(ctx.cluster, request)
    body: Any = request.body  # a kio request of any supported version
    validate_only = bool(body.validate_only)
    names = [str(topic.name) for topic in body.topics]
    repeated = duplicates(names)
    outcomes: dict[str, tuple[int, str | None]] = {}
    order: list[str] = []
    wanted: list[Any] = []
    for topic in body.topics:
        name = str(topic.name)
        if name in outcomes or name in order:
            continue
        order.append(name)
        if name in repeated:
            message = f"topic {name!r} appears more than once in the request"
            outcomes[name] = (int(ErrorCode.INVALID_REQUEST), message)
        else:
            wanted.append(topic)
    try:
        check_request_partitions(sum(_requested(ctx, t) for t in wanted), ctx.config.limits)
    except KafkaError as error:  # the whole request, before anything else is looked at
        for topic in wanted:
            outcomes[str(topic.name)] = (int(error.error_code), str(error))
        return _response(ctx, request, order, outcomes, set(), 0)
    throttle_ms = 0 if validate_only else quota_throttle_ms(ctx, request)
    refuse = throttle_ms > 0 and request.api_version >= QUOTA_ERROR_VERSION
    changes: dict[str, Awaitable[None]] = {}
    for topic in wanted:
        name = str(topic.name)
        if refuse:
            outcomes[name] = throttled_error(throttle_ms)
            continue
        try:
            plan = _plan(ctx, topic)
        except Exception as error:
            outcomes[name] = error_of(error, what=f"CreateTopics of topic {name!r}")
            continue
        if validate_only:
            outcomes[name] = (int(ErrorCode.NONE), None)
            continue
        changes[name] = ctx.topics.start_create(plan)
        record_mutations(ctx, request, len(plan.assignment))
    timeout_ms = int(request_value(body.timeout))
    if not changes or timeout_ms <= 0:
        outcomes.update(dict.fromkeys(changes, (int(ErrorCode.NONE), None)))
        return _response(ctx, request, order, outcomes, set(), throttle_ms)
    return _finish(ctx, request, order, outcomes, changes, timeout_ms, throttle_ms)


async def _finish(
    ctx: BrokerContext,
    request: Request,
    order: list[str],
    outcomes: dict[str, tuple[int, str | None]],
    changes: dict[str, Awaitable[None]],
    timeout_ms: int,
    throttle_ms: int,
) -> ResponsePayload:
    done = await await_changes(changes, timeout_ms)
    outcomes.update(done)
    created = {name for name, (code, _) in done.items() if code == ErrorCode.NONE}
    return _response(ctx, request, order, outcomes, created, throttle_ms)


def _response(
    ctx: BrokerContext,
    request: Request,
    order: list[str],
    outcomes: dict[str, tuple[int, str | None]],
    created: set[str],
    throttle_ms: int,
) -> ResponsePayload:
    results = []
    for name in order:
        code, message = outcomes[name]
        if code != ErrorCode.NONE:
            results.append(_failure(name, code, message or ""))
        else:
            results.append(_success(ctx, name, describe=name in created))
    return build_response(
        API_KEY, request.api_version, {"throttle_time": throttle_ms, "topics": results}
    )


def _requested(ctx: BrokerContext, topic: Any) -> int:
    """How many partitions ``topic`` asks for (the default for -1)."""
    if topic.assignments:
        return len(topic.assignments)
    count = int(topic.num_partitions)
    return ctx.config.num_partitions if count == -1 else max(count, 0)


def _plan(ctx: BrokerContext, topic: Any) -> TopicPlan:
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
    return ctx.topics.plan_topic(
        str(topic.name),
        num_partitions,
        replication_factor,
        assignment=assignment,
        configs=configs,
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


def _success(ctx: BrokerContext, name: str, *, describe: bool) -> dict[str, Any]:
    result = _failure(name, ErrorCode.NONE, "")
    result["error_message"] = None
    if not describe:  # validate_only or not waited for: Kafka describes the would-be topic
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

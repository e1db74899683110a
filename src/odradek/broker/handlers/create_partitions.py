"""CreatePartitions: grows each named topic to ``count`` partitions, each topic on its own.

A count not above the current one answers INVALID_PARTITIONS; a manual assignment must list
one replica set per new partition, of the topic's replication factor, on live brokers
(INVALID_REPLICA_ASSIGNMENT); a missing topic answers UNKNOWN_TOPIC_OR_PARTITION; a name given
twice INVALID_REQUEST. ``validate_only`` runs every check and adds nothing.

Bounded work, checked before anything starts: more than ``max.partitions.per.request`` new
partitions, all topics together, answer POLICY_VIOLATION for every topic of the request
(a count of 16,777,215 is refused at once, not attempted); a topic that would pass
``max.partitions`` / ``max.broker.partitions`` answers POLICY_VIOLATION; a client over its
``controller.mutation.rate`` THROTTLING_QUOTA_EXCEEDED (v3, KIP-599).

The new logs are made off the event loop; the new partitions are published (Metadata lists
them, a producer can write to them) once they all exist. The response comes then, or when
``timeout`` passes: the topics not done answer REQUEST_TIMED_OUT and grow all the same (a
timeout ≤ 0 answers at once, as Kafka does). A change of a topic waits for the one already
under way for it, as Kafka's controller applies them in turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

from odradek.broker.auth.checks import Op, topic_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import _cluster_admin
from odradek.broker.handlers._admin import (
    await_changes,
    duplicates,
    error_of,
    quota_throttle_ms,
    record_mutations,
    throttled_error,
)
from odradek.broker.handlers._topic_auth import authorize_topics
from odradek.broker.limits import check_request_partitions
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, request_value

API_KEY = ApiKey.CREATE_PARTITIONS
#: The first version that may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
QUOTA_ERROR_VERSION = 3


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    # Kafka's check: ALTER on the topic (handlers/_topic_auth.py).
    return authorize_topics(
        ctx, request, lambda ctx, name: topic_allowed(ctx, Op.ALTER, name), _handle
    )


def _handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    if ctx.cluster is not None:  # the controller decides (handlers/_cluster_admin.py)
        return _cluster_admin.run(ctx.cluster, request)
    body: Any = request.body  # a kio request of any supported version
    validate_only = bool(body.validate_only)
    repeated = duplicates(str(topic.name) for topic in body.topics)
    order: list[str] = []
    outcomes: dict[str, tuple[int, str | None]] = {}
    wanted: list[Any] = []
    for topic in body.topics:
        name = str(topic.name)
        if name in order:
            continue
        order.append(name)
        if name in repeated:
            message = f"topic {name!r} appears more than once in the request"
            outcomes[name] = (int(ErrorCode.INVALID_REQUEST), message)
        else:
            wanted.append(topic)
    try:
        check_request_partitions(sum(_adding(ctx, t) for t in wanted), ctx.config.limits)
    except KafkaError as error:
        for topic in wanted:
            outcomes[str(topic.name)] = (int(error.error_code), str(error))
        return _response(request, order, outcomes, 0)
    throttle_ms = 0 if validate_only else quota_throttle_ms(ctx, request)
    refuse = throttle_ms > 0 and request.api_version >= QUOTA_ERROR_VERSION
    changes: dict[str, Awaitable[None]] = {}
    for topic in wanted:
        name = str(topic.name)
        assignment = (
            None
            if topic.assignments is None
            else [[int(broker) for broker in entry.broker_ids] for entry in topic.assignments]
        )
        if refuse:
            outcomes[name] = throttled_error(throttle_ms)
        elif ctx.topics.is_busy(name):
            waiting = _after_current(ctx, request, name, int(topic.count), assignment)
            changes[name] = ctx.topics.keep(waiting)
        else:
            try:
                plan = ctx.topics.plan_partitions(name, int(topic.count), assignment=assignment)
            except Exception as error:
                outcomes[name] = error_of(error, what=f"CreatePartitions of topic {name!r}")
                continue
            if validate_only:
                outcomes[name] = (int(ErrorCode.NONE), None)
                continue
            changes[name] = ctx.topics.start_create(plan)
            record_mutations(ctx, request, len(plan.assignment))
    timeout_ms = int(request_value(body.timeout))
    if not changes or timeout_ms <= 0:  # Kafka answers a timeout ≤ 0 at once
        outcomes.update(dict.fromkeys(changes, (int(ErrorCode.NONE), None)))
        return _response(request, order, outcomes, throttle_ms)
    return _finish(request, order, outcomes, changes, timeout_ms, throttle_ms)


async def _after_current(
    ctx: BrokerContext,
    request: Request,
    name: str,
    count: int,
    assignment: Sequence[Sequence[int]] | None,
) -> None:
    """Grows a topic once the change under way for it is done (checked only then, against
    the partitions it has then)."""
    await ctx.topics.wait_idle(name)
    plan = ctx.topics.plan_partitions(name, count, assignment=assignment)
    body: Any = request.body
    if bool(body.validate_only):
        return
    record_mutations(ctx, request, len(plan.assignment))
    await ctx.topics.start_create(plan)


async def _finish(
    request: Request,
    order: list[str],
    outcomes: dict[str, tuple[int, str | None]],
    changes: dict[str, Awaitable[None]],
    timeout_ms: int,
    throttle_ms: int,
) -> ResponsePayload:
    outcomes.update(await await_changes(changes, timeout_ms))
    return _response(request, order, outcomes, throttle_ms)


def _adding(ctx: BrokerContext, topic: Any) -> int:
    """How many partitions ``topic`` would add (counted from its published partitions)."""
    name = str(topic.name)
    current = ctx.topics.partition_count(name) if ctx.topics.exists(name) else 0
    return max(int(topic.count) - current, 0)


def _response(
    request: Request, order: list[str], outcomes: dict[str, tuple[int, str | None]], throttle: int
) -> ResponsePayload:
    results = [
        {"name": name, "error_code": outcomes[name][0], "error_message": outcomes[name][1]}
        for name in order
    ]
    return build_response(
        API_KEY, request.api_version, {"throttle_time": throttle, "results": results}
    )

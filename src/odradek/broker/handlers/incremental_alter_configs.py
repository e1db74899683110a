"""IncrementalAlterConfigs (KIP-339): changes some of a topic's config overrides, leaving the
others as they are.

Operations per config: SET (0) stores an override, DELETE (1) removes it (back to the
default), APPEND (2) and SUBTRACT (3) add items to or remove items from a list config
(``cleanup.policy``), starting from its effective value; on any other config they answer
INVALID_CONFIG, as Kafka does. The resulting overrides are validated as a whole by
``LogConfig`` (INVALID_CONFIG naming the setting) and stored at once, or not at all; then
every partition of the topic runs with the new ``LogConfig``. ``validate_only`` checks and
changes nothing.

Per resource: a missing topic answers UNKNOWN_TOPIC_OR_PARTITION; a config named twice, a
null value for SET/APPEND/SUBTRACT or an unknown operation INVALID_REQUEST; a resource given
twice INVALID_REQUEST; a broker resource INVALID_REQUEST (dynamic broker configs are not
supported yet); any other resource type INVALID_REQUEST.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from odradek.broker.auth.checks import Op, require_config_access
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._admin import (
    TOPIC_CONFIG_TYPES,
    ConfigType,
    alter_each_resource,
    check_topic_resource,
    duplicates,
)
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import (
    AlterableConfigRequest,
    AlterConfigsResourceRequest,
    incremental_alter_configs_body,
)
from odradek.protocol.builder import build_response

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS


class OpType(enum.IntEnum):
    """Kafka's ``AlterConfigOp.OpType`` codes."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = incremental_alter_configs_body(request)
    validate_only = bool(body.validate_only)

    def alter_one(resource_type: int, name: str, resource: AlterConfigsResourceRequest) -> None:
        _alter(ctx, resource_type, name, resource.configs, validate_only=validate_only)

    responses = alter_each_resource("IncrementalAlterConfigs", body.resources, alter_one)
    return build_response(
        API_KEY, request.api_version, {"throttle_time": 0, "responses": responses}
    )


def _alter(
    ctx: BrokerContext,
    resource_type: int,
    name: str,
    configs: Sequence[AlterableConfigRequest],
    *,
    validate_only: bool,
) -> None:
    """Applies one resource's operations.

    Raises:
        KafkaError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, INVALID_CONFIG,
            INVALID_REQUEST.
    """
    require_config_access(ctx, Op.ALTER_CONFIGS, resource_type, name)
    check_topic_resource("IncrementalAlterConfigs", resource_type, name)
    names = [str(config.name) for config in configs]
    twice = duplicates(names)
    if twice:
        raise KafkaError(
            f"config(s) {sorted(twice)} appear more than once", code=ErrorCode.INVALID_REQUEST
        )
    to_set: dict[str, str] = {}
    to_delete: list[str] = []
    effective: dict[str, str] | None = None
    for config in configs:
        config_name = str(config.name)
        operation = int(config.config_operation)
        if operation == OpType.DELETE:
            to_delete.append(config_name)
            continue
        if operation not in (OpType.SET, OpType.APPEND, OpType.SUBTRACT):
            raise KafkaError(
                f"unknown operation {operation} for config {config_name!r}",
                code=ErrorCode.INVALID_REQUEST,
            )
        if config.value is None:
            raise KafkaError(
                f"null value for config {config_name!r}", code=ErrorCode.INVALID_REQUEST
            )
        value = str(config.value)
        if operation == OpType.SET:
            to_set[config_name] = value
            continue
        if TOPIC_CONFIG_TYPES.get(config_name) is not ConfigType.LIST:
            raise KafkaError(
                f"{OpType(operation).name} applies to list configs only, not {config_name!r}",
                code=ErrorCode.INVALID_CONFIG,
            )
        if effective is None:
            effective = {e.name: e.value for e in ctx.topics.topic_config_entries(name)}
        to_set[config_name] = _apply_list_op(
            OpType(operation), effective.get(config_name, ""), value
        )
    ctx.topics.alter_topic_configs(name, to_set, to_delete, validate_only=validate_only)


def _apply_list_op(operation: OpType, current: str, value: str) -> str:
    """APPEND adds the comma-separated items of ``value`` missing from ``current``;
    SUBTRACT removes them."""
    items = [item.strip() for item in current.split(",") if item.strip()]
    changes = [item.strip() for item in value.split(",") if item.strip()]
    if operation == OpType.APPEND:
        items += [item for item in changes if item not in items]
    else:
        items = [item for item in items if item not in changes]
    return ",".join(items)

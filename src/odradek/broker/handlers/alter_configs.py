"""AlterConfigs (the API before KIP-339, still sent by older tools): replaces a topic's config
overrides with exactly the ones given — an override not named is removed.

Each given config is stored as an override (a null value is INVALID_REQUEST); the new set is
validated as a whole by ``LogConfig`` (INVALID_CONFIG naming the setting) and stored at once, or
not at all, as IncrementalAlterConfigs does. ``validate_only`` checks and changes nothing.

Per resource: a missing topic answers UNKNOWN_TOPIC_OR_PARTITION; a config named twice or a
resource given twice INVALID_REQUEST; a broker resource INVALID_REQUEST (no dynamic broker
configs yet); any other resource type INVALID_REQUEST.
"""

from __future__ import annotations

from odradek.broker.auth.checks import Op, require_config_access
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._admin import alter_each_resource, check_topic_resource, duplicates
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import AlterConfigsReplaceResourceRequest, alter_configs_body
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ALTER_CONFIGS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = alter_configs_body(request)
    validate_only = bool(body.validate_only)

    def alter_one(
        resource_type: int, name: str, resource: AlterConfigsReplaceResourceRequest
    ) -> None:
        _replace(ctx, resource_type, name, resource, validate_only=validate_only)

    responses = alter_each_resource("AlterConfigs", body.resources, alter_one)
    return build_response(
        API_KEY, request.api_version, {"throttle_time": 0, "responses": responses}
    )


def _replace(
    ctx: BrokerContext,
    resource_type: int,
    name: str,
    resource: AlterConfigsReplaceResourceRequest,
    *,
    validate_only: bool,
) -> None:
    """Replaces one topic's overrides.

    Raises:
        KafkaError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, INVALID_CONFIG,
            INVALID_REQUEST.
    """
    require_config_access(ctx, Op.ALTER_CONFIGS, resource_type, name)
    check_topic_resource("AlterConfigs", resource_type, name)
    names = [str(config.name) for config in resource.configs]
    twice = duplicates(names)
    if twice:
        raise KafkaError(
            f"config(s) {sorted(twice)} appear more than once", code=ErrorCode.INVALID_REQUEST
        )
    wanted: dict[str, str] = {}
    for config in resource.configs:
        if config.value is None:
            raise KafkaError(
                f"null value for config {config.name!r}", code=ErrorCode.INVALID_REQUEST
            )
        wanted[str(config.name)] = str(config.value)
    current = [e.name for e in ctx.topics.topic_config_entries(name) if not e.is_default]
    removed = [config for config in current if config not in wanted]
    ctx.topics.alter_topic_configs(name, wanted, removed, validate_only=validate_only)

"""ListConfigResources (API key 74): the resources that have configs, by type.

Kafka 4.1 renamed ListClientMetricsResources (v0, KIP-714) to this API and added
``resource_types`` (v1, KIP-1142). The rules this handler keeps:

- v0 lists client-metrics resources only, as ListClientMetricsResources did; odradek has no
  client-metrics subscriptions (KIP-714 telemetry), so the list is empty;
- v1 lists the requested types, every supported type when the list is empty: topics (2; every
  topic this broker can describe, internal ones included), brokers (4; the live broker ids),
  broker loggers (8; none: odradek's loggers are not configured through the Kafka protocol),
  client metrics (16; none) and groups (32; the groups this broker coordinates). A requested
  type outside these answers UNSUPPORTED_VERSION and no resources, as Kafka does;
- like DescribeConfigs of a broker, it needs DESCRIBE_CONFIGS on the cluster
  (CLUSTER_AUTHORIZATION_FAILED); COORDINATOR_LOAD_IN_PROGRESS while a group partition loads.
"""

from __future__ import annotations

from typing import Any, Final

from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._admin import ConfigResourceType
from odradek.broker.handlers._groups import optional, runtime
from odradek.broker.handlers._topic_metadata import topic_names
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.LIST_CONFIG_RESOURCES

#: The types v1 answers (an empty request list means all of them), in answer order.
SUPPORTED_TYPES: Final = (
    ConfigResourceType.TOPIC,
    ConfigResourceType.BROKER,
    ConfigResourceType.BROKER_LOGGER,
    ConfigResourceType.CLIENT_METRICS,
    ConfigResourceType.GROUP,
)


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    if request.api_version == 0:
        requested: list[int] = [ConfigResourceType.CLIENT_METRICS]
    else:
        requested = [int(t) for t in optional(request.body, "resource_types", ())]
        requested = list(dict.fromkeys(requested)) or [int(t) for t in SUPPORTED_TYPES]
    error = ErrorCode.NONE
    resources: list[dict[str, Any]] = []
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        error = CLUSTER_DENIED
    elif any(t not in SUPPORTED_TYPES for t in requested):
        error = ErrorCode.UNSUPPORTED_VERSION
    else:
        for resource_type in SUPPORTED_TYPES:
            if resource_type in requested:
                names, error = _names(ctx, resource_type, error)
                resources.extend(
                    {"resource_name": name, "resource_type": int(resource_type)} for name in names
                )
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": error,
            "config_resources": resources,
        },
    )


def _names(
    ctx: BrokerContext, resource_type: ConfigResourceType, error: ErrorCode
) -> tuple[list[str], ErrorCode]:
    """The names of one type's resources, and the error so far (a loading group shard)."""
    if resource_type == ConfigResourceType.TOPIC:
        return topic_names(ctx), error
    if resource_type == ConfigResourceType.BROKER:
        if ctx.cluster is None:
            return [str(ctx.broker_id)], error
        return [str(i) for i in sorted(b.broker_id for b in ctx.cluster.cache.brokers())], error
    if resource_type == ConfigResourceType.GROUP:
        if ctx.groups is None:
            return [], error
        try:
            listed = runtime(ctx).list_groups()
        except KafkaError as failure:
            return [], failure.error_code
        code = ErrorCode(listed.error_code)
        return sorted(g.group_id for g in listed.groups), code or error
    return [], error  # broker loggers and client metrics: none in odradek

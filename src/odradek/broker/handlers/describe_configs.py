"""DescribeConfigs: the configs of topics (resource type 2), of this broker (type 4) and of
groups (type 32).

A topic reports every topic config with its effective value: an override is DYNAMIC_TOPIC_CONFIG
(``is_default`` false), a value from a broker setting given in the properties file
STATIC_BROKER_CONFIG, anything else DEFAULT_CONFIG. The broker reports
``BrokerConfig.describe()``: settings given in the properties file (or as overrides) are
STATIC_BROKER_CONFIG, the rest DEFAULT_CONFIG; all are read-only (no dynamic broker configs yet)
and sensitive ones (Kafka's PASSWORD type) carry a null value. Every Kafka broker setting is
listed with its Kafka type: those odradek does not implement carry the value given (or Kafka's
default) and documentation saying they have no effect. ``configuration_keys`` null or empty
lists every config, otherwise only those named (unknown names are left out). With
``include_synonyms`` a topic config lists its override, the broker settings it falls back on
that are set (STATIC_BROKER_CONFIG, e.g. ``log.retention.hours``) and the first of them with a
default (DEFAULT_CONFIG), as Kafka does; its source is the first of those. A broker setting lists
itself. Documentation (v3+, when asked for) is given
for the settings and topic configs odradek accepts without effect (Kafka's topic configs it does
not implement are listed with the override or Kafka's default).

A group (KIP-848's group configs, as Kafka 4 answers them for any group name, existing or not)
reports ``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms`` with the broker's
``group.consumer.*`` values, and Kafka's share group configs, which have no effect here; there
are no per-group overrides yet, so each is DEFAULT_CONFIG (read-only) with the broker setting as
its synonym.

Per resource: a missing topic answers UNKNOWN_TOPIC_OR_PARTITION, an illegal topic name
INVALID_TOPIC_EXCEPTION, a broker resource naming another broker (or not an integer; the
empty name, the cluster-wide dynamic default, has no configs), a group resource with an empty
name, or any other resource type INVALID_REQUEST.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from odradek.broker.auth.checks import Op, require_config_access
from odradek.broker.config import ConfigEntry, topic_config_fallbacks
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._admin import (
    TOPIC_CONFIG_TYPES,
    TOPIC_NOT_IMPLEMENTED_DOC,
    ConfigResourceType,
    ConfigSource,
    ConfigType,
    error_of,
)
from odradek.controller.assignment import validate_topic_name
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import describe_configs_body
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_CONFIGS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = describe_configs_body(request)
    include_synonyms = bool(getattr(body, "include_synonyms", False))
    include_documentation = bool(getattr(body, "include_documentation", False))
    results = []
    for resource in body.resources:
        resource_type = int(resource.resource_type)
        name = str(resource.resource_name)
        keys = resource.configuration_keys
        wanted = {str(key) for key in keys} if keys else None
        result: dict[str, Any] = {
            "resource_type": resource_type,
            "resource_name": name,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "configs": [],
        }
        try:
            entries = _describe(ctx, resource_type, name)
        except Exception as error:
            code, message = error_of(error, what=f"DescribeConfigs of {resource_type}/{name!r}")
            result.update(error_code=code, error_message=message)
        else:
            result["configs"] = [
                _config(entry, include_synonyms, include_documentation)
                for entry in entries
                if wanted is None or entry["name"] in wanted
            ]
        results.append(result)
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "results": results})


def _describe(ctx: BrokerContext, resource_type: int, name: str) -> Iterable[dict[str, Any]]:
    """The resource's configs as partial response entries.

    Raises:
        KafkaError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, INVALID_REQUEST.
    """
    require_config_access(ctx, Op.DESCRIBE_CONFIGS, resource_type, name)
    if resource_type == ConfigResourceType.TOPIC:
        validate_topic_name(name)
        broker_settings = ctx.config.describe()
        entries = []
        for entry in ctx.topics.topic_config_entries(name):
            synonyms = _topic_synonyms(entry.name, entry.value, entry.is_default, broker_settings)
            entries.append(
                {
                    "name": entry.name,
                    "value": entry.value,
                    "read_only": False,
                    "is_sensitive": False,
                    "config_source": synonyms[0]["source"],
                    "config_type": TOPIC_CONFIG_TYPES.get(entry.name, ConfigType.UNKNOWN),
                    "synonyms": synonyms,
                    "documentation": None if entry.implemented else TOPIC_NOT_IMPLEMENTED_DOC,
                }
            )
        return entries
    if resource_type == ConfigResourceType.BROKER:
        if name == "":
            return []  # no cluster-wide dynamic broker defaults exist
        if name != str(ctx.broker_id):
            raise KafkaError(
                f"broker resource {name!r} is not this broker ({ctx.broker_id})",
                code=ErrorCode.INVALID_REQUEST,
            )
        return [
            {
                "name": entry.name,
                "value": None if entry.sensitive else entry.value,
                "read_only": entry.read_only,
                "is_sensitive": entry.sensitive,
                "config_source": ConfigSource.DEFAULT_CONFIG
                if entry.is_default
                else ConfigSource.STATIC_BROKER_CONFIG,
                "config_type": ConfigType[entry.kafka_type],
                "documentation": entry.documentation,
            }
            for entry in ctx.config.describe().values()
        ]
    if resource_type == ConfigResourceType.GROUP:
        if not name:
            raise KafkaError("group name must not be empty", code=ErrorCode.INVALID_REQUEST)
        return _group_configs(ctx)
    raise KafkaError(
        f"resource type {resource_type} is not supported by DescribeConfigs",
        code=ErrorCode.INVALID_REQUEST,
    )


#: Kafka 4's group configs: name → (the broker setting that is its default, implemented).
_GROUP_CONFIGS: dict[str, tuple[str, bool]] = {
    "consumer.heartbeat.interval.ms": ("group.consumer.heartbeat.interval.ms", True),
    "consumer.session.timeout.ms": ("group.consumer.session.timeout.ms", True),
    "share.auto.offset.reset": ("", False),
    "share.heartbeat.interval.ms": ("group.share.heartbeat.interval.ms", False),
    "share.record.lock.duration.ms": ("group.share.record.lock.duration.ms", False),
    "share.session.timeout.ms": ("group.share.session.timeout.ms", False),
}
_GROUP_NOT_IMPLEMENTED_DOC = (
    "A Kafka group config that odradek does not implement (no share groups): it has no effect."
)


def _group_configs(ctx: BrokerContext) -> list[dict[str, Any]]:
    """A group's configs: the broker's defaults (no per-group overrides yet)."""
    group = ctx.config.group_config
    implemented = {
        "consumer.heartbeat.interval.ms": str(group.group_consumer_heartbeat_interval_ms),
        "consumer.session.timeout.ms": str(group.group_consumer_session_timeout_ms),
    }
    broker_settings = ctx.config.describe()
    entries = []
    for name, (setting_name, is_implemented) in _GROUP_CONFIGS.items():
        setting = broker_settings.get(setting_name)
        if is_implemented:
            value: str | None = implemented[name]
        else:
            value = setting.value if setting is not None else "latest"
        synonyms = [{"name": name, "value": value, "source": ConfigSource.DEFAULT_CONFIG}]
        if setting is not None:
            source = (
                ConfigSource.DEFAULT_CONFIG
                if setting.is_default
                else ConfigSource.STATIC_BROKER_CONFIG
            )
            synonyms.append({"name": setting.name, "value": setting.value, "source": source})
        entries.append(
            {
                "name": name,
                "value": value,
                "read_only": True,
                "is_sensitive": False,
                "config_source": ConfigSource.DEFAULT_CONFIG,
                "config_type": ConfigType.STRING
                if name == "share.auto.offset.reset"
                else ConfigType.INT,
                "synonyms": synonyms,
                "documentation": None if is_implemented else _GROUP_NOT_IMPLEMENTED_DOC,
            }
        )
    return entries


def _topic_synonyms(
    name: str, value: str | None, is_default: bool, broker_settings: Mapping[str, ConfigEntry]
) -> list[dict[str, Any]]:
    """A topic config's synonyms in Kafka's order: the topic's override, the broker settings
    it falls back on that are set, and the first of those with a default. The first one is the
    config's source; a config with none of them is DEFAULT_CONFIG."""
    synonyms = []
    if not is_default:
        synonyms.append({"name": name, "value": value, "source": ConfigSource.DYNAMIC_TOPIC_CONFIG})
    fallbacks = topic_config_fallbacks(name, broker_settings)
    for setting in fallbacks:
        if not setting.is_default:
            synonyms.append(
                {
                    "name": setting.name,
                    "value": setting.value,
                    "source": ConfigSource.STATIC_BROKER_CONFIG,
                }
            )
    for setting in fallbacks:
        if setting.value is not None and setting.is_default:
            synonyms.append(
                {
                    "name": setting.name,
                    "value": setting.value,
                    "source": ConfigSource.DEFAULT_CONFIG,
                }
            )
            break
    if not synonyms:
        synonyms.append({"name": name, "value": value, "source": ConfigSource.DEFAULT_CONFIG})
    return synonyms


def _config(
    entry: dict[str, Any], include_synonyms: bool, include_documentation: bool
) -> dict[str, Any]:
    source = int(entry["config_source"])
    own = [{"name": entry["name"], "value": entry["value"], "source": source}]
    synonyms = entry.get("synonyms", own) if include_synonyms else []
    return {
        **entry,
        "config_source": source,
        "config_type": int(entry["config_type"]),
        "synonyms": synonyms,
        "documentation": entry.get("documentation") if include_documentation else None,
    }

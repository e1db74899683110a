"""``odradek configs describe|alter``: dynamic configs of topics, brokers, clients and users,
like Kafka's kafka-configs.sh.

    odradek configs describe --entity-type topics|brokers|clients|users [--entity-name N]
                             [--entity-default] [--all] [--output json]
    odradek configs alter    --entity-type ... (--entity-name N | --entity-default)
                             [--add-config k=v,k2=v2] [--delete-config k,k2]

Topics and brokers go through DescribeConfigs / IncrementalAlterConfigs (describe prints the
configs set dynamically, every config with ``--all``; a topic without ``--entity-name``: every
topic). Clients (``client-id``) and users go through DescribeClientQuotas / AlterClientQuotas,
whose values are quotas (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
...); ``--entity-default`` names the default entity. A broker that does not serve an API
answers one line and exit 1; a usage mistake is one line and exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import click

from odradek.cli._options import (
    admin_client,
    bootstrap_server_option,
    broker_errors,
    client_settings,
    output_option,
    print_json,
)
from odradek.client.admin import AdminClient
from odradek.client.admin_types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
)
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, VersionRange

CLIENT_ID: Final = "odradek-configs"
TIMEOUT_MS: Final = 30_000
ENTITY_TYPES: Final = ("topics", "brokers", "clients", "users")
#: The client-quota entity types by ``--entity-type``.
_QUOTA_ENTITIES: Final = {"clients": "client-id", "users": "user"}
_SINGULAR: Final = {"topics": "topic", "brokers": "broker", "clients": "client", "users": "user"}


@click.group("configs")
def configs() -> None:
    """Describe and alter configs of topics, brokers, clients and users."""


def _entity_options(command: Any) -> Any:
    command = click.option(
        "--entity-default", is_flag=True, help="The default entity (brokers, clients, users)."
    )(command)
    command = click.option("--entity-name", help="The topic, broker id, client id or user.")(
        command
    )
    return click.option(
        "--entity-type", type=click.Choice(ENTITY_TYPES), help="What to look at (required)."
    )(command)


def parse_pairs(value: str) -> dict[str, str]:
    """``k=v,k2=v2`` (Kafka's ``--add-config``; ``[a,b]`` keeps a list value's commas).

    Raises:
        click.BadParameter: an entry without ``=`` or with an empty key.
    """
    pairs: dict[str, str] = {}
    depth, current = 0, ""
    entries: list[str] = []
    for char in value:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += char
    entries.append(current)
    for entry in entries:
        key, sep, item = entry.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(
                f"expected k=v entries, got {entry!r}", param_hint="--add-config"
            )
        pairs[key.strip()] = item.strip().removeprefix("[").removesuffix("]")
    return pairs


def _names(value: str | None) -> list[str]:
    return [] if not value else [name.strip() for name in value.split(",") if name.strip()]


def _check_entity(entity_type: str | None, name: str | None, default: bool, *, alter: bool) -> str:
    if entity_type is None:  # checked here: click lists a Choice's values on several lines
        raise click.UsageError("give --entity-type (topics, brokers, clients or users)")
    if name is not None and default:
        raise click.UsageError("--entity-name and --entity-default are mutually exclusive")
    if default and entity_type == "topics":
        raise click.UsageError("topics have no default entity")
    if alter and name is None and not default:
        raise click.UsageError("give --entity-name or --entity-default")
    if entity_type == "brokers" and name is not None and not name.isdigit():
        raise click.BadParameter(
            f"a broker id is a number, got {name!r}", param_hint="--entity-name"
        )
    return entity_type


def _resource(entity_type: str, name: str | None) -> ConfigResource:
    kind = ConfigResourceType.TOPIC if entity_type == "topics" else ConfigResourceType.BROKER
    return ConfigResource(kind, name or "")


@configs.command("describe")
@bootstrap_server_option
@_entity_options
@click.option("--all", "show_all", is_flag=True, help="Every config, defaults included.")
@output_option
def describe(
    bootstrap_server: str,
    entity_type: str | None,
    entity_name: str | None,
    entity_default: bool,
    show_all: bool,
    output: str,
) -> None:
    """Print the configs of an entity (the dynamic ones unless --all)."""
    entity_type = _check_entity(entity_type, entity_name, entity_default, alter=False)
    if entity_type in _QUOTA_ENTITIES:
        quotas = _describe_quotas(bootstrap_server, entity_type, entity_name, entity_default)
        if output == "json":
            print_json([{"entity": e, "quotas": q} for e, q in quotas])
            return
        for entity, values in quotas:
            shown = ", ".join(f"{k}={v:g}" for k, v in sorted(values.items()))
            click.echo(f"Quota configs for {entity} are {shown}")
        return
    with admin_client(bootstrap_server, CLIENT_ID) as admin:
        names = _entity_names(admin, entity_type, entity_name)
        resources = [_resource(entity_type, name) for name in names]
        described = admin.describe_configs(resources).all() if resources else {}
    documents = []
    for resource in resources:
        entries = [
            e for _, e in sorted(described[resource].items()) if show_all or not e.is_default
        ]
        documents.append((resource, entries))
    if output == "json":
        print_json(
            [
                {
                    "entity_type": entity_type,
                    "entity_name": resource.name or None,
                    "configs": [_entry_json(e) for e in entries],
                }
                for resource, entries in documents
            ]
        )
        return
    singular = _SINGULAR[entity_type]
    for resource, entries in documents:
        which = "All" if show_all else "Dynamic"
        what = f"{singular} {resource.name}" if resource.name else f"the default {singular}"
        click.echo(f"{which} configs for {what} are:")
        for entry in entries:
            value = "null" if entry.is_sensitive or entry.value is None else entry.value
            click.echo(
                f"  {entry.name}={value} sensitive={str(entry.is_sensitive).lower()} "
                f"source={entry.source.name}"
            )


def _entity_names(admin: AdminClient, entity_type: str, name: str | None) -> Sequence[str | None]:
    if name is not None:
        return [name]
    if entity_type == "topics":
        return sorted(admin.list_topics())
    return [None]  # the broker default (cluster-wide) resource


def _entry_json(entry: ConfigEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": None if entry.is_sensitive else entry.value,
        "source": entry.source.name,
        "sensitive": entry.is_sensitive,
        "read_only": entry.is_read_only,
    }


@configs.command("alter")
@bootstrap_server_option
@_entity_options
@click.option("--add-config", "add", metavar="k=v,k2=v2", help="Configs to set.")
@click.option("--delete-config", "remove", metavar="k,k2", help="Configs to remove.")
def alter(
    bootstrap_server: str,
    entity_type: str | None,
    entity_name: str | None,
    entity_default: bool,
    add: str | None,
    remove: str | None,
) -> None:
    """Set or remove configs of an entity."""
    entity_type = _check_entity(entity_type, entity_name, entity_default, alter=True)
    to_set = parse_pairs(add) if add else {}
    to_delete = _names(remove)
    if not to_set and not to_delete:
        raise click.UsageError("give --add-config and/or --delete-config")
    if set(to_set) & set(to_delete):
        raise click.UsageError(f"set and deleted at once: {sorted(set(to_set) & set(to_delete))}")
    singular = _SINGULAR[entity_type]
    what = f"{singular} {entity_name}" if entity_name else f"the default {singular}"
    if entity_type in _QUOTA_ENTITIES:
        try:
            values = {key: float(value) for key, value in to_set.items()}
        except ValueError:
            raise click.BadParameter(
                "quota values are numbers", param_hint="--add-config"
            ) from None
        _alter_quotas(bootstrap_server, entity_type, entity_name, values, to_delete)
    else:
        ops = [AlterConfigOp(k, v, AlterConfigOpType.SET) for k, v in to_set.items()]
        ops += [AlterConfigOp(k, None, AlterConfigOpType.DELETE) for k in to_delete]
        resource = _resource(entity_type, entity_name)
        with admin_client(bootstrap_server, CLIENT_ID) as admin:
            admin.alter_configs({resource: ops}).all()
    click.echo(f"Completed updating config for {what}.")


# --- client quotas ----------------------------------------------------------------------------


def _quota_call(bootstrap_server: str, api_key: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
    with broker_errors():
        network = NetworkClient(ClientConfig(client_settings(bootstrap_server, CLIENT_ID)))
        try:
            future = network.send(-1, api_key, body, versions=VersionRange(0, 1))
            if not network.wait([future], network.clock.monotonic_ms() + TIMEOUT_MS):
                raise KafkaError("no answer", code=ErrorCode.REQUEST_TIMED_OUT)
            try:
                return future.result()
            except KafkaError as error:
                if error.error_code is ErrorCode.UNSUPPORTED_VERSION:
                    raise click.ClickException(
                        f"the broker does not serve {_api(api_key)} (client and user quotas)"
                    ) from None
                raise
        finally:
            network.close()


def _api(api_key: ApiKey) -> str:
    return "".join(word.capitalize() for word in api_key.name.split("_"))


def _entity(entity_type: str, name: str | None) -> list[dict[str, Any]]:
    return [{"entity_type": _QUOTA_ENTITIES[entity_type], "entity_name": name}]


def _describe_quotas(
    bootstrap_server: str, entity_type: str, name: str | None, default: bool
) -> list[tuple[str, dict[str, float]]]:
    match_type = 0 if name is not None else 1 if default else 2  # exact, default, any
    body = {
        "components": [
            {"entity_type": _QUOTA_ENTITIES[entity_type], "match_type": match_type, "match": name}
        ],
        "strict": False,
    }
    answer = _quota_call(bootstrap_server, ApiKey.DESCRIBE_CLIENT_QUOTAS, body)
    _raise_for(answer.get("error_code", 0), answer.get("error_message"))
    result = []
    for entry in answer.get("entries") or ():
        parts = [
            f"{e['entity_type']}={'<default>' if e['entity_name'] is None else e['entity_name']}"
            for e in entry["entity"]
        ]
        result.append((",".join(parts), {v["key"]: v["value"] for v in entry["values"]}))
    return result


def _alter_quotas(
    bootstrap_server: str,
    entity_type: str,
    name: str | None,
    values: Mapping[str, float],
    removed: Sequence[str],
) -> None:
    ops = [{"key": k, "value": v, "remove": False} for k, v in values.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in removed]
    body = {"entries": [{"entity": _entity(entity_type, name), "ops": ops}], "validate_only": False}
    answer = _quota_call(bootstrap_server, ApiKey.ALTER_CLIENT_QUOTAS, body)
    for entry in answer.get("entries") or ():
        _raise_for(entry.get("error_code", 0), entry.get("error_message"))


def _raise_for(code: int, message: str | None) -> None:
    if code:
        error = ErrorCode(code)
        raise click.ClickException(f"{error.name}: {message}" if message else error.name)

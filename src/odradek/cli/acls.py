"""``odradek acls add|list|remove``: ACLs on a running broker, like Kafka's ``kafka-acls.sh``.

Over ``AdminClient`` to ``--bootstrap-server`` (CreateAcls, DescribeAcls, DeleteAcls)::

    odradek acls add    (--allow-principal P | --deny-principal P)... [--allow-host H]...
                        [--deny-host H]... [--operation OP]... RESOURCE...
                        [--resource-pattern-type literal|prefixed]
    odradek acls add    --allow-principal P... [--producer [--idempotent]] [--consumer]
                        --topic T... [--group G...]
    odradek acls list   [RESOURCE...] [--principal P] [--resource-pattern-type TYPE]
                        [--output table|json]
    odradek acls remove [(--allow-principal P | --deny-principal P)...] [--operation OP]...
                        RESOURCE... [--resource-pattern-type TYPE]

RESOURCE is ``--topic T``, ``--group G``, ``--cluster`` or ``--transactional-id T`` (each
repeatable). As in Kafka's tool: hosts default to ``*``, the operation to ``All``; ``add``
creates one ACL per principal × host × operation × resource; ``list`` and ``remove`` take
the pattern type ``literal`` by default, ``any`` or ``match`` to widen it; ``list`` with no
resource lists every ACL; ``remove`` with no principal or operation removes every ACL of the
resources. ``--producer`` grants WRITE, DESCRIBE and CREATE on the topics (``--idempotent``:
IDEMPOTENT_WRITE on the cluster too), ``--consumer`` READ and DESCRIBE on the topics and READ
on the groups, as kafka-acls.sh's shortcuts do. Output is Kafka's: ``Current ACLs for
resource `ResourcePattern(...)`:`` followed by one ``(principal=..., host=..., operation=...,
permissionType=...)`` line per ACL.

A bad principal, operation or pattern type is one line and exit 2; a broker refusal one line
and exit 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import click

from odradek.broker.auth.acls import (
    CLUSTER_NAME,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from odradek.broker.principal import KafkaPrincipal
from odradek.cli._options import (
    bootstrap_server_option,
    broker_errors,
    client_settings,
    output_option,
    print_json,
)
from odradek.client.admin import AdminClient
from odradek.client.admin_acls import AclSpec
from odradek.errors import KafkaError

CLIENT_ID: Final = "odradek-acls"
REQUEST_TIMEOUT_MS: Final = 10_000
_ANY: Final = 1

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def acls() -> None:
    """Add, list and remove ACLs (like kafka-acls.sh)."""


def _principals(values: Sequence[str], option: str) -> list[str]:
    for value in values:
        try:
            KafkaPrincipal.parse(value)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint=option) from None
    return list(values)


def _operations(values: Sequence[str]) -> list[AclOperation]:
    try:
        operations = [AclOperation.parse(value) for value in values]
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--operation") from None
    if any(op in (AclOperation.ANY, AclOperation.UNKNOWN) for op in operations):
        raise click.BadParameter("not a concrete operation", param_hint="--operation")
    return operations


def _pattern_type(value: str, *, filtering: bool) -> PatternType:
    allowed = ("literal", "prefixed", "any", "match") if filtering else ("literal", "prefixed")
    if value.lower() not in allowed:
        raise click.BadParameter(
            f"{value!r} is not one of {', '.join(allowed)}", param_hint="--resource-pattern-type"
        )
    kind: PatternType = PatternType.parse(value)
    return kind


def _resources(
    topics: Sequence[str], groups: Sequence[str], cluster: bool, transactional_ids: Sequence[str]
) -> list[tuple[ResourceType, str]]:
    found = [(ResourceType.TOPIC, t) for t in topics]
    found += [(ResourceType.GROUP, g) for g in groups]
    found += [(ResourceType.TRANSACTIONAL_ID, t) for t in transactional_ids]
    if cluster:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def _resource_options(command: F) -> F:
    for option in reversed(
        [
            click.option("--topic", "topics", multiple=True, help="A topic (repeatable)."),
            click.option("--group", "groups", multiple=True, help="A group (repeatable)."),
            click.option("--cluster", is_flag=True, help="The cluster resource."),
            click.option(
                "--transactional-id",
                "transactional_ids",
                multiple=True,
                help="A transactional id (repeatable).",
            ),
            click.option(
                "--resource-pattern-type",
                "pattern",
                default="literal",
                show_default=True,
                help="literal or prefixed (list and remove: also any, match).",
            ),
        ]
    ):
        command = option(command)
    return command


@contextmanager
def _admin(bootstrap_server: str) -> Iterator[AdminClient]:
    with broker_errors():
        client = AdminClient(
            client_settings(
                bootstrap_server,
                CLIENT_ID,
                {
                    "default.api.timeout.ms": REQUEST_TIMEOUT_MS,
                },
            ),
            bootstrap_fail_fast=True,
        )
        with client:
            yield client


@acls.command("add")
@bootstrap_server_option
@click.option("--allow-principal", "allow", multiple=True, help="Type:name allowed (repeatable).")
@click.option("--deny-principal", "deny", multiple=True, help="Type:name denied (repeatable).")
@click.option("--allow-host", "allow_hosts", multiple=True, help="Host of allow ACLs (default *).")
@click.option("--deny-host", "deny_hosts", multiple=True, help="Host of deny ACLs (default *).")
@click.option("--operation", "operations", multiple=True, help="Operation (default All).")
@click.option("--producer", is_flag=True, help="WRITE, DESCRIBE, CREATE on the topics.")
@click.option("--idempotent", is_flag=True, help="With --producer: IDEMPOTENT_WRITE too.")
@click.option("--consumer", is_flag=True, help="READ, DESCRIBE on the topics, READ on the groups.")
@_resource_options
def add(
    bootstrap_server: str,
    allow: tuple[str, ...],
    deny: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    deny_hosts: tuple[str, ...],
    operations: tuple[str, ...],
    producer: bool,
    idempotent: bool,
    consumer: bool,
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    cluster: bool,
    transactional_ids: tuple[str, ...],
    pattern: str,
) -> None:
    """Add ACLs."""
    pattern_type = _pattern_type(pattern, filtering=False)
    if producer or consumer:
        resources_ops = _convenience(producer, idempotent, consumer, operations, topics, groups)
    else:
        ops = _operations(operations or ("All",))
        resources_ops = [
            (rtype, name, ops)
            for rtype, name in _resources(topics, groups, cluster, transactional_ids)
        ]
    if not resources_ops:
        raise click.UsageError("name a resource: --topic, --group, --cluster or --transactional-id")
    if not allow and not deny:
        raise click.UsageError("name a principal: --allow-principal or --deny-principal")
    entries = [
        (principal, host, AclPermissionType.ALLOW)
        for principal in _principals(allow, "--allow-principal")
        for host in allow_hosts or ("*",)
    ] + [
        (principal, host, AclPermissionType.DENY)
        for principal in _principals(deny, "--deny-principal")
        for host in deny_hosts or ("*",)
    ]
    bindings = [
        AclSpec(int(rtype), name, int(pattern_type), principal, host, int(op), int(permission))
        for rtype, name, resource_ops in resources_ops
        for principal, host, permission in entries
        for op in resource_ops
    ]
    with _admin(bootstrap_server) as client:
        errors = client.create_acls(bindings)
    failed = [(b, e) for b, e in zip(bindings, errors, strict=True) if e is not None]
    if failed:
        binding, error = failed[0]
        raise click.ClickException(f"cannot add {_entry(binding)} to {_pattern(binding)}: {error}")
    _print(bindings, "Adding ACLs for resource")


def _convenience(
    producer: bool,
    idempotent: bool,
    consumer: bool,
    operations: Sequence[str],
    topics: Sequence[str],
    groups: Sequence[str],
) -> list[tuple[ResourceType, str, list[AclOperation]]]:
    """The ACLs of kafka-acls.sh's ``--producer`` / ``--consumer``."""
    if operations:
        raise click.UsageError("--producer and --consumer choose the operations: no --operation")
    if not topics:
        raise click.UsageError("--producer and --consumer need --topic")
    if consumer and not groups:
        raise click.UsageError("--consumer needs --group")
    if idempotent and not producer:
        raise click.UsageError("--idempotent goes with --producer")
    found: list[tuple[ResourceType, str, list[AclOperation]]] = []
    topic_ops: list[AclOperation] = []
    if producer:
        topic_ops += [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
    if consumer:
        topic_ops += [
            op for op in (AclOperation.READ, AclOperation.DESCRIBE) if op not in topic_ops
        ]
        found += [(ResourceType.GROUP, g, [AclOperation.READ]) for g in groups]
    found = [(ResourceType.TOPIC, t, topic_ops) for t in topics] + found
    if idempotent:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME, [AclOperation.IDEMPOTENT_WRITE]))
    return found


@acls.command("list")
@bootstrap_server_option
@click.option("--principal", default=None, help="Only the ACLs of this Type:name.")
@_resource_options
@output_option
def list_acls(
    bootstrap_server: str,
    principal: str | None,
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    cluster: bool,
    transactional_ids: tuple[str, ...],
    pattern: str,
    output: str,
) -> None:
    """List ACLs (all of them, or those of the resources named)."""
    if principal is not None:
        _principals([principal], "--principal")
    resources = _resources(topics, groups, cluster, transactional_ids)
    pattern_type = _pattern_type(pattern, filtering=True) if resources else PatternType.ANY
    filters = [
        AclSpec(int(rtype), name, int(pattern_type), principal, None, _ANY, _ANY)
        for rtype, name in resources
    ] or [AclSpec(_ANY, None, _ANY, principal, None, _ANY, _ANY)]
    found: list[AclSpec] = []
    with _admin(bootstrap_server) as client:
        for acl_filter in filters:
            found += [b for b in client.describe_acls(acl_filter) if b not in found]
    if output == "json":
        print_json([_document(binding) for binding in found])
        return
    _print(found, "Current ACLs for resource")


@acls.command("remove")
@bootstrap_server_option
@click.option("--allow-principal", "allow", multiple=True, help="Type:name (repeatable).")
@click.option("--deny-principal", "deny", multiple=True, help="Type:name (repeatable).")
@click.option("--operation", "operations", multiple=True, help="Operation (default: any).")
@_resource_options
def remove(
    bootstrap_server: str,
    allow: tuple[str, ...],
    deny: tuple[str, ...],
    operations: tuple[str, ...],
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    cluster: bool,
    transactional_ids: tuple[str, ...],
    pattern: str,
) -> None:
    """Remove the ACLs that match."""
    pattern_type = _pattern_type(pattern, filtering=True)
    resources = _resources(topics, groups, cluster, transactional_ids)
    if not resources:
        raise click.UsageError("name a resource: --topic, --group, --cluster or --transactional-id")
    who: list[tuple[str | None, int]] = []
    who += [(p, int(AclPermissionType.ALLOW)) for p in _principals(allow, "--allow-principal")]
    who += [(p, int(AclPermissionType.DENY)) for p in _principals(deny, "--deny-principal")]
    ops = [int(op) for op in _operations(operations)] if operations else [_ANY]
    filters = [
        AclSpec(int(rtype), name, int(pattern_type), principal, None, op, permission)
        for rtype, name in resources
        for principal, permission in who or [(None, _ANY)]
        for op in ops
    ]
    with _admin(bootstrap_server) as client:
        outcomes = client.delete_acls(filters)
    removed: list[AclSpec] = []
    for outcome in outcomes:
        if isinstance(outcome, KafkaError):
            raise click.ClickException(f"cannot remove ACLs: {outcome}")
        removed += [b for b in outcome if b not in removed]
    _print(removed, "Removed ACLs for resource")


def _pattern(binding: AclSpec) -> str:
    return (
        f"ResourcePattern(resourceType={ResourceType(binding.resource_type).name}, "
        f"name={binding.name}, patternType={PatternType(binding.pattern_type).name})"
    )


def _entry(binding: AclSpec) -> str:
    return (
        f"(principal={binding.principal}, host={binding.host}, "
        f"operation={AclOperation(binding.operation).name}, "
        f"permissionType={AclPermissionType(binding.permission_type).name})"
    )


def _document(binding: AclSpec) -> dict[str, str | None]:
    """One binding of ``list --output json``, with Kafka's enum names."""
    return {
        "resource_type": ResourceType(binding.resource_type).name,
        "name": binding.name,
        "pattern_type": PatternType(binding.pattern_type).name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": AclOperation(binding.operation).name,
        "permission_type": AclPermissionType(binding.permission_type).name,
    }


def _print(bindings: Sequence[AclSpec], heading: str) -> None:
    grouped: dict[str, list[str]] = {}
    for binding in bindings:
        grouped.setdefault(_pattern(binding), []).append(_entry(binding))
    for pattern, entries in grouped.items():
        click.echo(f"{heading} `{pattern}`: ")
        for entry in entries:
            click.echo(f" \t{entry} ")
        click.echo("")

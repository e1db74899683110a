"""``AdminClient``: synchronous topic, config, offset, record, group and cluster administration.

Every call sends its requests and waits for the answers on the calling thread, which drives
the client's own ``NetworkClient`` (one call at a time: a lock serialises callers, so one
``AdminClient`` may be shared between threads). Each call takes ``timeout_ms`` (default
``default.api.timeout.ms``) for the whole call, retries included.

The client is a facade over parts, one per responsibility, that share its ``AdminRequests``
(``admin_requests``: connections, metadata, the lock, deadlines and the retrying request
loop):

- ``TopicAdmin`` (``admin_topics``): create, delete, describe and list topics, add
  partitions, describe the cluster, elect leaders, describe and alter configs;
- ``RecordAdmin`` (``admin_records``): list offsets, delete records (to partition leaders);
- ``GroupAdmin`` (``admin_groups``): list, describe and delete groups, list, alter and delete
  their committed offsets (to group coordinators);
- ``ClusterAdmin`` (``admin_cluster``): alter and list partition reassignments (to the
  controller), list the resources that have configs;
- ``ScramAdmin`` (``admin_scram``): alter and describe users' SCRAM credentials;
- ``TransactionAdmin`` (``admin_transactions``): list and describe transactions, describe a
  partition's producers, abort a (hanging) transaction on a partition.

Errors: a request that fails on the network (connection lost, timeout, NOT_CONTROLLER) is
retried after ``retry.backoff.ms`` until the call's deadline, then raises its ``KafkaError``
(REQUEST_TIMED_OUT, NETWORK_EXCEPTION). Per-item errors (a topic that exists, a partition that
is unknown) come back in the call's ``AdminResult`` as ``KafkaError`` subclasses; retriable
per-item leader errors (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE) refresh metadata and
are retried within the deadline first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.client.admin_acls import AclAdmin
from odradek.client.admin_cluster import ClusterAdmin
from odradek.client.admin_groups import GroupAdmin
from odradek.client.admin_quotas import QuotaAdmin
from odradek.client.admin_records import RecordAdmin
from odradek.client.admin_requests import AdminRequests
from odradek.client.admin_scram import ScramAdmin
from odradek.client.admin_topics import TopicAdmin
from odradek.client.admin_transactions import TransactionAdmin
from odradek.client.closeable import Closeable
from odradek.client.config import ADMIN, ClientConfig

__all__ = ["AdminClient"]

P = ParamSpec("P")
R = TypeVar("R")
Part = TypeVar("Part")


class _PartMethod(Generic[Part, P, R]):
    """A method of ``AdminClient`` that is a method of one of its parts: reading it from a
    client gives that method bound to the client's part (same signature and docstring)."""

    def __init__(self, part: str, method: Callable[Concatenate[Part, P], R]) -> None:
        self._part = part
        self._method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, client: AdminClient, owner: type[Any]) -> Callable[P, R]: ...

    def __get__(self, client: AdminClient | None, owner: type[Any]) -> Self | Callable[P, R]:
        if client is None:
            return self
        part: Part = getattr(client, self._part)
        method = self._method

        @functools.wraps(method)
        def bound(*args: P.args, **kwargs: P.kwargs) -> R:
            return method(part, *args, **kwargs)

        return bound


class AdminClient(Closeable):
    """Kafka's admin API, synchronous (see the module docstring).

    Args:
        config: settings by Kafka name (``bootstrap.servers`` is required); more as keyword
            arguments, underscores for dots.
        clock: the time source.
        bootstrap_fail_fast: fail at once, with NETWORK_EXCEPTION, when the first metadata
            cannot be had from ``bootstrap.servers`` (for command-line tools), instead of
            retrying until the call's deadline as Kafka's admin client does.

    Raises:
        ConfigError: an unknown setting (named) or a bad value.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | ClientConfig | None = None,
        /,
        *,
        clock: Clock = SYSTEM_CLOCK,
        bootstrap_fail_fast: bool = False,
        **kwargs: Any,
    ) -> None:
        self._requests = AdminRequests(
            ClientConfig(config, client_type=ADMIN, **kwargs),
            clock,
            bootstrap_fail_fast=bootstrap_fail_fast,
        )
        self._topics = TopicAdmin(self._requests)
        self._records = RecordAdmin(self._requests)
        self._groups = GroupAdmin(self._requests)
        self._cluster = ClusterAdmin(self._requests)
        self._scram = ScramAdmin(self._requests)
        self._acls = AclAdmin(self._requests)
        self._quotas = QuotaAdmin(self._requests)
        self._transactions = TransactionAdmin(self._requests)

    @property
    def config(self) -> ClientConfig:
        return self._requests.config

    def close(self) -> None:
        """Closes the connections; later calls fail. Idempotent."""
        self._requests.close()

    # topics, the cluster, configs
    create_topics = _PartMethod("_topics", TopicAdmin.create_topics)
    delete_topics = _PartMethod("_topics", TopicAdmin.delete_topics)
    create_partitions = _PartMethod("_topics", TopicAdmin.create_partitions)
    describe_topics = _PartMethod("_topics", TopicAdmin.describe_topics)
    list_topics = _PartMethod("_topics", TopicAdmin.list_topics)
    describe_cluster = _PartMethod("_topics", TopicAdmin.describe_cluster)
    elect_leaders = _PartMethod("_topics", TopicAdmin.elect_leaders)
    describe_configs = _PartMethod("_topics", TopicAdmin.describe_configs)
    alter_configs = _PartMethod("_topics", TopicAdmin.alter_configs)
    describe_log_dirs = _PartMethod("_topics", TopicAdmin.describe_log_dirs)
    # offsets and records
    list_offsets = _PartMethod("_records", RecordAdmin.list_offsets)
    delete_records = _PartMethod("_records", RecordAdmin.delete_records)
    # groups
    list_groups = _PartMethod("_groups", GroupAdmin.list_groups)
    describe_groups = _PartMethod("_groups", GroupAdmin.describe_groups)
    list_group_offsets = _PartMethod("_groups", GroupAdmin.list_group_offsets)
    alter_group_offsets = _PartMethod("_groups", GroupAdmin.alter_group_offsets)
    delete_groups = _PartMethod("_groups", GroupAdmin.delete_groups)
    delete_group_offsets = _PartMethod("_groups", GroupAdmin.delete_group_offsets)
    list_transactions = _PartMethod("_transactions", TransactionAdmin.list_transactions)
    describe_transactions = _PartMethod("_transactions", TransactionAdmin.describe_transactions)
    describe_producers = _PartMethod("_transactions", TransactionAdmin.describe_producers)
    abort_transaction = _PartMethod("_transactions", TransactionAdmin.abort_transaction)
    # partition reassignments
    alter_partition_reassignments = _PartMethod(
        "_cluster", ClusterAdmin.alter_partition_reassignments
    )
    list_partition_reassignments = _PartMethod(
        "_cluster", ClusterAdmin.list_partition_reassignments
    )
    list_config_resources = _PartMethod("_cluster", ClusterAdmin.list_config_resources)
    # SCRAM credentials
    alter_user_scram_credentials = _PartMethod("_scram", ScramAdmin.alter_user_scram_credentials)
    describe_user_scram_credentials = _PartMethod(
        "_scram", ScramAdmin.describe_user_scram_credentials
    )
    # ACLs
    create_acls = _PartMethod("_acls", AclAdmin.create_acls)
    describe_acls = _PartMethod("_acls", AclAdmin.describe_acls)
    delete_acls = _PartMethod("_acls", AclAdmin.delete_acls)
    # client quotas
    describe_client_quotas = _PartMethod("_quotas", QuotaAdmin.describe_client_quotas)
    alter_client_quotas = _PartMethod("_quotas", QuotaAdmin.alter_client_quotas)

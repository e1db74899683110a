"""Typed, read-only views of admin request bodies: DeleteRecords, DescribeConfigs,
AlterConfigs, IncrementalAlterConfigs, InitProducerId, DescribeCluster, DescribeLogDirs and
OffsetForLeaderEpoch (the cold-path
companions of ``protocol.requests``, under the same rules: fields every decoded version has, checked
against kio's classes by tests/protocol/test_requests.py; accessors return ``Request.body``).

Version-only fields (DescribeCluster's ``endpoint_type``, v1+; OffsetForLeaderEpoch's
``replica_id``, v3+) are read from the body.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Protocol

from odradek.protocol.codec import Request

__all__ = [
    "AlterConfigsEntryRequest",
    "AlterConfigsReplaceResourceRequest",
    "AlterConfigsRequestBody",
    "AlterConfigsResourceRequest",
    "AlterableConfigRequest",
    "DeleteRecordsPartitionRequest",
    "DeleteRecordsRequestBody",
    "DeleteRecordsTopicRequest",
    "DescribeClusterRequestBody",
    "DescribeConfigsRequestBody",
    "DescribeConfigsResourceRequest",
    "DescribeLogDirsRequestBody",
    "DescribeLogDirsTopicRequest",
    "IncrementalAlterConfigsRequestBody",
    "InitProducerIdRequestBody",
    "OffsetForLeaderEpochRequestBody",
    "OffsetForLeaderPartitionRequest",
    "OffsetForLeaderTopicRequest",
    "alter_configs_body",
    "delete_records_body",
    "describe_cluster_body",
    "describe_configs_body",
    "describe_log_dirs_body",
    "incremental_alter_configs_body",
    "init_producer_id_body",
    "offset_for_leader_epoch_body",
]


class DeleteRecordsPartitionRequest(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def offset(self) -> int: ...


class DeleteRecordsTopicRequest(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[DeleteRecordsPartitionRequest]: ...


class DeleteRecordsRequestBody(Protocol):
    @property
    def topics(self) -> Sequence[DeleteRecordsTopicRequest]: ...


class DescribeConfigsResourceRequest(Protocol):
    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configuration_keys(self) -> Sequence[str] | None: ...


class DescribeConfigsRequestBody(Protocol):
    @property
    def resources(self) -> Sequence[DescribeConfigsResourceRequest]: ...
    @property
    def include_synonyms(self) -> bool: ...


class AlterableConfigRequest(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def config_operation(self) -> int: ...
    @property
    def value(self) -> str | None: ...


class AlterConfigsResourceRequest(Protocol):
    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configs(self) -> Sequence[AlterableConfigRequest]: ...


class IncrementalAlterConfigsRequestBody(Protocol):
    @property
    def resources(self) -> Sequence[AlterConfigsResourceRequest]: ...
    @property
    def validate_only(self) -> bool: ...


class AlterConfigsEntryRequest(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str | None: ...


class AlterConfigsReplaceResourceRequest(Protocol):
    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configs(self) -> Sequence[AlterConfigsEntryRequest]: ...


class AlterConfigsRequestBody(Protocol):
    @property
    def resources(self) -> Sequence[AlterConfigsReplaceResourceRequest]: ...
    @property
    def validate_only(self) -> bool: ...


class InitProducerIdRequestBody(Protocol):
    @property
    def transactional_id(self) -> str | None: ...


class DescribeClusterRequestBody(Protocol):
    @property
    def include_cluster_authorized_operations(self) -> bool: ...


class DescribeLogDirsTopicRequest(Protocol):
    @property
    def topic(self) -> str: ...
    @property
    def partitions(self) -> Sequence[int]: ...


class DescribeLogDirsRequestBody(Protocol):
    @property
    def topics(self) -> Sequence[DescribeLogDirsTopicRequest] | None: ...


class OffsetForLeaderPartitionRequest(Protocol):
    @property
    def partition(self) -> int: ...
    @property
    def current_leader_epoch(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...


class OffsetForLeaderTopicRequest(Protocol):
    @property
    def topic(self) -> str: ...
    @property
    def partitions(self) -> Sequence[OffsetForLeaderPartitionRequest]: ...


class OffsetForLeaderEpochRequestBody(Protocol):
    @property
    def topics(self) -> Sequence[OffsetForLeaderTopicRequest]: ...


#: The body of a DeleteRecords request as its view.
delete_records_body: Callable[[Request], DeleteRecordsRequestBody] = operator.attrgetter("body")
#: The body of a DescribeConfigs request as its view.
describe_configs_body: Callable[[Request], DescribeConfigsRequestBody] = operator.attrgetter("body")
#: The body of an IncrementalAlterConfigs request as its view.
incremental_alter_configs_body: Callable[[Request], IncrementalAlterConfigsRequestBody] = (
    operator.attrgetter("body")
)
#: The body of an AlterConfigs request as its view.
alter_configs_body: Callable[[Request], AlterConfigsRequestBody] = operator.attrgetter("body")
#: The body of an InitProducerId request as its view.
init_producer_id_body: Callable[[Request], InitProducerIdRequestBody] = operator.attrgetter("body")
#: The body of a DescribeCluster request as its view.
describe_cluster_body: Callable[[Request], DescribeClusterRequestBody] = operator.attrgetter("body")
#: The body of a DescribeLogDirs request as its view.
describe_log_dirs_body: Callable[[Request], DescribeLogDirsRequestBody] = operator.attrgetter(
    "body"
)
#: The body of an OffsetForLeaderEpoch request as its view.
offset_for_leader_epoch_body: Callable[[Request], OffsetForLeaderEpochRequestBody] = (
    operator.attrgetter("body")
)

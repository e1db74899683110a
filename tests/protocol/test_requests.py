"""The typed request views: each one fits kio's request class of every decoded version of its
API (field names, nesting and types), and the accessors hand back the decoded body itself."""

from __future__ import annotations

import datetime
import importlib
import types
import typing
from collections.abc import Sequence
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.static.primitive import i32Timedelta

from odradek.protocol import ApiKey, admin_requests, decode_request, group_requests
from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, is_implemented
from odradek.protocol.client_codec import encode_request_body
from odradek.protocol.requests import (
    FetchRequestBody,
    ListOffsetsRequestBody,
    MetadataRequestBody,
    NamedProduceTopicData,
    ProduceRequestBody,
    ProduceTopicDataById,
    duration_ms,
    fetch_body,
    list_offsets_body,
    metadata_allows_auto_create,
    metadata_body,
    produce_body,
)

VIEWS: dict[ApiKey, type[Any]] = {
    ApiKey.PRODUCE: ProduceRequestBody,
    ApiKey.FETCH: FetchRequestBody,
    ApiKey.LIST_OFFSETS: ListOffsetsRequestBody,
    ApiKey.METADATA: MetadataRequestBody,
    ApiKey.FIND_COORDINATOR: group_requests.FindCoordinatorRequestBody,
    ApiKey.JOIN_GROUP: group_requests.JoinGroupRequestBody,
    ApiKey.SYNC_GROUP: group_requests.SyncGroupRequestBody,
    ApiKey.HEARTBEAT: group_requests.HeartbeatRequestBody,
    ApiKey.LEAVE_GROUP: group_requests.LeaveGroupRequestBody,
    ApiKey.OFFSET_COMMIT: group_requests.OffsetCommitRequestBody,
    ApiKey.OFFSET_FETCH: group_requests.OffsetFetchRequestBody,
    ApiKey.OFFSET_DELETE: group_requests.OffsetDeleteRequestBody,
    ApiKey.DESCRIBE_GROUPS: group_requests.DescribeGroupsRequestBody,
    ApiKey.DELETE_GROUPS: group_requests.DeleteGroupsRequestBody,
    ApiKey.DELETE_RECORDS: admin_requests.DeleteRecordsRequestBody,
    ApiKey.DESCRIBE_CONFIGS: admin_requests.DescribeConfigsRequestBody,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: admin_requests.IncrementalAlterConfigsRequestBody,
    ApiKey.INIT_PRODUCER_ID: admin_requests.InitProducerIdRequestBody,
    ApiKey.DESCRIBE_CLUSTER: admin_requests.DescribeClusterRequestBody,
    ApiKey.DESCRIBE_LOG_DIRS: admin_requests.DescribeLogDirsRequestBody,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: admin_requests.OffsetForLeaderEpochRequestBody,
}
DECODED = [
    (key, version)
    for key in VIEWS
    for version in IMPLEMENTED_VERSIONS[key]
    if is_implemented(key, version)
]


def _members(view: type[Any]) -> dict[str, Any]:
    """The view's properties and the types they return."""
    return {
        name: typing.get_type_hints(member.fget)["return"]
        for name, member in vars(view).items()
        if isinstance(member, property)
    }


def _without_none(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        assert len(args) == 1, hint
        return args[0], True
    return hint, False


def _mismatches(view: type[Any], entity: type[Any], path: str) -> list[str]:
    """Where ``entity`` (a kio class) does not give what ``view`` promises."""
    found = typing.get_type_hints(entity)
    problems = []
    for name, wanted in _members(view).items():
        where = f"{path}.{name}"
        if name not in found:
            problems.append(f"{where}: missing")
            continue
        wanted_type, wanted_nullable = _without_none(wanted)
        actual_type, actual_nullable = _without_none(found[name])
        if actual_nullable and not wanted_nullable:
            problems.append(f"{where}: nullable in kio, not in the view")
        if typing.get_origin(wanted_type) is Sequence:
            (item_view,) = typing.get_args(wanted_type)
            if typing.get_origin(actual_type) is not tuple:
                problems.append(f"{where}: {actual_type} is not an array")
                continue
            item = typing.get_args(actual_type)[0]
            if getattr(item_view, "_is_protocol", False):
                problems.extend(_mismatches(item_view, item, where))
            elif not (isinstance(item, type) and issubclass(item, item_view)):
                problems.append(f"{where}: items {item} are not {item_view}")
        elif not (isinstance(actual_type, type) and issubclass(actual_type, wanted_type)):
            problems.append(f"{where}: {actual_type} is not a {wanted_type}")
    return problems


@pytest.mark.parametrize(
    ("api_key", "version"), DECODED, ids=[f"{k.name}-v{v}" for k, v in DECODED]
)
def test_each_view_fits_every_decoded_version(api_key: ApiKey, version: int) -> None:
    # Produce v0-v2 have no kio schema: the codec reads them through v3's (its body without
    # the leading transactional_id), so v3's class is what the handler sees.
    schema_version = max(version, 3) if api_key == ApiKey.PRODUCE else version
    request_class = load_request_schema(api_key, schema_version)
    assert _mismatches(VIEWS[api_key], request_class, request_class.__name__) == []


class _ProduceByName(typing.Protocol):
    @property
    def topic_data(self) -> Sequence[NamedProduceTopicData]: ...


class _ProduceById(typing.Protocol):
    @property
    def topic_data(self) -> Sequence[ProduceTopicDataById]: ...


@pytest.mark.parametrize("version", range(3, 14))
def test_the_produce_topic_views_fit_their_versions(version: int) -> None:
    # Produce v3-v12 name each topic, v13 (KIP-516) gives its id instead: the handler reads
    # each version through the view that fits it.
    request_class = load_request_schema(ApiKey.PRODUCE, version)
    by_name = _mismatches(_ProduceByName, request_class, "p")
    by_id = _mismatches(_ProduceById, request_class, "p")
    assert (by_name == [], by_id == []) == (version < 13, version >= 13)


def test_the_checker_notices_a_field_a_version_lacks() -> None:
    # allow_auto_topic_creation is Metadata v4+ only: a view listing it fits v4, not v3.
    class Wider(MetadataRequestBody, typing.Protocol):
        @property
        def allow_auto_topic_creation(self) -> bool: ...

    assert _mismatches(Wider, load_request_schema(ApiKey.METADATA, 4), "m") == []
    assert _mismatches(Wider, load_request_schema(ApiKey.METADATA, 3), "m") == [
        "m.allow_auto_topic_creation: missing"
    ]

    class WrongType(typing.Protocol):
        @property
        def acks(self) -> str: ...

    assert _mismatches(WrongType, load_request_schema(ApiKey.PRODUCE, 3), "p") != []

    class WrongItems(typing.Protocol):
        @property
        def groups(self) -> Sequence[bytes]: ...

    assert _mismatches(WrongItems, load_request_schema(ApiKey.DESCRIBE_GROUPS, 0), "d") != []


def _frame(body: Any, correlation_id: int = 7) -> bytes:
    return encode_request_body(body, correlation_id, "views")


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def test_accessors_return_the_decoded_body_and_read_its_fields() -> None:
    fetch = load_request_schema(ApiKey.FETCH, 11)
    module = importlib.import_module(fetch.__module__)
    body = fetch(
        max_wait=_ms(250),
        min_bytes=1,
        max_bytes=1000,
        isolation_level=1,
        topics=(
            module.FetchTopic(
                topic="t",
                partitions=(
                    module.FetchPartition(partition=2, fetch_offset=5, partition_max_bytes=9),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    request = decode_request(_frame(body))

    view = fetch_body(request)

    assert view is request.body
    assert duration_ms(view.max_wait) == 250
    assert (view.min_bytes, view.max_bytes, view.isolation_level) == (1, 1000, 1)
    (topic,) = view.topics
    (partition,) = topic.partitions
    assert (topic.topic, partition.partition, partition.fetch_offset) == ("t", 2, 5)
    assert produce_body(request) is list_offsets_body(request) is request.body  # unchecked


def test_metadata_auto_create_defaults_to_allowed_before_v4() -> None:
    v3 = load_request_schema(ApiKey.METADATA, 3)
    v4 = load_request_schema(ApiKey.METADATA, 4)

    old = decode_request(_frame(v3(topics=None)))
    refused = decode_request(_frame(v4(topics=None, allow_auto_topic_creation=False)))

    assert metadata_body(old).topics is None
    assert metadata_allows_auto_create(old) is True
    assert metadata_allows_auto_create(refused) is False


def test_duration_ms_truncates_to_whole_milliseconds() -> None:
    assert duration_ms(datetime.timedelta(microseconds=2999)) == 2
    assert duration_ms(datetime.timedelta(seconds=-1)) == -1000

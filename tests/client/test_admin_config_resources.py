"""``AdminClient.list_config_resources`` against a live embedded broker (ListConfigResources,
API key 74): every type when none is asked for, a filter by types, client metrics alone (v0's
ListClientMetricsResources form: none in odradek), a type the broker does not list, and a
principal without DESCRIBE_CONFIGS on the cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from odradek import Broker, OffsetAndMetadata, TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import ConfigResource, ConfigResourceType, NewTopic
from odradek.client.config import ClientConfig
from odradek.client.consumer import Consumer
from odradek.client.network import NetworkClient
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange

T = ConfigResourceType


@pytest.fixture
def admin(broker: Broker) -> Iterator[AdminClient]:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as client:
        yield client


def _with_topics_and_a_group(broker: Broker, admin: AdminClient) -> None:
    admin.create_topics([NewTopic("lcr-a", 1, 1), NewTopic("lcr-b", 2, 1)]).all()
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="lcr-group") as consumer:
        consumer.commit_sync({TopicPartition("lcr-a", 0): OffsetAndMetadata(0)})


def test_every_type_when_none_is_asked_for(broker: Broker, admin: AdminClient) -> None:
    _with_topics_and_a_group(broker, admin)
    listed = admin.list_config_resources()
    topics = [r.name for r in listed if r.type == T.TOPIC]
    assert {"lcr-a", "lcr-b"} <= set(topics)
    assert topics == sorted(topics)
    assert [r for r in listed if r.type == T.BROKER] == [ConfigResource.broker(0)]
    assert ConfigResource(T.GROUP, "lcr-group") in listed
    # Types come in Kafka's order: topics, brokers, then groups.
    kinds = [r.type for r in listed]
    assert kinds == sorted(kinds)
    assert not [r for r in listed if r.type in (T.CLIENT_METRICS, T.BROKER_LOGGER)]


def test_a_filter_by_types(broker: Broker, admin: AdminClient) -> None:
    _with_topics_and_a_group(broker, admin)
    assert admin.list_config_resources([T.GROUP]) == [ConfigResource(T.GROUP, "lcr-group")]
    assert admin.list_config_resources([T.BROKER]) == [ConfigResource.broker(0)]
    both = admin.list_config_resources([T.BROKER, T.GROUP, T.BROKER])
    assert both == [ConfigResource.broker(0), ConfigResource(T.GROUP, "lcr-group")]
    assert admin.list_config_resources([T.BROKER_LOGGER]) == []


def test_client_metrics_alone_is_v0s_question_and_empty(admin: AdminClient) -> None:
    assert admin.list_config_resources([T.CLIENT_METRICS]) == []


def test_a_type_the_broker_does_not_list_is_refused(admin: AdminClient) -> None:
    with pytest.raises(KafkaError) as caught:
        admin.list_config_resources([T.TOPIC, 1])
    assert caught.value.error_code == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.parametrize("version", [0, 1])
def test_each_version_on_the_wire(broker: Broker, version: int) -> None:
    """v0 (ListClientMetricsResources) lists client metrics only, whatever exists; v1 with
    no types lists every type."""
    network = NetworkClient(ClientConfig(bootstrap_servers=broker.bootstrap_servers))
    try:
        future = network.send(
            -1,
            ApiKey.LIST_CONFIG_RESOURCES,
            {"resource_types": []},
            versions=VersionRange(version, version),
        )
        assert network.wait([future], network.clock.monotonic_ms() + 10_000)
        body = future.result()
    finally:
        network.close()
    assert body["error_code"] == ErrorCode.NONE
    names = [(r.get("resource_type"), r["resource_name"]) for r in body["config_resources"]]
    assert names == ([] if version == 0 else [(int(T.BROKER), "0")])


def test_without_describe_configs_on_the_cluster() -> None:
    config = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
    with (
        Broker(config=config) as secured,
        AdminClient(bootstrap_servers=secured.bootstrap_servers) as admin,
        pytest.raises(KafkaError) as caught,
    ):
        admin.list_config_resources()
    assert caught.value.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

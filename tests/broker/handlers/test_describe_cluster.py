"""DescribeCluster against a live broker: the cluster id, this broker as the controller and the
only broker, authorized operations on request, and the refusal of controller endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.admin import KafkaAdminClient

from odradek import Broker
from odradek.errors import ErrorCode

from .conftest import RawClient, schema

VERSIONS = (0, 1, 2)
NOT_REQUESTED = -(2**31)


def describe_request(version: int, **fields: Any) -> Any:
    defaults: dict[str, Any] = {"include_cluster_authorized_operations": False}
    if version >= 1:
        defaults["endpoint_type"] = 1
    if version >= 2:
        defaults["include_fenced_brokers"] = False
    defaults.update(fields)
    return schema("describe_cluster", version).DescribeClusterRequest(**defaults)


def test_admin_client(broker: Broker, admin: KafkaAdminClient) -> None:
    described = admin.describe_cluster()

    ctx = broker.app.ctx
    assert ctx is not None
    assert described["cluster_id"] == ctx.cluster_id
    assert described["controller_id"] == 0
    assert described["brokers"] == [
        {
            "broker_id": 0,
            "host": broker.host,
            "port": broker.port,
            "rack": None,
            "is_fenced": False,
        }
    ]
    assert set(described["authorized_operations"]) == {
        "CREATE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version(broker: Broker, raw: RawClient, version: int) -> None:
    response = raw.send(describe_request(version))

    assert int(response.error_code) == 0
    assert response.controller_id == 0
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [
        (0, broker.host, broker.port)
    ]
    assert response.cluster_authorized_operations == NOT_REQUESTED


def test_controller_endpoints_are_refused(raw: RawClient) -> None:
    response = raw.send(describe_request(1, endpoint_type=2))

    assert int(response.error_code) == ErrorCode.INVALID_REQUEST
    assert response.error_message
    assert response.endpoint_type == 2
    assert response.brokers == ()

"""broker.limits and broker.connection_quotas: the limit settings (Kafka's names and defaults,
errors naming the setting), the partition checks, the controller mutation quota's token
bucket, the per-address connection counts and the idle sweep — all pure, no broker."""

from __future__ import annotations

import pytest

from odradek.broker.config import BrokerConfig
from odradek.broker.connection_quotas import ConnectionQuotas, IdleConnections
from odradek.broker.limits import (
    MAX_INT,
    BrokerLimits,
    MutationQuota,
    check_partition_totals,
    check_request_partitions,
    parse_overrides,
    render_overrides,
)
from odradek.errors import ConfigError, ErrorCode, KafkaError

# --- settings --------------------------------------------------------------------------------


def test_defaults_are_kafkas_and_kip_578s() -> None:
    limits = BrokerConfig.from_mapping({}).limits
    assert limits == BrokerLimits()
    assert (limits.max_connections, limits.max_connections_per_ip) == (MAX_INT, MAX_INT)
    assert limits.connections_max_idle_ms == 600_000
    assert (limits.queued_max_requests, limits.queued_max_request_bytes) == (500, -1)
    assert (limits.max_partitions, limits.max_broker_partitions) == (MAX_INT, 100_000)
    assert limits.max_partitions_per_request == 10_000
    assert limits.controller_mutation_rate is None


def test_settings_reach_the_limits_and_describe() -> None:
    config = BrokerConfig.from_mapping(
        {
            "max.connections": "7",
            "max.connections.per.ip": "3",
            "max.connections.per.ip.overrides": "127.0.0.1:5, [::1]:0 ,example.org:9",
            "connections.max.idle.ms": "-1",
            "queued.max.requests": "2",
            "queued.max.request.bytes": "1048576",
            "max.partitions": "50",
            "max.broker.partitions": "40",
            "max.partitions.per.request": "30",
            "controller.mutation.rate": "2.5",
        }
    )
    limits = config.limits
    assert (limits.max_connections, limits.max_connections_per_ip) == (7, 3)
    assert limits.max_connections_per_ip_overrides == (
        ("127.0.0.1", 5),
        ("::1", 0),
        ("example.org", 9),
    )
    assert limits.connections_max_idle_ms == -1
    assert (limits.queued_max_requests, limits.queued_max_request_bytes) == (2, 1048576)
    assert (limits.max_partitions, limits.max_broker_partitions) == (50, 40)
    assert limits.max_partitions_per_request == 30
    assert limits.controller_mutation_rate == 2.5
    described = config.describe()
    assert described["max.connections.per.ip.overrides"].value == (
        "127.0.0.1:5,[::1]:0,example.org:9"
    )
    assert described["max.broker.partitions"].is_default is False
    assert described["max.partitions"].value == "50"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("max.connections", "-1", "max.connections"),
        ("queued.max.requests", "0", "queued.max.requests"),
        ("connections.max.idle.ms", "0", "connections.max.idle.ms"),
        ("queued.max.request.bytes", "0", "queued.max.request.bytes"),
        ("max.broker.partitions", "0", "max.broker.partitions"),
        ("max.partitions.per.request", "x", "max.partitions.per.request"),
        ("controller.mutation.rate", "0", "controller.mutation.rate"),
        ("max.connections.per.ip.overrides", "hostonly", "max.connections.per.ip.overrides"),
        ("max.connections.per.ip.overrides", "a:1,a:2", "appears twice"),
        ("max.connections.per.ip.overrides", "a:-3", "out of range"),
        ("max.connections.per.ip", "0", "only if max.connections.per.ip.overrides is set"),
    ],
)
def test_invalid_limits_name_the_setting(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_mapping({name: value})


def test_a_zero_per_ip_limit_with_overrides_admits_only_the_overridden() -> None:
    config = BrokerConfig.from_mapping(
        {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:1"}
    )
    assert config.limits.max_connections_per_ip == 0


def test_overrides_round_trip() -> None:
    parsed = parse_overrides("h:1,[fe80::1]:2,10.0.0.1:3")
    assert parse_overrides(render_overrides(parsed)) == parsed


# --- partition checks ------------------------------------------------------------------------


def test_request_cap_is_policy_violation() -> None:
    limits = BrokerLimits(max_partitions_per_request=100)
    check_request_partitions(100, limits)
    with pytest.raises(KafkaError) as raised:
        check_request_partitions(101, limits)
    assert raised.value.error_code == ErrorCode.POLICY_VIOLATION
    assert "max.partitions.per.request" in str(raised.value)


@pytest.mark.parametrize(
    ("adding", "here", "setting"),
    [(11, 0, "max.partitions"), (5, 6, "max.broker.partitions")],
)
def test_totals_are_policy_violation(adding: int, here: int, setting: str) -> None:
    limits = BrokerLimits(max_partitions=100, max_broker_partitions=50)
    check_partition_totals(
        adding=10, adding_here=5, cluster_partitions=90, broker_replicas=45, limits=limits
    )
    with pytest.raises(KafkaError) as raised:
        check_partition_totals(
            adding=adding,
            adding_here=here,
            cluster_partitions=90,
            broker_replicas=45,
            limits=limits,
        )
    assert raised.value.error_code == ErrorCode.POLICY_VIOLATION
    assert setting in str(raised.value)


# --- controller mutation quota ---------------------------------------------------------------


def test_mutation_quota_admits_until_in_debt_then_waits_for_the_refill() -> None:
    quota = MutationQuota(
        BrokerLimits(
            controller_mutation_rate=10.0,
            controller_quota_window_num=2,
            controller_quota_window_size_seconds=1,
        )
    )  # a bucket of 20 partitions, refilled at 10/s
    assert quota.throttle_time_ms("a", 0) == 0
    quota.record("a", 50, 0)  # admitted whole, 30 in debt
    assert quota.throttle_time_ms("a", 0) == 3000
    assert quota.throttle_time_ms("b", 0) == 0  # per client id
    assert quota.throttle_time_ms("a", 1000) == 2000
    assert quota.throttle_time_ms("a", 3000) == 0
    quota.record("a", 5, 3000)
    assert quota.throttle_time_ms("a", 3000) == 500


def test_mutation_quota_off_by_default() -> None:
    quota = MutationQuota(BrokerLimits())
    quota.record("a", 1_000_000, 0)
    assert not quota.enabled
    assert quota.throttle_time_ms("a", 0) == 0


# --- connections -----------------------------------------------------------------------------


def test_connection_quotas_per_address_overall_and_overrides() -> None:
    quotas = ConnectionQuotas(
        BrokerLimits(max_connections=4, max_connections_per_ip=2), {"10.0.0.9": 3}
    )
    assert quotas.admit("10.0.0.1") is None
    assert quotas.admit("10.0.0.1") is None
    refusal = quotas.admit("10.0.0.1")
    assert refusal is not None
    assert "max.connections.per.ip=2" in refusal
    assert quotas.admit("10.0.0.9") is None
    assert quotas.admit("10.0.0.9") is None
    refusal = quotas.admit("10.0.0.9")
    assert refusal is not None
    assert "max.connections=4" in refusal
    quotas.release("10.0.0.1")
    assert quotas.admit("10.0.0.9") is None  # the override allows a third from there
    refusal = quotas.admit("10.0.0.9")
    assert refusal is not None  # the broker is full again
    assert quotas.count() == 4
    assert (quotas.count("10.0.0.1"), quotas.count("10.0.0.9")) == (1, 3)
    stats = quotas.statistics()
    assert (stats.refused_per_ip, stats.refused_total) == (1, 2)


def test_release_of_an_unknown_address_changes_nothing() -> None:
    quotas = ConnectionQuotas(BrokerLimits(max_connections=1))
    quotas.release("10.0.0.1")
    assert quotas.admit("10.0.0.1") is None
    assert quotas.count() == 1


def test_idle_sweep_needs_an_unchanged_signature_and_no_work_for_the_idle_time() -> None:
    idle = IdleConnections(100)
    assert idle.sweep([("a", 1, False), ("b", 1, False)], 0) == []
    assert idle.sweep([("a", 1, False), ("b", 2, False)], 60) == []  # b moved
    assert idle.sweep([("a", 1, False), ("b", 2, True)], 100) == ["a"]  # b busy
    assert idle.sweep([("a", 1, False), ("b", 2, False)], 150) == ["a"]  # b: busy restarted it
    assert idle.sweep([("b", 2, False)], 250) == ["b"]
    assert idle.sweep([("a", 1, False)], 300) == []  # a was forgotten: a new connection


def test_sweep_interval_is_bounded() -> None:
    assert IdleConnections(600_000).sweep_interval_ms == 1000
    assert IdleConnections(200).sweep_interval_ms == 50
    assert IdleConnections(1).sweep_interval_ms == 10

"""ApiKey names, the implemented-versions table, and flexible versions read from kio."""

from __future__ import annotations

import pytest
from kio.schema.index import api_key_map

from odradek.protocol.api_keys import (
    ADVERTISED_ONLY_VERSIONS,
    IMPLEMENTED_VERSIONS,
    ApiKey,
    VersionRange,
    api_key_or_none,
    flexible_versions,
    is_flexible,
    is_implemented,
    schema_versions,
)
from odradek.protocol.inter_broker import load_request_schema, load_response_schema

#: What Kafka 4.0 serves (its ApiVersions answer; the JSON schemas' validVersions after KIP-896)
#: for each API odradek implements, and where odradek's range differs, why.
KAFKA_4_0 = {
    # Kafka 4 advertises Produce v0-v2 but closes the connection on them; odradek serves them
    # (up-converted), which librdkafka < 2.11.1 and kafka-python's api_version=(0, 10) need.
    ApiKey.PRODUCE: (0, 12),
    ApiKey.FETCH: (4, 17),
    ApiKey.LIST_OFFSETS: (1, 10),
    ApiKey.METADATA: (0, 13),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (2, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.ELECT_LEADERS: (0, 2),
}

#: Where odradek serves more or less than Kafka 4.0, on purpose (see api_keys).
DIFFERS_FROM_KAFKA_4_0 = {
    ApiKey.PRODUCE: (0, 13),  # Kafka 4.1's v13: topics by id (KIP-516)
    ApiKey.FETCH: (4, 18),  # Kafka 4.1's v18: a follower's high watermark, a tagged field
    ApiKey.JOIN_GROUP: (0, 9),  # v0-v1 kept: dropping them buys nothing, may break an old client
    ApiKey.OFFSET_COMMIT: (2, 10),  # Kafka 4.1's v10: topics by id
    ApiKey.LIST_OFFSETS: (1, 11),  # Kafka 4.2's v11: the earliest-pending-upload spec (-6)
    ApiKey.OFFSET_FETCH: (1, 10),  # Kafka 4.2's v10: topics by id
}

#: Kafka's ``flexibleVersions`` (the first flexible version) of each API above.
KAFKA_FIRST_FLEXIBLE = {
    ApiKey.PRODUCE: 9,
    ApiKey.FETCH: 12,
    ApiKey.LIST_OFFSETS: 6,
    ApiKey.METADATA: 9,
    ApiKey.OFFSET_COMMIT: 8,
    ApiKey.OFFSET_FETCH: 6,
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.JOIN_GROUP: 6,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 4,
    ApiKey.SYNC_GROUP: 4,
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.LIST_GROUPS: 3,
    ApiKey.API_VERSIONS: 3,
    ApiKey.CREATE_TOPICS: 5,
    ApiKey.DELETE_TOPICS: 4,
    ApiKey.DELETE_RECORDS: 2,
    ApiKey.INIT_PRODUCER_ID: 2,
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.CREATE_PARTITIONS: 2,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.ALTER_CONFIGS: 2,
    ApiKey.DESCRIBE_CLUSTER: 0,
    ApiKey.DELETE_GROUPS: 2,
}


def test_api_key_names_match_kafkas() -> None:
    for value, name in api_key_map.items():
        assert ApiKey(value).name == name.upper()
    # Kafka's inter-broker APIs that kio does not model keep their numbers.
    assert ApiKey.LEADER_AND_ISR == 4
    assert ApiKey.STOP_REPLICA == 5
    assert ApiKey.UPDATE_METADATA == 6
    assert ApiKey.CONTROLLED_SHUTDOWN == 7
    assert {int(key) for key in ApiKey} == set(range(max(api_key_map) + 1))


def test_api_key_or_none() -> None:
    assert api_key_or_none(18) is ApiKey.API_VERSIONS
    assert api_key_or_none(10_000) is None
    assert api_key_or_none(-1) is None


def test_the_table_serves_what_kafka_4_serves() -> None:
    for key, kafkas in KAFKA_4_0.items():
        low, high = DIFFERS_FROM_KAFKA_4_0.get(key, kafkas)
        assert IMPLEMENTED_VERSIONS[key] == VersionRange(low, high), key.name


def test_flexible_versions_are_kafkas() -> None:
    for key, first in KAFKA_FIRST_FLEXIBLE.items():
        served = [v for v in IMPLEMENTED_VERSIONS[key] if is_implemented(key, v)]
        assert [v for v in served if is_flexible(key, v)] == [v for v in served if v >= first], (
            key.name
        )


def test_the_admin_apis_of_the_broker_issue_are_listed() -> None:
    for key in (
        ApiKey.CREATE_PARTITIONS,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.DELETE_RECORDS,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_LOG_DIRS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ):
        assert key in IMPLEMENTED_VERSIONS, key.name


def test_every_implemented_version_has_a_kio_request_and_response() -> None:
    for key, versions in IMPLEMENTED_VERSIONS.items():
        for version in versions:
            if key == ApiKey.PRODUCE and version < 3:
                continue  # decoded through v3, encoded by hand: see the next test
            assert load_request_schema(key, version).__api_key__ == key
            assert load_response_schema(key, version).__version__ == version


def test_produce_v0_to_v2_are_served_though_kio_has_no_schema_for_them() -> None:
    assert ADVERTISED_ONLY_VERSIONS == {}
    assert [v for v in range(15) if is_implemented(ApiKey.PRODUCE, v)] == list(range(14))
    # kio starts at v3 (as Kafka 4 does): the codec reads v0-v2 through the v3 schema.
    assert schema_versions(ApiKey.PRODUCE) == VersionRange(3, 13)
    assert not any(is_flexible(ApiKey.PRODUCE, v) for v in range(3))


def test_is_implemented_rejects_unknown_keys_and_versions() -> None:
    assert not is_implemented(10_000, 0)
    assert not is_implemented(ApiKey.FETCH, 3)
    assert not is_implemented(ApiKey.FETCH, 19)
    assert not is_implemented(ApiKey.SASL_HANDSHAKE, 2)
    assert is_implemented(ApiKey.FETCH, 18)


@pytest.mark.parametrize(
    ("api_key", "first_flexible"),
    [
        (ApiKey.PRODUCE, 9),
        (ApiKey.FETCH, 12),
        (ApiKey.METADATA, 9),
        (ApiKey.API_VERSIONS, 3),
        (ApiKey.OFFSET_COMMIT, 8),
        (ApiKey.JOIN_GROUP, 6),
        (ApiKey.CREATE_PARTITIONS, 2),
        (ApiKey.DESCRIBE_CLUSTER, 0),
    ],
)
def test_flexible_versions_come_from_kio(api_key: ApiKey, first_flexible: int) -> None:
    flexible = flexible_versions(api_key)
    assert flexible is not None
    assert flexible.min_version == first_flexible
    assert not any(
        is_flexible(api_key, v)
        for v in range(first_flexible)
        if v in (schema_versions(api_key) or ())
    )
    assert all(is_flexible(api_key, v) for v in flexible)


def test_apis_without_flexible_versions() -> None:
    assert flexible_versions(ApiKey.SASL_HANDSHAKE) is None
    assert flexible_versions(ApiKey.CONTROLLED_SHUTDOWN) is None  # not modelled by kio


def test_is_flexible_of_an_unknown_version_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        is_flexible(ApiKey.FETCH, 3)
    with pytest.raises(LookupError):
        is_flexible(ApiKey.LEADER_AND_ISR, 0)


def test_the_other_apis_flexible_versions() -> None:
    flexible = {
        (key.name, version)
        for key, versions in IMPLEMENTED_VERSIONS.items()
        if key not in KAFKA_FIRST_FLEXIBLE
        for version in versions
        if is_implemented(key, version) and is_flexible(key, version)
    }
    assert flexible == {
        ("ALTER_USER_SCRAM_CREDENTIALS", 0),
        ("DESCRIBE_USER_SCRAM_CREDENTIALS", 0),
        ("SASL_AUTHENTICATE", 2),
        ("ALTER_PARTITION", 1),
        ("DESCRIBE_LOG_DIRS", 2),
        ("DESCRIBE_LOG_DIRS", 3),
        ("DESCRIBE_LOG_DIRS", 4),
        ("DESCRIBE_TOPIC_PARTITIONS", 0),
        ("ALTER_REPLICA_LOG_DIRS", 2),
        ("ALTER_PARTITION_REASSIGNMENTS", 0),
        ("ALTER_PARTITION_REASSIGNMENTS", 1),
        ("LIST_PARTITION_REASSIGNMENTS", 0),
        ("OFFSET_FOR_LEADER_EPOCH", 4),
        ("ELECT_LEADERS", 2),
        ("CONSUMER_GROUP_HEARTBEAT", 0),
        ("CONSUMER_GROUP_HEARTBEAT", 1),
        ("CONSUMER_GROUP_DESCRIBE", 0),
        ("CONSUMER_GROUP_DESCRIBE", 1),
        ("LIST_CONFIG_RESOURCES", 0),
        ("LIST_CONFIG_RESOURCES", 1),
        # Transactions (broker/txn).
        *(("ADD_PARTITIONS_TO_TXN", v) for v in range(3, 6)),
        *(("ADD_OFFSETS_TO_TXN", v) for v in range(3, 5)),
        *(("END_TXN", v) for v in range(3, 6)),
        ("WRITE_TXN_MARKERS", 1),
        *(("TXN_OFFSET_COMMIT", v) for v in range(3, 6)),
        ("DESCRIBE_PRODUCERS", 0),
        ("DESCRIBE_TRANSACTIONS", 0),
        ("LIST_TRANSACTIONS", 0),
        ("LIST_TRANSACTIONS", 1),
        # ACLs and quotas (broker/auth).
        ("DESCRIBE_ACLS", 2),
        ("DESCRIBE_ACLS", 3),
        ("CREATE_ACLS", 2),
        ("CREATE_ACLS", 3),
        ("DELETE_ACLS", 2),
        ("DELETE_ACLS", 3),
        ("DESCRIBE_CLIENT_QUOTAS", 1),
        ("ALTER_CLIENT_QUOTAS", 1),
    }


def test_version_range() -> None:
    versions = VersionRange(2, 4)
    assert list(versions) == [2, 3, 4]
    assert 2 in versions
    assert 5 not in versions
    assert "3" not in versions
    assert str(versions) == "2..4"
    assert versions.intersect(VersionRange(3, 9)) == VersionRange(3, 4)
    assert versions.intersect(VersionRange(5, 9)) is None
    with pytest.raises(ValueError, match="invalid version range"):
        VersionRange(3, 2)
    with pytest.raises(ValueError, match="invalid version range"):
        VersionRange(-1, 2)

"""Kafka API keys by name, the API versions odradek implements, and which versions are flexible.

This module owns the answer to "may this (api key, api version) pair be decoded?". The rule it
keeps: a version is listed in ``IMPLEMENTED_VERSIONS`` only when the codec decodes it and its
responses encode (tested in tests/protocol); the broker's router intersects this table with the
handlers it has and advertises the result in ApiVersions.

Flexible versions (KIP-482: compact strings and arrays, tagged fields, request header v2,
response header v1) are read from kio's generated schema, never typed by hand.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kio.schema.index import api_key_map, schema_name_map

from odradek.protocol import inter_broker


class ApiKey(enum.IntEnum):
    """Every Kafka API key, by Kafka's name (``ApiKeys`` in the Java client)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


_BY_VALUE: Mapping[int, ApiKey] = MappingProxyType({int(key): key for key in ApiKey})


def api_key_or_none(value: int) -> ApiKey | None:
    """Returns the ``ApiKey`` for ``value``, or ``None`` if Kafka defines no such key."""
    return _BY_VALUE.get(value)


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive range of API versions, as ApiVersions advertises it.

    Raises:
        ValueError: if ``min_version`` is negative or greater than ``max_version``.
    """

    min_version: int
    max_version: int

    def __post_init__(self) -> None:
        if not 0 <= self.min_version <= self.max_version:
            raise ValueError(f"invalid version range {self.min_version}..{self.max_version}")

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.min_version, self.max_version + 1))

    def intersect(self, other: VersionRange) -> VersionRange | None:
        """Returns the versions in both ranges, or ``None`` if they do not overlap."""
        low = max(self.min_version, other.min_version)
        high = min(self.max_version, other.max_version)
        return VersionRange(low, high) if low <= high else None

    def __str__(self) -> str:
        return f"{self.min_version}..{self.max_version}"


#: The versions odradek decodes and answers, per API: what Kafka 4.0 serves (issue 19;
#: version-inferring clients read a broker's age from these), with these choices — Produce
#: v0-v2 and JoinGroup v0-v1 are still served (Kafka 4 dropped them, KIP-896; see below);
#: Fetch goes to Kafka 4.1's v18 and Produce to its v13 (topic ids); OffsetCommit and
#: OffsetFetch to v10 (topic ids) and ListOffsets to v11 (KIP-1023's earliest-pending-upload
#: spec), which Kafka 4.2 serves; InitProducerId v6 (KIP-939's two-phase commit) is not
#: served: no released Kafka advertises it.
IMPLEMENTED_VERSIONS: Mapping[ApiKey, VersionRange] = MappingProxyType(
    {
        # Produce v0-v2 carry message format v0/v1, up-converted to v2 batches on append.
        ApiKey.PRODUCE: VersionRange(0, 13),
        ApiKey.FETCH: VersionRange(4, 18),
        ApiKey.LIST_OFFSETS: VersionRange(1, 11),
        ApiKey.METADATA: VersionRange(0, 13),
        ApiKey.OFFSET_COMMIT: VersionRange(2, 10),
        ApiKey.OFFSET_FETCH: VersionRange(1, 10),
        ApiKey.FIND_COORDINATOR: VersionRange(0, 6),
        ApiKey.JOIN_GROUP: VersionRange(0, 9),
        ApiKey.HEARTBEAT: VersionRange(0, 4),
        ApiKey.LEAVE_GROUP: VersionRange(0, 5),
        ApiKey.SYNC_GROUP: VersionRange(0, 5),
        ApiKey.DESCRIBE_GROUPS: VersionRange(0, 6),
        ApiKey.LIST_GROUPS: VersionRange(0, 5),
        ApiKey.API_VERSIONS: VersionRange(0, 4),
        ApiKey.CREATE_TOPICS: VersionRange(2, 7),
        ApiKey.DELETE_TOPICS: VersionRange(1, 6),
        ApiKey.DELETE_RECORDS: VersionRange(0, 2),
        ApiKey.INIT_PRODUCER_ID: VersionRange(0, 5),
        ApiKey.DESCRIBE_CONFIGS: VersionRange(1, 4),
        ApiKey.CREATE_PARTITIONS: VersionRange(0, 3),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: VersionRange(0, 1),
        ApiKey.ALTER_CONFIGS: VersionRange(0, 2),
        ApiKey.DESCRIBE_CLUSTER: VersionRange(0, 2),
        # Kafka 4 serves v1-v4 (v0 was removed); kio's v5 lacks v5's IsCordoned field.
        ApiKey.DESCRIBE_LOG_DIRS: VersionRange(1, 4),
        # Answered per partition without moving anything (handlers/alter_replica_log_dirs.py).
        ApiKey.ALTER_REPLICA_LOG_DIRS: VersionRange(1, 2),
        ApiKey.DELETE_GROUPS: VersionRange(0, 2),
        ApiKey.OFFSET_DELETE: VersionRange(0, 0),
        # The controller's requests to brokers (protocol/inter_broker.py).
        ApiKey.LEADER_AND_ISR: VersionRange(1, 1),
        ApiKey.STOP_REPLICA: VersionRange(0, 0),
        ApiKey.UPDATE_METADATA: VersionRange(4, 4),
        ApiKey.CONTROLLED_SHUTDOWN: VersionRange(1, 1),
        ApiKey.ELECT_LEADERS: VersionRange(0, 2),
        # KIP-966's paginated describe; Kafka 3.9+ admin clients prefer it to Metadata.
        ApiKey.DESCRIBE_TOPIC_PARTITIONS: VersionRange(0, 0),
        # The leader's ISR changes to the controller (protocol/inter_broker.py).
        ApiKey.ALTER_PARTITION: VersionRange(1, 1),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: VersionRange(0, 1),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: VersionRange(0, 0),
        # Replication (KIP-101/279/320): kio models v2-v4; followers send v3+ with replica_id.
        ApiKey.OFFSET_FOR_LEADER_EPOCH: VersionRange(2, 4),
        # SASL (KIP-152). Handshake v0 is advertised (librdkafka before 2.x requires it in the
        # range) but answered UNSUPPORTED_VERSION: the raw tokens that follow it are not read.
        ApiKey.SASL_HANDSHAKE: VersionRange(0, 1),
        ApiKey.SASL_AUTHENTICATE: VersionRange(0, 2),
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: VersionRange(0, 0),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: VersionRange(0, 0),
        # Transactions (KIP-98, KIP-664; broker/txn): every version kio models.
        ApiKey.ADD_PARTITIONS_TO_TXN: VersionRange(0, 5),
        ApiKey.ADD_OFFSETS_TO_TXN: VersionRange(0, 4),
        ApiKey.END_TXN: VersionRange(0, 5),
        ApiKey.WRITE_TXN_MARKERS: VersionRange(1, 1),
        ApiKey.TXN_OFFSET_COMMIT: VersionRange(0, 5),
        ApiKey.DESCRIBE_PRODUCERS: VersionRange(0, 0),
        ApiKey.DESCRIBE_TRANSACTIONS: VersionRange(0, 0),
        ApiKey.LIST_TRANSACTIONS: VersionRange(0, 1),
        # The ACL APIs at Kafka 4's versions (v0 removed by KIP-896).
        ApiKey.DESCRIBE_ACLS: VersionRange(1, 3),
        ApiKey.CREATE_ACLS: VersionRange(1, 3),
        ApiKey.DELETE_ACLS: VersionRange(1, 3),
        ApiKey.DESCRIBE_CLIENT_QUOTAS: VersionRange(0, 1),
        ApiKey.ALTER_CLIENT_QUOTAS: VersionRange(0, 1),
        # KIP-848 consumer groups (broker/group/consumer_membership.py), as Kafka 4.x serves.
        ApiKey.CONSUMER_GROUP_HEARTBEAT: VersionRange(0, 1),
        ApiKey.CONSUMER_GROUP_DESCRIBE: VersionRange(0, 1),
        # Kafka 4.1's rename of ListClientMetricsResources (v0) with resource types (v1).
        ApiKey.LIST_CONFIG_RESOURCES: VersionRange(0, 1),
    }
)

#: Versions that would be advertised but answered by closing the connection, as Kafka 4 does
#: for Produce v0-v2 (KAFKA-18659). None today: odradek serves Produce v0-v2 as Kafka 3 did
#: (librdkafka < 2.11.1 stops compressing unless Produce v0 is advertised, and an advertised
#: version that closes the connection is worse than either choice).
ADVERTISED_ONLY_VERSIONS: Mapping[ApiKey, VersionRange] = MappingProxyType({})


def is_implemented(api_key: int, api_version: int) -> bool:
    """Whether requests of this key and version are decoded (advertised-only ones are not)."""
    key = api_key_or_none(api_key)
    if key is None:
        return False
    implemented = IMPLEMENTED_VERSIONS.get(key)
    if implemented is None or api_version not in implemented:
        return False
    rejected = ADVERTISED_ONLY_VERSIONS.get(key)
    return rejected is None or api_version not in rejected


def schema_versions(api_key: int) -> VersionRange | None:
    """The versions kio has a schema for, or ``None`` if kio does not model the API."""
    declared = inter_broker.VERSIONS.get(api_key)
    if declared is not None:
        return VersionRange(declared, declared)
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = schema_name_map[name]
    return VersionRange(min(versions), max(versions))


@functools.cache
def is_flexible(api_key: int, api_version: int) -> bool:
    """Whether this version uses the flexible encoding (KIP-482), as kio's schema says.

    Requests and responses of one API version share the flag, as in Kafka's message JSON.

    Raises:
        LookupError: if kio has no schema for this API key and version.
    """
    if api_key == ApiKey.PRODUCE and 0 <= api_version < 3:
        return False  # kio (after Kafka 4) has no schema for these; they predate KIP-482
    known = schema_versions(api_key)
    if known is None or api_version not in known:
        raise LookupError(f"no schema for api key {api_key} version {api_version}")
    return bool(inter_broker.load_request_schema(api_key, api_version).__flexible__)


def flexible_versions(api_key: int) -> VersionRange | None:
    """The flexible versions among those kio models for ``api_key`` (``None``: none are).

    Flexibility, once introduced, holds for every later version of an API.
    """
    known = schema_versions(api_key)
    if known is None:
        return None
    for version in known:
        if is_flexible(api_key, version):
            return VersionRange(version, known.max_version)
    return None

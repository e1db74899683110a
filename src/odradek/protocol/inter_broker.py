"""The controller ↔ broker APIs of ZooKeeper-era Kafka — LeaderAndIsr (4), StopReplica (5),
UpdateMetadata (6), ControlledShutdown (7) — as schemas in kio's form, and the schema lookup
that adds them to kio's.

kio (0.6.5) is generated from Kafka 4's message definitions, which dropped these APIs
with ZooKeeper. odradek's controller sends them over the inter-broker listener, so this module
declares the versions it uses, with Kafka's field names, types and order, as frozen
dataclasses that kio's readers and writers serialise like its own:

- LeaderAndIsr v1: ``controller_id``, ``controller_epoch``, ungrouped partition states
  (topic, partition, controller epoch, leader, leader epoch, ISR, ZooKeeper version, replicas,
  ``is_new``) and the live leaders; the response: an error code and one per partition.
- UpdateMetadata v4: ``controller_id``, ``controller_epoch``, ungrouped partition states (as
  above with ``offline_replicas`` instead of ``is_new``) and the live brokers with their
  endpoints and rack; the response: an error code.
- StopReplica v0: ``controller_id``, ``controller_epoch``, ``delete_partitions`` and the
  partitions; the response: an error code and one per partition.

And the broker → controller API of a clean stop, ControlledShutdown v1: ``broker_id``; the
response: an error code and the partitions the broker still leads.

None of these is flexible (request header v1, response header v0).

And the broker → controller ISR change, AlterPartition v1 (Kafka 3.2's; kio models only v2+,
which name topics by id): ``broker_id``, ``broker_epoch`` and per topic *name* the partitions
with the leader epoch, the new ISR, the leader recovery state and the partition epoch the
leader holds; the response: an error code and per partition an error code with the state the
controller holds (leader, leader epoch, ISR, recovery state, partition epoch). Flexible, as
every AlterPartition version (request header v2, response header v1).

``load_request_schema`` and ``load_response_schema`` are kio's with these added; the codec
and the client codec load every schema through them.
"""

# No ``from __future__ import annotations``: kio reads the field types at run time.

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.index import load_request_schema as _kio_request_schema
from kio.index import load_response_schema as _kio_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.request_header.v2.header import RequestHeader as FlexibleRequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.response_header.v1.header import ResponseHeader as FlexibleResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64
from kio.static.protocol import ResponsePayload

LEADER_AND_ISR = 4
STOP_REPLICA = 5
UPDATE_METADATA = 6
CONTROLLED_SHUTDOWN = 7
ALTER_PARTITION = 56
ALTER_PARTITION_VERSION = 1
CONTROLLED_SHUTDOWN_VERSION = 1
LEADER_AND_ISR_VERSION = 1
STOP_REPLICA_VERSION = 0
UPDATE_METADATA_VERSION = 4


# --- LeaderAndIsr v1 ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LEADER_AND_ISR)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    leader: i32 = field(metadata={"kafka_type": "int32"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    zk_version: i32 = field(metadata={"kafka_type": "int32"})
    replicas: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    is_new: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrLiveLeader:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LEADER_AND_ISR)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    broker_id: i32 = field(metadata={"kafka_type": "int32"})
    host_name: str = field(metadata={"kafka_type": "string"})
    port: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LEADER_AND_ISR)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: i32 = field(metadata={"kafka_type": "int32"})
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    ungrouped_partition_states: tuple[LeaderAndIsrPartitionState, ...]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionError:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LEADER_AND_ISR)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(LEADER_AND_ISR)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition_errors: tuple[LeaderAndIsrPartitionError, ...]


# --- StopReplica v0 ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionV0:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(STOP_REPLICA)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partition_index: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(STOP_REPLICA)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: i32 = field(metadata={"kafka_type": "int32"})
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    delete_partitions: bool = field(metadata={"kafka_type": "bool"})
    ungrouped_partitions: tuple[StopReplicaPartitionV0, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionError:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(STOP_REPLICA)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(STOP_REPLICA)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition_errors: tuple[StopReplicaPartitionError, ...]


# --- UpdateMetadata v4 -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(UPDATE_METADATA)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    leader: i32 = field(metadata={"kafka_type": "int32"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    zk_version: i32 = field(metadata={"kafka_type": "int32"})
    replicas: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    offline_replicas: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(UPDATE_METADATA)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    port: i32 = field(metadata={"kafka_type": "int32"})
    host: str = field(metadata={"kafka_type": "string"})
    listener: str = field(metadata={"kafka_type": "string"})
    security_protocol: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataBroker:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(UPDATE_METADATA)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    id: i32 = field(metadata={"kafka_type": "int32"})
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    rack: str | None = field(metadata={"kafka_type": "string"}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(UPDATE_METADATA)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: i32 = field(metadata={"kafka_type": "int32"})
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    ungrouped_partition_states: tuple[UpdateMetadataPartitionState, ...]
    live_brokers: tuple[UpdateMetadataBroker, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(UPDATE_METADATA)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


# --- ControlledShutdown v1 ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(CONTROLLED_SHUTDOWN)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    broker_id: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RemainingPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(CONTROLLED_SHUTDOWN)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partition_index: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    __api_key__: ClassVar[i16] = i16(CONTROLLED_SHUTDOWN)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    remaining_partitions: tuple[RemainingPartition, ...]


# --- AlterPartition v1 ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequestPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(ALTER_PARTITION_VERSION)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ALTER_PARTITION)
    __header_schema__: ClassVar[type[FlexibleRequestHeader]] = FlexibleRequestHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    new_isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8"}, default=i8(0))
    partition_epoch: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequestTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(ALTER_PARTITION_VERSION)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ALTER_PARTITION)
    __header_schema__: ClassVar[type[FlexibleRequestHeader]] = FlexibleRequestHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[AlterPartitionRequestPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(ALTER_PARTITION_VERSION)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ALTER_PARTITION)
    __header_schema__: ClassVar[type[FlexibleRequestHeader]] = FlexibleRequestHeader
    broker_id: i32 = field(metadata={"kafka_type": "int32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    topics: tuple[AlterPartitionRequestTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponsePartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(ALTER_PARTITION_VERSION)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ALTER_PARTITION)
    __header_schema__: ClassVar[type[FlexibleResponseHeader]] = FlexibleResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    leader_id: i32 = field(metadata={"kafka_type": "int32"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8"}, default=i8(0))
    partition_epoch: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponseTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(ALTER_PARTITION_VERSION)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ALTER_PARTITION)
    __header_schema__: ClassVar[type[FlexibleResponseHeader]] = FlexibleResponseHeader
    topic_name: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[AlterPartitionResponsePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(ALTER_PARTITION_VERSION)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ALTER_PARTITION)
    __header_schema__: ClassVar[type[FlexibleResponseHeader]] = FlexibleResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    topics: tuple[AlterPartitionResponseTopic, ...]


#: (api key, version) → (request schema, response schema).
SCHEMAS: dict[tuple[int, int], tuple[type[Any], type[Any]]] = {
    (LEADER_AND_ISR, LEADER_AND_ISR_VERSION): (LeaderAndIsrRequest, LeaderAndIsrResponse),
    (STOP_REPLICA, STOP_REPLICA_VERSION): (StopReplicaRequest, StopReplicaResponse),
    (UPDATE_METADATA, UPDATE_METADATA_VERSION): (UpdateMetadataRequest, UpdateMetadataResponse),
    (CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION): (
        ControlledShutdownRequest,
        ControlledShutdownResponse,
    ),
    (ALTER_PARTITION, ALTER_PARTITION_VERSION): (AlterPartitionRequest, AlterPartitionResponse),
}

#: api key → the one version declared here.
VERSIONS: dict[int, int] = dict(SCHEMAS.keys())


def load_request_schema(api_key: int, api_version: int) -> Any:
    """The request schema of an API version: these three APIs', else kio's.

    Raises:
        LookupError: (kio's index errors) no schema for this key and version.
    """
    schemas = SCHEMAS.get((api_key, api_version))
    if schemas is not None:
        return schemas[0]
    return _kio_request_schema(api_key, api_version)


def load_response_schema(api_key: int, api_version: int) -> type[ResponsePayload]:
    """The response schema of an API version: these three APIs', else kio's."""
    schemas = SCHEMAS.get((api_key, api_version))
    if schemas is not None:
        response: type[ResponsePayload] = schemas[1]
        return response
    return _kio_response_schema(api_key, api_version)

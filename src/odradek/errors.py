"""The one error tree: Kafka error codes as an IntEnum, and the exceptions that carry them.

Every exception odradek raises on purpose derives from ``OdradekError``. Those that map to a
Kafka error code derive from ``KafkaError`` and carry ``code``; handlers turn them into error
codes in responses, clients turn error codes back into them with ``error_for_code``.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ErrorCode(enum.IntEnum):
    """Kafka protocol error codes, by Kafka's names."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 130

    @property
    def retriable(self) -> bool:
        """Whether Kafka clients retry a request that failed with this code."""
        return self in _RETRIABLE


_RETRIABLE = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.LISTENER_NOT_FOUND,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.THROTTLING_QUOTA_EXCEEDED,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


class OdradekError(Exception):
    """Base of every exception odradek raises on purpose."""


class ConfigError(OdradekError, ValueError):
    """A configuration setting is unknown or has an invalid value; the message names it."""


class KafkaError(OdradekError):
    """An error with a Kafka error code.

    Subclasses fix ``code``; ``KafkaError(code=..., message=...)`` builds one for any code.
    """

    code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", *, code: ErrorCode | None = None) -> None:
        if code is not None:
            self.error_code = code
        else:
            self.error_code = type(self).code
        super().__init__(message or self.error_code.name)

    @property
    def retriable(self) -> bool:
        return self.error_code.retriable


class OffsetOutOfRangeError(KafkaError):
    """The requested offset is outside [log start offset, log end offset]."""

    code = ErrorCode.OFFSET_OUT_OF_RANGE


class CorruptRecordError(KafkaError):
    """A record batch failed its size, magic or CRC32C check (CORRUPT_MESSAGE)."""

    code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(KafkaError):
    """A record batch is well formed but not acceptable (INVALID_RECORD).

    ``record_errors`` names the offending records when only some are (KIP-467): pairs of the
    record's index in its batch and why it was refused; empty when the batch as a whole is.
    """

    code = ErrorCode.INVALID_RECORD

    def __init__(
        self,
        message: str = "",
        *,
        code: ErrorCode | None = None,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> None:
        super().__init__(message, code=code)
        self.record_errors = record_errors


class UnsupportedForMessageFormatError(KafkaError):
    """The input uses message format v0 or v1 (magic 0/1); only v2 record batches are stored."""

    code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class MessageTooLargeError(KafkaError):
    """A record batch is larger than ``message.max.bytes`` (MESSAGE_TOO_LARGE)."""

    code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(KafkaError):
    """The appended data is larger than a whole segment (RECORD_LIST_TOO_LARGE)."""

    code = ErrorCode.RECORD_LIST_TOO_LARGE


class UnsupportedCompressionTypeError(KafkaError):
    """The batch names a compression codec we do not know (UNSUPPORTED_COMPRESSION_TYPE)."""

    code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class InvalidTimestampError(KafkaError):
    """A timestamp is out of the accepted range (INVALID_TIMESTAMP)."""

    code = ErrorCode.INVALID_TIMESTAMP


class KafkaStorageError(KafkaError):
    """The log directory or a log file cannot be used (KAFKA_STORAGE_ERROR)."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


class UnknownTopicOrPartitionError(KafkaError):
    """The topic or partition does not exist here."""

    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class InvalidTopicError(KafkaError):
    """The topic name is not legal (INVALID_TOPIC_EXCEPTION)."""

    code = ErrorCode.INVALID_TOPIC_EXCEPTION


def error_for_code(code: int, message: str = "") -> KafkaError:
    """Returns the most specific exception for a Kafka error code (never for NONE)."""
    error_code = ErrorCode(code) if code in ErrorCode._value2member_map_ else None
    if error_code is None:
        return KafkaError(message or f"unknown error code {code}")
    for cls in _SPECIFIC:
        if cls.code is error_code:
            return cls(message)
    return KafkaError(message, code=error_code)


_SPECIFIC: tuple[type[KafkaError], ...] = (
    OffsetOutOfRangeError,
    CorruptRecordError,
    InvalidRecordError,
    UnsupportedForMessageFormatError,
    MessageTooLargeError,
    RecordBatchTooLargeError,
    UnsupportedCompressionTypeError,
    InvalidTimestampError,
    KafkaStorageError,
    UnknownTopicOrPartitionError,
    InvalidTopicError,
)


# --- Wire protocol (odradek.protocol) ------------------------------------------------------


class ProtocolError(OdradekError):
    """The peer broke the Kafka wire protocol; the broker answers with an error or closes.

    Raised by ``odradek.protocol`` while framing or decoding bytes a peer sent. Never raised for
    a local programming mistake (see ``ConnectionStateError``).
    """


class InvalidFrameError(ProtocolError):
    """A frame's 4-byte size prefix is unusable (negative), so the stream cannot be re-synced.

    ``size`` is the size the prefix announced.
    """

    def __init__(self, message: str, *, size: int) -> None:
        super().__init__(message)
        self.size = size


class FrameTooLargeError(InvalidFrameError):
    """A frame announces more than ``socket.request.max.bytes``; rejected before buffering it."""

    def __init__(self, *, size: int, max_frame_bytes: int) -> None:
        super().__init__(
            f"frame of {size} bytes exceeds socket.request.max.bytes={max_frame_bytes}",
            size=size,
        )
        self.max_frame_bytes = max_frame_bytes


class RequestDecodeError(ProtocolError, KafkaError):
    """A request frame could not be decoded (INVALID_REQUEST); Kafka closes the connection.

    ``api_key``, ``api_version`` and ``correlation_id`` are ``None`` when the frame was too short
    to carry them.
    """

    code = ErrorCode.INVALID_REQUEST

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class UnsupportedVersionError(ProtocolError, KafkaError):
    """The request's API key is unknown or its version is not one we serve (UNSUPPORTED_VERSION).

    ``api_key_known`` tells an unknown API key from an unsupported version of a known one.
    """

    code = ErrorCode.UNSUPPORTED_VERSION

    def __init__(
        self,
        message: str,
        *,
        api_key: int,
        api_version: int,
        correlation_id: int,
        api_key_known: bool,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.api_key_known = api_key_known


class ConnectionStateError(OdradekError, RuntimeError):
    """A protocol connection was used out of order by its owner (a local bug, not the peer's).

    For example a response for a correlation id that is not awaiting one, or a response whose
    API key or version does not match the request.
    """


# --- Topic administration (odradek.controller.topics) --------------------------------------


class TopicAlreadyExistsError(KafkaError):
    """A topic with this name already exists (TOPIC_ALREADY_EXISTS)."""

    code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    """A partition count is not acceptable: below 1, or not above the current count when adding
    partitions (INVALID_PARTITIONS)."""

    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    """A replication factor is below 1 or larger than the number of available brokers
    (INVALID_REPLICATION_FACTOR)."""

    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(KafkaError):
    """A manual replica assignment is malformed: partitions not numbered 0..n-1 (or continuing
    the existing ones), an empty or duplicated replica list, or replica lists of different
    lengths (INVALID_REPLICA_ASSIGNMENT)."""

    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


_SPECIFIC = (
    *_SPECIFIC,
    TopicAlreadyExistsError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidReplicaAssignmentError,
)


# --- Metadata store (odradek.controller.store) ---------------------------------------------


class MetadataStoreError(OdradekError):
    """A metadata store operation failed; subclasses mirror ZooKeeper's error conditions."""


class NoNodeError(MetadataStoreError):
    """The node (or, for ``create``, its parent) does not exist."""


class NodeExistsError(MetadataStoreError):
    """``create`` found a node already at that path."""


class BadVersionError(MetadataStoreError):
    """A conditional write or delete named a version that is not the node's current one."""


class NotEmptyError(MetadataStoreError):
    """A non-recursive ``delete`` of a node that has children."""


class NoChildrenForEphemeralsError(MetadataStoreError):
    """``create`` under an ephemeral node: ephemeral nodes cannot have children."""


class InvalidPathError(MetadataStoreError, ValueError):
    """A path is not absolute, ends with ``/``, or has an empty, ``.`` or ``..`` component."""


class SessionClosedError(MetadataStoreError):
    """The store's session has ended (closed, or expired with ZooKeeper); its ephemeral nodes
    are gone and the store accepts no further operations."""


class StoreConnectionError(MetadataStoreError):
    """The metadata store could not be reached in time (ZooKeeper: no connection within
    ``zookeeper.connection.timeout.ms``, or the connection dropped during the call — the
    outcome of a write is then unknown). The session may still be alive."""


class NotControllerError(KafkaError):
    """This broker is not (or no longer) the controller: a controller write was fenced because
    ``/controller_epoch`` moved on (a newer controller was elected), or a request that only the
    controller serves reached another broker (NOT_CONTROLLER, retriable)."""

    code = ErrorCode.NOT_CONTROLLER


_SPECIFIC = (*_SPECIFIC, NotControllerError)


class CorruptMetadataError(MetadataStoreError):
    """Persisted metadata cannot be read: an unreadable store file or malformed node JSON."""


# --- Clients (odradek.client) --------------------------------------------------------------


class KafkaTimeoutError(KafkaError, TimeoutError):
    """A client-side wait ran out (REQUEST_TIMED_OUT): ``max.block.ms`` for buffer memory or
    metadata in ``send``, ``delivery.timeout.ms`` for a record, the timeout given to a
    future's ``result``, ``flush`` or ``close``. Also a ``TimeoutError``, so code written for
    ``concurrent.futures`` catches it."""

    code = ErrorCode.REQUEST_TIMED_OUT


class SerializationError(OdradekError):
    """A key or value serializer failed; ``__cause__`` is the serializer's own exception."""


class ProducerClosedError(OdradekError):
    """The producer is closed: ``send`` after ``close``, or a record still pending when
    ``close`` gave up waiting (its future fails with this)."""


class RecordNotAppendedError(OdradekError):
    """A record was not written because the broker refused other records of its batch
    (Produce v8+, KIP-467: the answer names the refused records, which fail with their own
    INVALID_RECORD error). This record was not refused itself and may be sent again. No Kafka
    error code: Java's producer fails such records with a plain ``KafkaException``.
    ``__cause__`` is the error the broker answered for the batch."""


# --- Group coordinator (odradek.broker.group) ----------------------------------------------


class CoordinatorRecordError(OdradekError, ValueError):
    """A ``__consumer_offsets`` record key or value cannot be decoded: truncated, trailing
    bytes, a negative length where none is allowed, invalid UTF-8, or a value version this
    coordinator does not read. Loading a partition stops on it: the log is not ours to skip."""


class IllegalGroupStateTransitionError(OdradekError, RuntimeError):
    """The group coordinator tried a state change the classic group protocol does not allow
    (a local bug, never a client's doing)."""

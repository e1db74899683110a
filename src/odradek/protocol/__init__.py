"""Sans-I/O Kafka wire protocol: framing, headers, the codec facade and connection state.

Bytes in, events out; values in, bytes out. Nothing here imports asyncio, socket or
threading, or reads the clock, and this is the only odradek package that imports kio.
"""

from odradek.protocol.api_keys import (
    ADVERTISED_ONLY_VERSIONS,
    IMPLEMENTED_VERSIONS,
    ApiKey,
    VersionRange,
    flexible_versions,
    is_flexible,
    is_implemented,
)
from odradek.protocol.codec import (
    FETCH_RESPONSE_VERSIONS,
    PRODUCE_RESPONSE_VERSIONS,
    AbortedTransaction,
    BatchIndexAndErrorMessage,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponseFrame,
    NodeEndpoint,
    PartitionProduceResponse,
    RecordsSlot,
    Request,
    RequestPayload,
    ResponsePayload,
    SupportedVersions,
    TopicProduceResponse,
    decode_request,
    encode_api_versions_fallback,
    encode_fetch_response,
    encode_produce_response,
    encode_response,
    response_class,
)
from odradek.protocol.connection import (
    ConnectionStatistics,
    Event,
    RequestReceived,
    RequestRejected,
    ServerConnection,
)
from odradek.protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameDecoder
from odradek.protocol.header import (
    RequestHeader,
    parse_request_header,
    request_header_version,
    response_header_version,
)

__all__ = [
    "ADVERTISED_ONLY_VERSIONS",
    "DEFAULT_MAX_FRAME_BYTES",
    "FETCH_RESPONSE_VERSIONS",
    "IMPLEMENTED_VERSIONS",
    "PRODUCE_RESPONSE_VERSIONS",
    "AbortedTransaction",
    "ApiKey",
    "BatchIndexAndErrorMessage",
    "ConnectionStatistics",
    "Event",
    "FetchPartitionData",
    "FetchResponseFrame",
    "FetchableTopicResponse",
    "FrameDecoder",
    "NodeEndpoint",
    "PartitionProduceResponse",
    "RecordsSlot",
    "Request",
    "RequestHeader",
    "RequestPayload",
    "RequestReceived",
    "RequestRejected",
    "ResponsePayload",
    "ServerConnection",
    "SupportedVersions",
    "TopicProduceResponse",
    "VersionRange",
    "decode_request",
    "encode_api_versions_fallback",
    "encode_fetch_response",
    "encode_produce_response",
    "encode_response",
    "flexible_versions",
    "is_flexible",
    "is_implemented",
    "parse_request_header",
    "request_header_version",
    "response_class",
    "response_header_version",
]

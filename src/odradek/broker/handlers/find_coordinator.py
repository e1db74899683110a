"""FindCoordinator: answers COORDINATOR_NOT_AVAILABLE until the group coordinator exists.

Why serve it at all: librdkafka (confluent-kafka, kcat) decides that a broker can take LZ4
batches by FindCoordinator appearing in ApiVersions (LZ4 predates a Produce version that
would say so) and otherwise silently produces uncompressed batches. COORDINATOR_NOT_AVAILABLE
is the retriable answer Kafka gives while no coordinator can serve the key; group and
transactional clients keep retrying, exactly as with a coordinator still loading.
"""

from __future__ import annotations

from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.FIND_COORDINATOR


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "error_message": "the group coordinator is not available on this broker yet",
            "node_id": -1,
            "host": "",
            "port": -1,
        },
    )

"""Golden frames of ListConfigResources (API key 74) at every served version: v0 (Kafka's
ListClientMetricsResources, an empty request) and v1 (KIP-1142's resource types), requests as
the broker decodes them and responses as a client reads them."""

from __future__ import annotations

import pytest

from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey
from odradek.protocol.builder import build_response
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.codec import decode_request, encode_response
from odradek.protocol.header import response_header_version

KEY = ApiKey.LIST_CONFIG_RESOURCES

#: The request for topics (2) and groups (32), by version: v0 has no fields.
REQUEST_FRAMES = {
    0: "004a 0000 00000005 ffff 00"  # api key 74, v0, correlation id 5, null client id, tags
    "00",  # no fields, tags
    1: "004a 0001 00000005 ffff 00"
    "03 02 20"  # resource_types: compact array of 2, int8 2, int8 32
    "00",
}
#: The response naming topic "t", by version: v0 has no resource type (client metrics).
RESPONSE_FRAMES = {
    0: "00000009 00"  # correlation id 9, header tags
    "00000000 0000"  # throttle time 0, error code 0
    "02 0274 00"  # config_resources: 1 — name "t", tags
    "00",
    1: "00000009 00"
    "00000000 0000"
    "02 0274 02 00"  # name "t", resource_type 2, tags
    "00",
}


def test_every_served_version_has_golden_frames() -> None:
    assert set(IMPLEMENTED_VERSIONS[KEY]) == set(REQUEST_FRAMES) == set(RESPONSE_FRAMES)


@pytest.mark.parametrize("version", sorted(REQUEST_FRAMES))
def test_request_frame(version: int) -> None:
    frame = encode_request(KEY, version, 5, None, {"resource_types": [2, 32]})
    assert frame[4:] == bytes.fromhex(REQUEST_FRAMES[version])
    request = decode_request(frame[4:])
    assert (request.api_key, request.api_version, request.correlation_id) == (KEY, version, 5)
    types = getattr(request.body, "resource_types", None)
    assert (None if types is None else [int(t) for t in types]) == (
        None if version == 0 else [2, 32]
    )


@pytest.mark.parametrize("version", sorted(RESPONSE_FRAMES))
def test_response_frame(version: int) -> None:
    response = build_response(
        KEY,
        version,
        {
            "throttle_time": 0,
            "error_code": 0,
            "config_resources": [{"resource_name": "t", "resource_type": 2}],
        },
    )
    frame = encode_response(response_header_version(KEY, version), 9, response)
    assert frame[4:] == bytes.fromhex(RESPONSE_FRAMES[version])
    correlation_id, body = decode_response(KEY, version, frame[4:])
    assert correlation_id == 9
    assert body["error_code"] == 0
    [resource] = body["config_resources"]
    assert resource["resource_name"] == "t"
    if version == 0:  # no type on the wire: a client takes client metrics
        assert "resource_type" not in resource
    else:
        assert int(resource["resource_type"]) == 2

"""FindCoordinator before the group coordinator exists: advertised (librdkafka enables LZ4 only
when it is) and answered with the retriable COORDINATOR_NOT_AVAILABLE for every key type."""

from __future__ import annotations

import pytest

from odradek.errors import ErrorCode
from odradek.protocol import ApiKey

from .conftest import RawClient, schema


def test_advertised_in_api_versions(raw: RawClient) -> None:
    answer = raw.send(
        schema("api_versions", 3).ApiVersionsRequest(
            client_software_name="raw", client_software_version="1"
        )
    )

    ranges = {int(k.api_key): (k.min_version, k.max_version) for k in answer.api_keys}
    assert ranges[ApiKey.FIND_COORDINATOR] == (0, 1)


@pytest.mark.parametrize(("version", "key_type"), [(0, None), (1, 0), (1, 1)])
def test_answers_coordinator_not_available(
    raw: RawClient, version: int, key_type: int | None
) -> None:
    module = schema("find_coordinator", version)
    fields = {"key": "group-1"} if key_type is None else {"key": "group-1", "key_type": key_type}
    answer = raw.send(module.FindCoordinatorRequest(**fields))

    assert int(answer.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (answer.node_id, answer.host, answer.port) == (-1, "", -1)

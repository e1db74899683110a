"""A plain blocking connection for the admission tests: requests as plain field mappings
(``odradek.protocol.client_codec``), one response frame read back per request, and a check
that the broker closed the connection."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request

TIMEOUT_S = 10.0


class Wire:
    """One connection to the broker on 127.0.0.1."""

    def __init__(
        self, port: int, *, client_id: str = "admission-test", timeout_s: float = TIMEOUT_S
    ) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.client_id = client_id
        self.correlation_id = 0
        self.last_response: dict[str, Any] = {}

    def send(self, api_key: int, version: int, fields: dict[str, Any]) -> int:
        """Sends one request; returns its correlation id."""
        self.correlation_id += 1
        self.sock.sendall(
            encode_request(api_key, version, self.correlation_id, self.client_id, fields)
        )
        return self.correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int) -> dict[str, Any]:
        (size,) = struct.unpack(">i", self._read(4))
        answered, body = decode_response(api_key, version, self._read(size))
        assert answered == correlation_id
        return body

    def request(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        return self.receive(api_key, version, self.send(api_key, version, fields))

    def api_versions(self) -> int:
        """The error code of an ApiVersions v0 request (0: the connection is served)."""
        return int(self.request(ApiKey.API_VERSIONS, 0, {})["error_code"])

    def metadata(self, topics: list[str] | None = None) -> dict[str, Any]:
        fields = {"topics": None if topics is None else [{"name": t} for t in topics]}
        fields["allow_auto_topic_creation"] = False
        return self.request(ApiKey.METADATA, 4, fields)

    def create_topics(
        self, partitions: dict[str, int], *, timeout_ms: int = 60_000, version: int = 3
    ) -> dict[str, int]:
        """CreateTopics of ``name → partition count``; returns ``name → error code``."""
        response = self.request(
            ApiKey.CREATE_TOPICS,
            version,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": count,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                    for name, count in partitions.items()
                ],
                "timeout": timeout_ms,
                "validate_only": False,
            },
        )
        self.last_response = response
        return {topic["name"]: int(topic["error_code"]) for topic in response["topics"]}

    def create_partitions(
        self, counts: dict[str, int], *, timeout_ms: int = 60_000, version: int = 1
    ) -> dict[str, int]:
        """CreatePartitions of ``name → new total``; returns ``name → error code``."""
        response = self.request(
            ApiKey.CREATE_PARTITIONS,
            version,
            {
                "topics": [
                    {"name": name, "count": count, "assignments": None}
                    for name, count in counts.items()
                ],
                "timeout": timeout_ms,
                "validate_only": False,
            },
        )
        self.last_response = response
        return {result["name"]: int(result["error_code"]) for result in response["results"]}

    def delete_topics(self, names: list[str], *, timeout_ms: int = 60_000) -> dict[str, int]:
        response = self.request(
            ApiKey.DELETE_TOPICS, 1, {"topic_names": names, "timeout": timeout_ms}
        )
        self.last_response = response
        return {r["name"]: int(r["error_code"]) for r in response["responses"]}

    def partitions_of(self, topic: str) -> list[int] | None:
        """The partitions Metadata lists for ``topic`` (``None``: not listed, or an error)."""
        [described] = self.metadata([topic])["topics"]
        if described["error_code"] != 0:
            return None
        return sorted(p["partition_index"] for p in described["partitions"])

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return data

    def is_closed_by_broker(self) -> bool:
        """Waits (up to the socket timeout) for the broker to close the connection; True if it
        did without sending anything more."""
        try:
            data = self.sock.recv(1)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        assert data == b"", f"the broker sent {data!r} instead of closing"
        return True

    def close(self) -> None:
        self.sock.close()


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    """Polls ``condition`` until it returns something truthy, which it returns; fails after
    ``timeout_s`` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)

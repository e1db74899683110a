"""A minimal blocking Kafka connection for tests: one request at a time over one TCP socket.

Tests use it to send a broker exact requests (a Produce or Fetch of a given version and
fields) without the client's batching and retries in between. It owns a socket,
frames requests with ``protocol.client_codec``, reads each response frame whole and decodes it
to a plain mapping. It learns the broker's API versions once (ApiVersions, retried lower when
the broker answers UNSUPPORTED_VERSION, KIP-511) and picks the highest version both sides
speak for each later request.

Every failure is an ``OdradekError`` whose message reads well on one line:

- cannot connect, the broker closed the connection, a read or write failed:
  ``KafkaError`` NETWORK_EXCEPTION;
- no answer within the timeout: ``KafkaError`` REQUEST_TIMED_OUT;
- the broker does not serve a usable version of an API: ``KafkaError`` UNSUPPORTED_VERSION;
- a response that does not decode, or answers another correlation id: ``ProtocolError``.

Not thread-safe; not pipelined. Use as a context manager, or call ``close``.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Self

from odradek.client.network import parse_bootstrap_servers
from odradek.errors import ErrorCode, KafkaError, ProtocolError, error_for_code
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.framing import DEFAULT_MAX_FRAME_BYTES

__all__ = ["DEFAULT_TIMEOUT_S", "BlockingConnection"]

DEFAULT_TIMEOUT_S: Final = 30.0
#: The ApiVersions versions this helper can send (v3 adds the client software fields).
API_VERSIONS_VERSIONS: Final = VersionRange(0, 3)
CLIENT_SOFTWARE_NAME: Final = "odradek"
_SIZE = struct.Struct(">i")


class BlockingConnection:
    """A connection to the first broker of ``bootstrap_servers`` that accepts one.

    Args:
        bootstrap_servers: ``host:port[,host:port...]``.
        client_id: sent in every request header.
        timeout_s: for connecting and for each response.
        software_version: reported in ApiVersions v3.

    Raises:
        ValueError: ``bootstrap_servers`` is malformed.
        KafkaError: NETWORK_EXCEPTION when no address accepts a connection.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str | None = CLIENT_SOFTWARE_NAME,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        software_version: str = "0",
    ) -> None:
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.software_version = software_version
        self._correlation_id = 0
        self._api_versions: dict[int, VersionRange] | None = None
        failures = []
        for host, port in parse_bootstrap_servers(bootstrap_servers):
            try:
                self._socket = socket.create_connection((host, port), timeout=timeout_s)
            except OSError as error:
                failures.append(f"{host}:{port}: {error.strerror or error}")
                continue
            self.address = f"{host}:{port}"
            break
        else:
            raise KafkaError(
                "cannot connect to " + "; ".join(failures), code=ErrorCode.NETWORK_EXCEPTION
            )
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # ----------------------------------------------------------------- requests

    def request(self, api_key: int, api_version: int, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Sends one request and returns the decoded response body (see ``client_codec``).

        Raises:
            KafkaError: NETWORK_EXCEPTION or REQUEST_TIMED_OUT (see the module docstring).
            ProtocolError: the response does not decode or answers another request.
        """
        self._correlation_id += 1
        correlation_id = self._correlation_id
        frame = encode_request(api_key, api_version, correlation_id, self.client_id, fields)
        self._send(frame)
        payload = self._receive_frame()
        answered, body = decode_response(api_key, api_version, payload)
        if answered != correlation_id:
            raise ProtocolError(
                f"the broker at {self.address} answered correlation id {answered}, "
                f"expected {correlation_id}"
            )
        return body

    def send(self, api_key: int, api_version: int, fields: Mapping[str, Any]) -> None:
        """Sends one request that the broker does not answer (Produce with acks=0).

        The broker handles a connection's requests in order, so the response to a later
        ``request`` tells that this one was handled too; a broker that fails such a request
        closes the connection instead (as Kafka does), which that later ``request`` reports.

        Raises:
            KafkaError: NETWORK_EXCEPTION or REQUEST_TIMED_OUT while sending.
        """
        self._correlation_id += 1
        self._send(
            encode_request(api_key, api_version, self._correlation_id, self.client_id, fields)
        )

    def api_versions(self) -> dict[int, VersionRange]:
        """The broker's API version ranges by API key (asked once, then remembered).

        Raises:
            KafkaError: as ``request``, or the broker's ApiVersions error.
        """
        if self._api_versions is not None:
            return self._api_versions
        version = API_VERSIONS_VERSIONS.max_version
        body = self._ask_api_versions(version)
        if body["error_code"] == ErrorCode.UNSUPPORTED_VERSION:
            offered = _ranges(body).get(ApiKey.API_VERSIONS)
            usable = offered.intersect(API_VERSIONS_VERSIONS) if offered else None
            if usable is None:
                raise _unsupported(self.address, ApiKey.API_VERSIONS)
            body = self._ask_api_versions(usable.max_version)
        if body["error_code"]:
            raise error_for_code(body["error_code"], f"ApiVersions failed at {self.address}")
        self._api_versions = _ranges(body)
        return self._api_versions

    def pick_version(self, api_key: ApiKey, usable: VersionRange) -> int:
        """The highest version of ``api_key`` in ``usable`` that the broker serves.

        Raises:
            KafkaError: UNSUPPORTED_VERSION when there is none; as ``api_versions``.
        """
        offered = self.api_versions().get(api_key)
        common = offered.intersect(usable) if offered is not None else None
        if common is None:
            raise _unsupported(self.address, api_key, offered)
        return common.max_version

    def _ask_api_versions(self, version: int) -> dict[str, Any]:
        return self.request(
            ApiKey.API_VERSIONS,
            version,
            {
                "client_software_name": CLIENT_SOFTWARE_NAME,
                "client_software_version": self.software_version,
            },
        )

    # ----------------------------------------------------------------- bytes

    def _send(self, data: bytes) -> None:
        try:
            self._socket.sendall(data)
        except TimeoutError:
            raise self._timed_out() from None
        except OSError as error:
            raise self._network_error(f"cannot send: {error.strerror or error}") from None

    def _receive_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._receive_exactly(_SIZE.size))
        if not 0 <= size <= DEFAULT_MAX_FRAME_BYTES:
            raise ProtocolError(f"the broker at {self.address} sent a frame of {size} bytes")
        return self._receive_exactly(size)

    def _receive_exactly(self, size: int) -> bytes:
        chunks = []
        remaining = size
        while remaining:
            try:
                chunk = self._socket.recv(min(remaining, 1 << 20))
            except TimeoutError:
                raise self._timed_out() from None
            except OSError as error:
                raise self._network_error(f"cannot receive: {error.strerror or error}") from None
            if not chunk:
                raise self._network_error("the broker closed the connection")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _timed_out(self) -> KafkaError:
        return KafkaError(
            f"no response from {self.address} within {self.timeout_s:g} s",
            code=ErrorCode.REQUEST_TIMED_OUT,
        )

    def _network_error(self, what: str) -> KafkaError:
        return KafkaError(f"{self.address}: {what}", code=ErrorCode.NETWORK_EXCEPTION)

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _ranges(body: Mapping[str, Any]) -> dict[int, VersionRange]:
    ranges = {}
    for entry in body.get("api_keys") or ():
        low, high = int(entry["min_version"]), int(entry["max_version"])
        if 0 <= low <= high:
            ranges[int(entry["api_key"])] = VersionRange(low, high)
    return ranges


def _unsupported(address: str, api_key: ApiKey, offered: VersionRange | None = None) -> KafkaError:
    served = f"it serves versions {offered}" if offered is not None else "it does not serve it"
    return KafkaError(
        f"the broker at {address} has no version of {_api_name(api_key)} this tool speaks "
        f"({served})",
        code=ErrorCode.UNSUPPORTED_VERSION,
    )


def _api_name(api_key: ApiKey) -> str:
    return "".join(word.capitalize() for word in api_key.name.split("_"))

"""``AdminRequests``: how the admin client's calls reach the cluster.

It owns the admin client's ``NetworkClient``, its cluster ``Metadata`` and the lock that
serialises calls (one call at a time, driven on the calling thread), and the rules every call
keeps: a deadline per call (``timeout_ms``, default ``default.api.timeout.ms``) that covers
its retries; where a request may go (``controller``, ``any_node``: the least loaded broker);
and ``call``, which sends one request and retries what may pass — a network failure, a
timeout, NOT_CONTROLLER — after ``retry.backoff.ms`` until the deadline, then raises the last
``KafkaError`` (REQUEST_TIMED_OUT, NETWORK_EXCEPTION). The parts of ``AdminClient``
(``admin_topics``, ``admin_records``, ``admin_groups``) each hold the one ``AdminRequests`` of
their client and call through it under its ``lock``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from odradek._clock import Clock
from odradek.client.admin_wire import timed_out
from odradek.client.closeable import Closeable
from odradek.client.cluster import Cluster, Metadata, MetadataUpdater
from odradek.client.config import ClientConfig
from odradek.client.connection import LOGIN_ERRORS
from odradek.client.network import NetworkClient
from odradek.errors import ErrorCode, KafkaError, KafkaTimeoutError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["AdminRequests"]

#: Codes that mean "ask again elsewhere or later" for a whole request (controller moved).
RETRY_REQUEST_CODES: Final = frozenset({ErrorCode.NOT_CONTROLLER})


class AdminRequests(Closeable):
    """The request loop, deadlines, routing and lock of one ``AdminClient`` (see the module
    docstring). ``lock`` must be held around ``call`` and the metadata changes of a call.

    With ``bootstrap_fail_fast``, a call made before metadata has named any broker fails at
    the first failed attempt to get it (NETWORK_EXCEPTION, "cannot connect to the bootstrap
    servers: ...") instead of retrying until its deadline: for command-line tools, where a
    wrong address should be said at once. Kafka's admin client waits, as this one does by
    default.
    """

    def __init__(self, config: ClientConfig, clock: Clock, *, bootstrap_fail_fast: bool) -> None:
        self.config = config
        self._bootstrap_fail_fast = bootstrap_fail_fast
        self._clock = clock
        self._default_timeout_ms = config.get_int("default.api.timeout.ms")
        self._retry_backoff_ms = config.get_int("retry.backoff.ms")
        self.network = NetworkClient(config, clock=clock)
        self.metadata = Metadata.from_config(config, allow_auto_topic_creation=False)
        self._updater = MetadataUpdater(self.network, self.metadata)
        self.lock = threading.RLock()

    def close(self) -> None:
        """Closes the connections; later calls fail. Idempotent."""
        with self.lock:
            self.metadata.close()
            self.network.close()

    def deadline(self, timeout_ms: int | None) -> int:
        timeout = self._default_timeout_ms if timeout_ms is None else timeout_ms
        return self._clock.monotonic_ms() + timeout

    def remaining(self, deadline: int) -> int:
        return max(0, deadline - self._clock.monotonic_ms())

    def cluster(self, deadline: int) -> Cluster:
        """The cluster as last known; the first time, waits for metadata (see the class
        docstring for ``bootstrap_fail_fast``)."""
        cluster = self.metadata.cluster
        if cluster.brokers:
            return cluster
        if not self._bootstrap_fail_fast:
            return self.refresh(deadline)
        version = self.metadata.request_update()
        while self.metadata.version <= version:
            error = self.metadata.last_error
            if error is not None:
                # A refused login keeps its code: the caller tells it from an absent broker.
                code = ErrorCode.NETWORK_EXCEPTION
                if isinstance(error, KafkaError) and error.error_code in LOGIN_ERRORS:
                    code = error.error_code
                raise KafkaError(f"cannot connect to the bootstrap servers: {error}", code=code)
            remaining = self.remaining(deadline)
            if remaining <= 0:
                raise KafkaTimeoutError("timed out waiting for cluster metadata")
            self.network.poll(remaining)
        return self.metadata.cluster

    def refresh(self, deadline: int) -> Cluster:
        try:
            return self._updater.update_now(self.remaining(deadline))
        except KafkaTimeoutError:
            raise KafkaTimeoutError("timed out waiting for cluster metadata") from None

    def controller(self) -> int | None:
        cluster = self.metadata.cluster
        if cluster.controller_id in cluster.brokers:
            return cluster.controller_id
        return None

    def any_node(self) -> int | None:
        return self.network.least_loaded_node()

    def serves(self, node: int, api_key: int, deadline: int) -> bool:
        """Whether ``node`` serves ``api_key`` at all (connects first, within the deadline)."""
        while not self.network.is_connected(node):
            if self.remaining(deadline) <= 0 or self.network.ready(node):
                break
            if self.network.is_blacked_out(node):
                return True  # let the call's retry loop report the failure
            self.network.poll(min(50, self.remaining(deadline)))
        return self.network.api_version(node, api_key, VersionRange(0, 100)) is not None

    def call(
        self,
        choose_node: Callable[[], int | None],
        api_key: int,
        versions: VersionRange,
        fields: Mapping[str, Any] | Callable[[int], Mapping[str, Any]],
        deadline: int,
        *,
        retry_items: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Sends one request and returns its body, retrying failures that may pass.

        Raises:
            KafkaError: the last failure once the deadline passed, or a non-retriable one.
        """
        if self.network.closed:
            raise KafkaError("the admin client is closed", code=ErrorCode.NETWORK_EXCEPTION)
        last_error: KafkaError | None = None
        while True:
            remaining = self.remaining(deadline)
            if remaining <= 0:
                raise timed_out(api_key, last_error)
            try:
                self.cluster(deadline)
            except KafkaTimeoutError as error:
                raise timed_out(api_key, last_error or error) from None
            node = choose_node()
            if node is None:
                # No controller known, or every broker in backoff: refresh, then ask again.
                self.metadata.request_update()
                self.network.poll(min(self._retry_backoff_ms, remaining))
                continue
            future = self.network.send(
                node, api_key, fields, versions=versions, timeout_ms=remaining
            )
            self.network.wait([future], deadline)
            if not future.done():
                raise timed_out(api_key, last_error)
            failure = future.exception()
            if failure is None:
                body = future.result()
                if retry_items is None or not retry_items(body):
                    return body
                last_error = KafkaError(
                    f"{ApiKey(api_key).name}: not the controller", code=ErrorCode.NOT_CONTROLLER
                )
            elif isinstance(failure, KafkaError) and failure.retriable:
                last_error = failure
            else:
                raise failure
            self.metadata.request_update()
            self.pause(deadline)

    def pause(self, deadline: int) -> None:
        wait_until = min(deadline, self._clock.monotonic_ms() + self._retry_backoff_ms)
        while (remaining := wait_until - self._clock.monotonic_ms()) > 0:
            self.network.poll(remaining)

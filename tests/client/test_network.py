"""``client.network`` / ``client.connection`` against live embedded brokers: pipelining with
responses matched to requests, version negotiation, request timeouts, acks=0, reconnect after a
broker restart, exponential reconnect backoff, wakeup from another thread, clean close."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek._clock import MockClock
from odradek.client.backoff import backoff_ms
from odradek.client.config import ClientConfig
from odradek.client.connection import ConnectionState, RequestFuture
from odradek.client.network import NetworkClient
from odradek.errors import ConfigError, ErrorCode, KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.protocol.builder import build_response
from odradek.protocol.connection import RequestRejected, ServerConnection
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

METADATA = VersionRange(1, 12)
DEADLINE_S = 10.0


def client_for(bootstrap: str, **settings: object) -> NetworkClient:
    return NetworkClient(ClientConfig({"bootstrap.servers": bootstrap}, **settings))


@pytest.fixture
def network(broker: Broker) -> Iterator[NetworkClient]:
    client = client_for(broker.bootstrap_servers)
    yield client
    client.close()


def wait_ready(client: NetworkClient, node_id: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not client.ready(node_id):
        assert time.monotonic() < deadline, "the node did not become ready"
        client.poll(50)


def wait_all(client: NetworkClient, futures: list[RequestFuture]) -> None:
    assert client.wait(futures, client.clock.monotonic_ms() + int(DEADLINE_S * 1000))


def metadata_for(topic: str, *, create: bool = False) -> dict[str, object]:
    return {
        "topics": [{"name": topic, "topic_id": None}],
        "allow_auto_topic_creation": create,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def test_bootstrap_servers_required() -> None:
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        NetworkClient(ClientConfig())
    with pytest.raises(ConfigError, match=r"bootstrap\.servers.*nohost"):
        NetworkClient(ClientConfig(bootstrap_servers="nohost"))


def test_pipelined_requests_on_one_connection_are_matched(network: NetworkClient) -> None:
    wait_ready(network, -1)
    topics = [f"t{i}" for i in range(40)]
    futures = [
        network.send(-1, ApiKey.METADATA, metadata_for(topic), versions=METADATA)
        for topic in topics
    ]
    # Up to max.in.flight.requests.per.connection (5) are on the wire at once; the rest wait.
    assert network.statistics()[-1].in_flight == 5
    assert network.statistics()[-1].unsent == 35
    wait_all(network, futures)
    for topic, future in zip(topics, futures, strict=True):
        [entry] = future.result()["topics"]
        assert entry["name"] == topic
        assert entry["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    correlation_ids = [future.correlation_id for future in futures]
    assert correlation_ids == sorted(set(correlation_ids))
    stats = network.statistics()[-1]
    assert stats.connects == 1
    assert stats.responses_received == stats.requests_sent == 41  # + ApiVersions


def test_many_in_flight_when_allowed(broker: Broker) -> None:
    client = client_for(broker.bootstrap_servers, max_in_flight_requests_per_connection=100)
    try:
        wait_ready(client, -1)
        futures = [
            client.send(-1, ApiKey.METADATA, metadata_for(f"x{i}"), versions=METADATA)
            for i in range(100)
        ]
        assert client.statistics()[-1].in_flight == 100
        wait_all(client, futures)
        assert [f.result()["topics"][0]["name"] for f in futures] == [f"x{i}" for i in range(100)]
    finally:
        client.close()


def test_mixed_apis_are_matched_and_versions_negotiated(network: NetworkClient) -> None:
    metadata = network.send(-1, ApiKey.METADATA, metadata_for("m"), versions=METADATA)
    versions = network.send(
        -1,
        ApiKey.API_VERSIONS,
        {"client_software_name": "t", "client_software_version": "1"},
        versions=VersionRange(0, 3),
    )
    cluster = network.send(
        -1,
        ApiKey.DESCRIBE_CLUSTER,
        {"include_cluster_authorized_operations": False},
        versions=VersionRange(0, 0),
    )
    wait_all(network, [metadata, versions, cluster])
    assert metadata.result()["topics"][0]["name"] == "m"
    assert metadata.api_version == 12  # the client reads 1..12; the broker serves 0..13
    assert any(entry["api_key"] == ApiKey.FETCH for entry in versions.result()["api_keys"])
    assert cluster.result()["brokers"][0]["port"] == network.address_of(-1)[1]  # type: ignore[index]
    assert network.api_version(-1, ApiKey.FETCH, VersionRange(0, 100)) == 18


def test_fields_may_depend_on_the_version(network: NetworkClient) -> None:
    seen: list[int] = []

    def fields(version: int) -> dict[str, object]:
        seen.append(version)
        return metadata_for("v")

    future = network.send(-1, ApiKey.METADATA, fields, versions=VersionRange(2, 3))
    wait_all(network, [future])
    assert seen == [3]
    assert future.api_version == 3


def test_no_common_version_fails_the_request_only(network: NetworkClient) -> None:
    bad = network.send(-1, ApiKey.METADATA, metadata_for("a"), versions=VersionRange(14, 15))
    good = network.send(-1, ApiKey.METADATA, metadata_for("b"), versions=METADATA)
    wait_all(network, [bad, good])
    with pytest.raises(KafkaError) as caught:
        bad.result()
    assert caught.value.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert "Metadata" in str(caught.value)
    assert good.result()["topics"][0]["name"] == "b"


def test_unknown_node_fails_the_future(network: NetworkClient) -> None:
    future = network.send(42, ApiKey.METADATA, metadata_for("a"), versions=METADATA)
    assert isinstance(future.exception(0), KafkaError)


def test_request_timeout_closes_the_connection(broker: Broker) -> None:
    client = client_for(broker.bootstrap_servers, request_timeout_ms=300)
    try:
        topic = "slow"
        create = client.send(
            -1, ApiKey.METADATA, metadata_for(topic, create=True), versions=METADATA
        )
        wait_all(client, [create])
        # A Fetch that waits 5 s on an empty partition, with a 300 ms request timeout.
        fetch = client.send(
            -1, ApiKey.FETCH, fetch_body(topic, max_wait_ms=5_000), versions=VersionRange(4, 11)
        )
        behind = client.send(-1, ApiKey.METADATA, metadata_for(topic), versions=METADATA)
        started = time.monotonic()
        wait_all(client, [fetch, behind])
        assert time.monotonic() - started < 3
        timed_out = fetch.exception()
        assert isinstance(timed_out, KafkaError)
        assert timed_out.error_code == ErrorCode.REQUEST_TIMED_OUT
        lost = behind.exception()
        assert isinstance(lost, KafkaError)
        assert lost.error_code in (ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT)
        # The client reconnects for the next request.
        again = client.send(-1, ApiKey.METADATA, metadata_for(topic), versions=METADATA)
        wait_all(client, [again])
        assert again.result()["topics"][0]["error_code"] == ErrorCode.NONE
        assert client.statistics()[-1].connects == 2
    finally:
        client.close()


def test_per_request_timeout(network: NetworkClient) -> None:
    create = network.send(-1, ApiKey.METADATA, metadata_for("w", create=True), versions=METADATA)
    wait_all(network, [create])
    slow = network.send(
        -1,
        ApiKey.FETCH,
        fetch_body("w", max_wait_ms=1_000),
        versions=VersionRange(4, 11),
        timeout_ms=5_000,
    )
    wait_all(network, [slow])
    assert slow.result()["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def fetch_body(topic: str, *, max_wait_ms: int, offset: int = 0) -> dict[str, object]:
    return {
        "replica_id": -1,
        "max_wait": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
        "forgotten_topics_data": [],
    }


def produce_body(topic: str, acks: int, value: bytes) -> dict[str, object]:
    batch = build_batch([SimpleRecord(1_700_000_000_000, None, value)])
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout": 5_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }


def test_acks_zero_expects_no_response(network: NetworkClient) -> None:
    create = network.send(-1, ApiKey.METADATA, metadata_for("z", create=True), versions=METADATA)
    wait_all(network, [create])
    produce = VersionRange(3, 7)
    fire = [
        network.send(
            -1,
            ApiKey.PRODUCE,
            produce_body("z", 0, b"v%d" % i),
            versions=produce,
            expect_response=False,
        )
        for i in range(10)
    ]
    acked = network.send(-1, ApiKey.PRODUCE, produce_body("z", 1, b"last"), versions=produce)
    wait_all(network, [*fire, acked])
    assert all(future.result() == {} for future in fire)
    [partition] = acked.result()["responses"][0]["partition_responses"]
    assert partition["base_offset"] == 10
    stats = network.statistics()[-1]
    assert stats.requests_sent == stats.responses_received + 10


def test_connection_refused_fails_requests_and_backs_off() -> None:
    port = free_port()
    clock = MockClock()
    client = NetworkClient(
        ClientConfig(
            bootstrap_servers=f"127.0.0.1:{port}",
            reconnect_backoff_ms=100,
            reconnect_backoff_max_ms=1_000,
        ),
        clock=clock,
    )
    try:
        delays = []
        for _attempt in range(6):
            future = client.send(-1, ApiKey.METADATA, metadata_for("a"), versions=METADATA)
            deadline = time.monotonic() + DEADLINE_S
            while not future.done():
                assert time.monotonic() < deadline
                client.poll(50)
            failure = future.exception()
            assert isinstance(failure, KafkaError)
            assert failure.error_code == ErrorCode.NETWORK_EXCEPTION
            assert failure.retriable
            delay = client.connection_delay_ms(-1)
            delays.append(delay)
            assert client.is_blacked_out(-1)
            assert client.least_loaded_node() is None
            # Inside the backoff a new request waits; it is not even tried.
            clock.advance(delay)
        expected = [100, 200, 400, 800, 1000, 1000]
        for delay, nominal in zip(delays, expected, strict=True):
            assert nominal * 0.8 - 1 <= delay <= min(nominal * 1.2, 1000), delays
        assert client.statistics()[-1].failures == 6
    finally:
        client.close()


def test_request_waits_out_the_backoff_then_succeeds(tmp_path: Path) -> None:
    port = free_port()
    client = NetworkClient(
        ClientConfig(
            bootstrap_servers=f"127.0.0.1:{port}",
            reconnect_backoff_ms=200,
            reconnect_backoff_max_ms=200,
        )
    )
    try:
        first = client.send(-1, ApiKey.METADATA, metadata_for("a"), versions=METADATA)
        wait_all(client, [first])
        assert isinstance(first.exception(), KafkaError)
        with Broker(str(tmp_path / "data"), port=port):
            second = client.send(-1, ApiKey.METADATA, metadata_for("a"), versions=METADATA)
            assert client.connection_state(-1) is ConnectionState.DISCONNECTED
            wait_all(client, [second])
            assert second.result()["topics"][0]["name"] == "a"
            client.close()
    finally:
        client.close()


def test_reconnect_after_broker_restart(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    first = Broker(data_dir).start()
    port = first.port
    disconnected: list[int] = []
    client = client_for(first.bootstrap_servers)
    client.add_disconnect_listener(disconnected.append)
    try:
        create = client.send(-1, ApiKey.METADATA, metadata_for("r", create=True), versions=METADATA)
        wait_all(client, [create])
        first.stop()
        # The lost connection is noticed; requests fail with a retriable error.
        lost = client.send(-1, ApiKey.METADATA, metadata_for("r"), versions=METADATA)
        wait_all(client, [lost])
        assert isinstance(lost.exception(), KafkaError)
        assert disconnected
        with Broker(data_dir, port=port):
            deadline = time.monotonic() + DEADLINE_S
            while True:
                future = client.send(-1, ApiKey.METADATA, metadata_for("r"), versions=METADATA)
                wait_all(client, [future])
                if future.exception() is None:
                    break
                assert time.monotonic() < deadline
            [entry] = future.result()["topics"]
            assert entry["error_code"] == ErrorCode.NONE  # the topic survived the restart
            assert client.is_connected(-1)
    finally:
        client.close()
        first.stop()


def test_connection_setup_timeout() -> None:
    # A listener that never accepts still completes TCP handshakes (the backlog), but never
    # answers ApiVersions: the setup (ApiVersions exchange) times out.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        client = client_for(
            f"127.0.0.1:{silent.getsockname()[1]}", api_version_request_timeout_ms=200
        )
        try:
            future = client.send(-1, ApiKey.METADATA, metadata_for("a"), versions=METADATA)
            started = time.monotonic()
            wait_all(client, [future])
            assert time.monotonic() - started < 3
            failure = future.exception()
            assert isinstance(failure, KafkaError)
            assert "timed out" in str(failure)
        finally:
            client.close()


def test_request_timeout_without_version_negotiation() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        client = client_for(f"127.0.0.1:{silent.getsockname()[1]}", api_version_request=False)
        try:
            future = client.send(
                -1, ApiKey.METADATA, metadata_for("a"), versions=METADATA, timeout_ms=200
            )
            wait_all(client, [future])
            failure = future.exception()
            assert isinstance(failure, KafkaError)
            assert failure.error_code == ErrorCode.REQUEST_TIMED_OUT
        finally:
            client.close()


def test_wakeup_from_another_thread(network: NetworkClient) -> None:
    wait_ready(network, -1)
    timer = threading.Timer(0.2, network.wakeup)
    timer.start()
    started = time.monotonic()
    network.poll(10_000)
    timer.join()
    assert time.monotonic() - started < 5


def test_callbacks_run_on_the_polling_thread(network: NetworkClient) -> None:
    threads: list[str] = []
    future = network.send(-1, ApiKey.METADATA, metadata_for("cb"), versions=METADATA)
    future.add_done_callback(lambda _f: threads.append(threading.current_thread().name))
    wait_all(network, [future])
    assert threads == [threading.current_thread().name]


def test_a_callback_may_send(network: NetworkClient) -> None:
    chained: list[RequestFuture] = []

    def again(_future: object) -> None:
        chained.append(network.send(-1, ApiKey.METADATA, metadata_for("b"), versions=METADATA))

    first = network.send(-1, ApiKey.METADATA, metadata_for("a"), versions=METADATA)
    first.add_done_callback(again)
    wait_all(network, [first])
    wait_all(network, chained)
    assert chained[0].result()["topics"][0]["name"] == "b"


def test_close_fails_pending_requests(network: NetworkClient) -> None:
    # Connected first: an embedded broker stopped while accepting a connection leaks the
    # half-made transport (a broker shutdown race, not the client's).
    wait_ready(network, -1)
    futures = [
        network.send(-1, ApiKey.METADATA, metadata_for("c"), versions=METADATA) for _ in range(3)
    ]
    network.close()
    for future in futures:
        assert isinstance(future.exception(0), KafkaError)
    after = network.send(-1, ApiKey.METADATA, metadata_for("c"), versions=METADATA)
    assert isinstance(after.exception(0), KafkaError)
    network.close()  # idempotent


def test_idle_connection_is_closed(broker: Broker) -> None:
    client = client_for(broker.bootstrap_servers, connections_max_idle_ms=100)
    try:
        wait_ready(client, -1)
        deadline = time.monotonic() + DEADLINE_S
        while client.is_connected(-1):
            assert time.monotonic() < deadline
            client.poll(50)
        assert client.connection_delay_ms(-1) == 0
        future = client.send(-1, ApiKey.METADATA, metadata_for("i"), versions=METADATA)
        wait_all(client, [future])
        assert future.exception() is None
    finally:
        client.close()


def test_least_loaded_node_prefers_brokers_once_known(
    network: NetworkClient, broker: Broker
) -> None:
    assert network.least_loaded_node() == -1
    network.update_nodes({0: ("127.0.0.1", broker.port)})
    assert network.least_loaded_node() == 0
    future = network.send(0, ApiKey.METADATA, metadata_for("l"), versions=METADATA)
    wait_all(network, [future])
    assert future.result()["topics"][0]["name"] == "l"
    # A broker that leaves the metadata has its connection closed.
    network.update_nodes({})
    assert not network.is_connected(0)


@pytest.mark.parametrize(
    ("attempts", "nominal"), [(0, 50), (1, 100), (2, 200), (4, 800), (5, 1000), (40, 1000)]
)
def test_backoff_doubles_with_jitter_up_to_the_max(attempts: int, nominal: int) -> None:
    for _ in range(50):
        value = backoff_ms(50, 1000, attempts)
        assert nominal * 0.8 - 1 <= value <= min(nominal * 1.2, 1000)
    assert backoff_ms(50, 1000, attempts, jitter=0) == nominal
    assert backoff_ms(0, 1000, attempts) == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---------------------------------------------------------------------- a scripted broker


class ScriptedBroker:
    """A one-connection broker on a thread, built from the protocol's server state machine,
    serving only ``supported``; ``extra`` bytes are written after each response (to break the
    protocol on purpose)."""

    def __init__(self, supported: dict[ApiKey, VersionRange], extra: bytes = b"") -> None:
        self.supported = supported
        self.extra = extra
        self.versions_asked: list[tuple[int, int]] = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        server: ServerConnection[bytes] = ServerConnection(supported=self.supported)
        with conn:
            while data := conn.recv(65536):
                for event in server.receive_data(data):
                    if isinstance(event, RequestRejected):
                        header_key = getattr(event.error, "api_key", -1)
                        header_version = getattr(event.error, "api_version", -1)
                        self.versions_asked.append((header_key, header_version))
                        if event.close_connection:
                            return
                        continue
                    header = event.header
                    self.versions_asked.append((header.api_key, header.api_version))
                    response = build_response(
                        header.api_key, header.api_version, self._answer(header.api_key)
                    )
                    for part in server.send_response(event, response):
                        assert isinstance(part, bytes)
                        conn.sendall(part + self.extra)
                for part in server.data_to_send():
                    assert isinstance(part, bytes)
                    conn.sendall(part)

    def _answer(self, api_key: int) -> dict[str, object]:
        if api_key == ApiKey.API_VERSIONS:
            return {
                "error_code": 0,
                "throttle_time": 0,
                "api_keys": [
                    {
                        "api_key": int(key),
                        "min_version": r.min_version,
                        "max_version": r.max_version,
                    }
                    for key, r in self.supported.items()
                ],
            }
        return {
            "throttle_time": 0,
            "brokers": [],
            "cluster_id": "x",
            "controller_id": 0,
            "topics": [],
        }

    def close(self) -> None:
        self.listener.close()
        self.thread.join(5)


def test_api_versions_fallback_kip_511() -> None:
    # The broker serves ApiVersions 0..1 only: asked at v3, it answers with a v0 body that
    # carries UNSUPPORTED_VERSION and its ranges; the client asks again at v1.
    fake = ScriptedBroker(
        {ApiKey.API_VERSIONS: VersionRange(0, 1), ApiKey.METADATA: VersionRange(1, 2)}
    )
    client = client_for(fake.bootstrap)
    try:
        future = client.send(-1, ApiKey.METADATA, {"topics": []}, versions=METADATA)
        wait_all(client, [future])
        assert future.result()["cluster_id"] == "x"
        assert future.api_version == 2  # the highest version both sides speak
        assert fake.versions_asked == [
            (ApiKey.API_VERSIONS, 3),
            (ApiKey.API_VERSIONS, 1),
            (ApiKey.METADATA, 2),
        ]
    finally:
        client.close()
        fake.close()


def test_a_response_nobody_asked_for_ends_the_connection() -> None:
    # Once connected, the broker follows each response with a frame for a correlation id
    # nobody used: a protocol violation.
    fake = ScriptedBroker(
        {ApiKey.API_VERSIONS: VersionRange(0, 3), ApiKey.METADATA: VersionRange(1, 4)}
    )
    client = client_for(fake.bootstrap)
    try:
        wait_ready(client, -1)
        fake.extra = b"\x00\x00\x00\x04\x7f\xff\xff\xff"  # a frame for correlation id 2**31-1
        first = client.send(-1, ApiKey.METADATA, {"topics": []}, versions=METADATA)
        second = client.send(-1, ApiKey.METADATA, {"topics": []}, versions=METADATA)
        wait_all(client, [first, second])
        assert first.result()["cluster_id"] == "x"
        failure = second.exception()
        assert isinstance(failure, KafkaError)
        assert failure.error_code == ErrorCode.NETWORK_EXCEPTION
        assert "out of order" in str(failure)
        assert not client.is_connected(-1)
    finally:
        client.close()
        fake.close()

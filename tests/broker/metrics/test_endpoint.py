"""``broker.metrics`` end to end: an embedded broker with ``metrics.port=0`` is scraped over
HTTP while records are produced and consumed; counters move, the request histograms count
the APIs used, and a group's lag in seconds matches the age of its backlog."""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.config import ClientConfig
from odradek.client.consumer import Consumer
from odradek.client.network import NetworkClient
from odradek.client.simple_consumer import SimpleConsumer
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

TIMEOUT_S = 30.0
DASHBOARD = Path(__file__).parents[3] / "docs" / "grafana" / "odradek.json"


@pytest.fixture
def broker() -> Iterator[Broker]:
    config = {"metrics.port": "0", "offsets.topic.num.partitions": "1"}
    with Broker(config=config) as started:
        yield started


@pytest.fixture
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers}, client_id="t")
    yield client
    client.close()


@pytest.fixture
def network(broker: Broker) -> Iterator[NetworkClient]:
    client = NetworkClient(ClientConfig(bootstrap_servers=broker.bootstrap_servers))
    yield client
    client.close()


def url(broker: Broker, path: str) -> str:
    assert broker.app.metrics is not None
    return f"http://127.0.0.1:{broker.app.metrics.port}{path}"


def scrape(broker: Broker) -> dict[str, float]:
    """``/metrics`` as ``{"name{labels}": value}`` (labels as written)."""
    with urllib.request.urlopen(url(broker, "/metrics"), timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def produce(network: NetworkClient, topic: str, records: list[SimpleRecord]) -> None:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 5_000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": build_batch(records)}]}
        ],
    }
    future = network.send(-1, ApiKey.PRODUCE, body, versions=VersionRange(3, 7))
    assert network.wait([future], network.clock.monotonic_ms() + 10_000)
    [result] = future.result()["responses"][0]["partition_responses"]
    assert result["error_code"] == ErrorCode.NONE, result


def fetch(broker: Broker, topic: str, offset: int) -> int:
    """Reads the partition from ``offset`` as a consumer; returns how many records came."""
    consumer = SimpleConsumer(broker.bootstrap_servers)
    try:
        return len(consumer.fetch(topic, 0, offset))
    finally:
        consumer.close()


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def records(count: int, timestamp_ms: int, size: int = 100) -> list[SimpleRecord]:
    return [SimpleRecord(timestamp_ms, b"k", b"v" * size) for _ in range(count)]


def test_counters_move_with_produce_and_consume(
    broker: Broker, admin: AdminClient, network: NetworkClient
) -> None:
    admin.create_topics([NewTopic("orders", 1, 1)]).all()
    before = scrape(broker)
    now = int(time.time() * 1000)
    produce(network, "orders", records(10, now))
    produce(network, "orders", records(5, now))
    after_produce = scrape(broker)
    topic = '{topic="orders"}'
    bytes_in = "kafka_server_brokertopicmetrics_bytesin_total" + topic
    messages_in = "kafka_server_brokertopicmetrics_messagesin_total" + topic
    bytes_out = "kafka_server_brokertopicmetrics_bytesout_total" + topic
    assert after_produce[messages_in] - before.get(messages_in, 0) == 15
    assert after_produce[bytes_in] - before.get(bytes_in, 0) > 15 * 100
    produce_count = 'kafka_network_requestmetrics_totaltime_seconds_count{request="Produce"}'
    assert after_produce[produce_count] - before.get(produce_count, 0) == 2
    assert after_produce['kafka_log_log_logendoffset{partition="0",topic="orders"}'] == 15

    assert fetch(broker, "orders", 0) == 15
    after_fetch = scrape(broker)
    assert (
        after_fetch[bytes_out] - after_produce[bytes_out]
        == after_produce['kafka_log_log_size_bytes{partition="0",topic="orders"}']
    )
    fetch_count = 'kafka_network_requestmetrics_requests_total{request="Fetch"}'
    assert after_fetch[fetch_count] - after_produce.get(fetch_count, 0) == 1
    assert after_fetch["kafka_controller_kafkacontroller_activecontrollercount"] == 1
    assert after_fetch["kafka_server_replicamanager_leadercount"] >= 1
    assert after_fetch["kafka_server_replicamanager_underreplicatedpartitions"] == 0
    assert after_fetch["process_resident_memory_bytes"] > 0
    assert after_fetch["process_open_fds"] > 0


def scrape_timed(broker: Broker, timestamp_ms: int) -> tuple[dict[str, float], tuple[float, float]]:
    """A scrape, and the range the lag in seconds of a record stamped ``timestamp_ms`` can
    have in it: the age of the record at the scrape's start and end (with 10 ms of slack for
    the clocks' granularity) — however slow the machine, the figure lies between."""
    before_ms = time.time() * 1000
    samples = scrape(broker)
    after_ms = time.time() * 1000
    return samples, ((before_ms - timestamp_ms - 10) / 1000, (after_ms - timestamp_ms + 10) / 1000)


def test_lag_in_seconds_matches_the_backlog(
    broker: Broker, admin: AdminClient, network: NetworkClient
) -> None:
    admin.create_topics([NewTopic("events", 1, 1)]).all()
    now = int(time.time() * 1000)
    produce(network, "events", records(4, now - 120_000))  # offsets 0..3, consumed
    produce(network, "events", records(6, now - 30_000))  # offsets 4..9: the backlog
    admin.alter_group_offsets("readers", {TopicPartition("events", 0): 4}).all()
    labels = '{group="readers",partition="0",topic="events"}'
    wait_for(lambda: "kafka_consumergroup_lag" + labels in scrape(broker), "the group's lag")
    samples, (low_s, high_s) = scrape_timed(broker, now - 30_000)
    assert samples["kafka_consumergroup_lag" + labels] == 6
    assert samples["kafka_consumergroup_current_offset" + labels] == 4
    assert low_s <= samples["kafka_consumergroup_lag_seconds" + labels] <= high_s

    # Past the first backlog batch's start: the record's own timestamp is read.
    produce(network, "events", records(2, now - 5_000))  # offsets 10, 11
    admin.alter_group_offsets("readers", {TopicPartition("events", 0): 11}).all()
    samples, (low_s, high_s) = scrape_timed(broker, now - 5_000)
    assert samples["kafka_consumergroup_lag" + labels] == 1
    assert low_s <= samples["kafka_consumergroup_lag_seconds" + labels] <= high_s

    admin.alter_group_offsets("readers", {TopicPartition("events", 0): 12}).all()
    samples = scrape(broker)
    assert samples["kafka_consumergroup_lag" + labels] == 0
    assert samples["kafka_consumergroup_lag_seconds" + labels] == 0
    assert samples['kafka_coordinator_group_groupmetadatamanager_numgroups{state="Empty"}'] == 1

    with urllib.request.urlopen(url(broker, "/groups/readers/lag"), timeout=10) as answer:
        lag = json.loads(answer.read())
    assert lag["partitions"] == [
        {
            "topic": "events",
            "partition": 0,
            "committed_offset": 12,
            "high_watermark": 12,
            "lag": 0,
            "lag_seconds": 0.0,
        }
    ]


def test_bad_paths_get_clear_http_errors(broker: Broker) -> None:
    for path, status in (
        ("/nope", 404),
        ("/groups/unknown/rebalances", 404),
        ("/groups/%ff/rebalances", 400),
    ):
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(url(broker, path), timeout=10)
        assert raised.value.code == status, path
        assert "error" in json.loads(raised.value.read())
        raised.value.close()
    request = urllib.request.Request(url(broker, "/metrics"), data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 405
    raised.value.close()
    assert "kafka_server_replicamanager_partitioncount" in scrape(broker)


def test_every_metric_the_grafana_dashboard_plots_is_exported(
    broker: Broker, admin: AdminClient, network: NetworkClient
) -> None:
    admin.create_topics([NewTopic("t", 1, 1)]).all()
    produce(network, "t", records(1, int(time.time() * 1000)))
    admin.alter_group_offsets("g", {TopicPartition("t", 0): 0}).all()
    exported = {name.partition("{")[0] for name in scrape(broker)}
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {
        name
        for expression in expressions
        for name in re.findall(r"\b((?:kafka|odradek|process|python)_[a-z0-9_]+)\{", expression)
    }
    assert len(used) > 20
    assert sorted(used - exported) == []


def test_a_real_groups_lag_during_consumption(
    broker: Broker, admin: AdminClient, network: NetworkClient
) -> None:
    """A group consumer reads and commits part of a backlog; the scrape's lag is the rest, and
    its age is the first unread record's."""
    admin.create_topics([NewTopic("live", 1, 1)]).all()
    now = int(time.time() * 1000)
    produce(network, "live", records(10, now - 120_000))  # offsets 0..9
    produce(network, "live", records(5, now - 30_000))  # offsets 10..14
    consumer = Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id="live-readers",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        consumer.subscribe(["live"])
        read: list[int] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(read) < 10:
            assert time.monotonic() < deadline, "the group consumer read nothing"
            read += [r.offset for r in consumer.poll(200, max_records=10 - len(read))]
        assert read == list(range(10))
        consumer.commit_sync()
        labels = '{group="live-readers",partition="0",topic="live"}'
        samples = scrape(broker)
        scraped_at = time.time() * 1000
        assert samples["kafka_consumergroup_current_offset" + labels] == 10
        assert samples["kafka_consumergroup_lag" + labels] == 5
        backlog_s = (scraped_at - (now - 30_000)) / 1000
        assert abs(samples["kafka_consumergroup_lag_seconds" + labels] - backlog_s) < 1.0
        assert samples['odradek_group_members{group="live-readers"}'] == 1
        assert samples['odradek_group_rebalances_total{group="live-readers"}'] >= 1
        with urllib.request.urlopen(url(broker, "/groups/live-readers/rebalances")) as answer:
            history = json.loads(answer.read())["rebalances"]
        assert history[0]["cause"] == "member_joined"
        assert history[-1]["generation_id"] is not None
    finally:
        consumer.close()


def test_a_metrics_port_in_use_fails_the_start_naming_the_setting() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = Broker(config={"metrics.port": str(port), "metrics.host": "127.0.0.1"})
        with pytest.raises(OSError, match=f"metrics.port: cannot listen on 127.0.0.1:{port}"):
            broker.start()
        broker.stop()

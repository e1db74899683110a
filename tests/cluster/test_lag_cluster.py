"""Consumer lag in a 3-broker cluster, for partitions the group's coordinator does not lead.

The contract (``broker.metrics.lag``, ``broker.leader_positions``): a group's lag is exported by
its coordinator, for every partition the group committed on — those it leads read locally, the
others asked of their leaders at each scrape — and by no other broker. ``odradek groups
describe`` and the console (``console.lag``) ask the leaders themselves. Here a topic of three
single-replica partitions spreads its leaders over the three brokers, a group commits a
different offset on each, and every path must tell the same lag in offsets, and the age of the
record at the committed offset (stamped an hour ago) as the lag in seconds.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from tests._blocking_connection import BlockingConnection

from odradek._types import TopicPartition
from odradek.cli._broker_http import coordinator_endpoint
from odradek.cli.main import main
from odradek.client import AdminClient, NewTopic
from odradek.client.admin_types import ConfigResource, ConfigResourceType
from odradek.client.simple_consumer import SimpleConsumer
from odradek.console.lag import read_group_lag
from odradek.protocol.api_keys import ApiKey
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster

TOPIC = "lagging"
GROUP = "lag-group"
PARTITIONS = 3
RECORDS = 10
#: The committed offset per partition: behind, further behind, caught up.
COMMITTED = {0: 4, 1: 1, 2: RECORDS}
#: Record i of every partition is stamped AGO_MS - i ms before the test starts.
AGO_MS = 3_600_000
#: Scrapes and the test's clock differ by the time between them, not by more.
SECONDS_SLACK = 30.0


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:12]}"
    settings = {
        "metrics.port": "0",
        "metrics.host": "127.0.0.1",
        "offsets.topic.num.partitions": "1",
        "offsets.topic.replication.factor": "1",
    }
    with Cluster(3, chroot, tmp_path_factory.mktemp("lag"), settings=settings) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


@pytest.fixture(scope="module")
def seeded(cluster: Cluster) -> tuple[dict[int, int], int]:
    """The topic with its records and the group's commits: (leader per partition, when the
    records were stamped from, ms)."""
    stamped = int(time.time() * 1000) - AGO_MS
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).all()
        leaders: dict[int, int] = {}

        def led() -> bool:
            description = admin.describe_topics([TOPIC]).all()[TOPIC]
            leaders.update(
                {
                    p.partition: p.leader
                    for p in description.partitions
                    if p.leader is not None and p.leader >= 0
                }
            )
            return len(leaders) == PARTITIONS

        cluster.wait_until(led, what="a leader for every partition")
        for partition, leader in leaders.items():
            batch = build_batch(
                [SimpleRecord(stamped + i, b"k", b"v%d" % i) for i in range(RECORDS)]
            )
            with BlockingConnection(cluster.brokers[leader].address) as connection:
                answer = connection.request(
                    ApiKey.PRODUCE,
                    7,
                    {
                        "transactional_id": None,
                        "acks": -1,
                        "timeout": 10_000,
                        "topic_data": [
                            {
                                "name": TOPIC,
                                "partition_data": [{"index": partition, "records": batch}],
                            }
                        ],
                    },
                )
            [result] = answer["responses"][0]["partition_responses"]
            assert result["error_code"] == 0, result
        admin.alter_group_offsets(
            GROUP, {TopicPartition(TOPIC, p): offset for p, offset in COMMITTED.items()}
        ).all()
    return leaders, stamped


def _expected_seconds(stamped: int, partition: int) -> float:
    offset = COMMITTED[partition]
    if offset >= RECORDS:
        return 0.0
    return (time.time() * 1000 - (stamped + offset)) / 1000


def _endpoints(cluster: Cluster, admin: AdminClient) -> dict[int, int]:
    """Every broker's metrics port (DescribeConfigs tells the bound one)."""
    ports = {}
    for broker_id in cluster.brokers:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker_id))
        configs = admin.describe_configs([resource]).all()[resource]
        ports[broker_id] = int(configs["metrics.port"].value or "0")
    return ports


def _group_samples(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        if line.startswith("kafka_consumergroup_lag") and f'group="{GROUP}"' in line:
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def _series(name: str, partition: int) -> str:
    return f'{name}{{group="{GROUP}",partition="{partition}",topic="{TOPIC}"}}'


def test_the_coordinator_exports_every_partition(
    cluster: Cluster, seeded: tuple[dict[int, int], int]
) -> None:
    leaders, stamped = seeded
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        coordinator = admin.describe_groups([GROUP])[GROUP].coordinator
        assert coordinator is not None
        _, coordinator_port = coordinator_endpoint(admin, GROUP)
        ports = _endpoints(cluster, admin)
    assert ports[coordinator.node_id] == coordinator_port
    # The point of the test: partitions whose leader is not the coordinator.
    elsewhere = [p for p, leader in leaders.items() if leader != coordinator.node_id]
    assert elsewhere, leaders

    # Lag on partitions led elsewhere comes from a fetch to their leader, bounded by a
    # timeout: a first scrape on a loaded machine may leave those series out until it answers.
    series = {_series("kafka_consumergroup_lag", p) for p in COMMITTED}
    deadline = time.monotonic() + 60
    while not series <= (samples := _group_samples(coordinator_port)).keys():
        assert time.monotonic() < deadline, f"missing {sorted(series - samples.keys())}"
        time.sleep(0.2)
    for partition, offset in COMMITTED.items():
        assert samples[_series("kafka_consumergroup_lag", partition)] == RECORDS - offset
        seconds = samples[_series("kafka_consumergroup_lag_seconds", partition)]
        assert seconds == pytest.approx(_expected_seconds(stamped, partition), abs=SECONDS_SLACK)
        assert seconds == 0.0 or seconds > AGO_MS / 1000 - SECONDS_SLACK
    # One series per (group, partition) in the cluster: no other broker exports the group.
    for broker_id, port in ports.items():
        if broker_id != coordinator.node_id:
            assert _group_samples(port) == {}, broker_id

    with urllib.request.urlopen(
        f"http://127.0.0.1:{coordinator_port}/groups/{GROUP}/lag", timeout=10
    ) as answer:
        document = json.loads(answer.read())
    assert {row["partition"]: row["lag"] for row in document["partitions"]} == {
        p: RECORDS - offset for p, offset in COMMITTED.items()
    }
    assert {
        row["partition"]: row["high_watermark"] for row in document["partitions"]
    } == dict.fromkeys(COMMITTED, RECORDS)


def test_groups_describe_and_the_console_agree(
    cluster: Cluster,
    seeded: tuple[dict[int, int], int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, stamped = seeded
    status = main(
        [
            "groups",
            "describe",
            "--group",
            GROUP,
            "--output",
            "json",
            "--bootstrap-server",
            cluster.bootstrap_servers,
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    [document] = json.loads(captured.out)
    assert {row["partition"]: row["lag"] for row in document["partitions"]} == {
        p: RECORDS - offset for p, offset in COMMITTED.items()
    }

    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        consumer = SimpleConsumer(cluster.bootstrap_servers)
        try:
            lag = read_group_lag(admin, consumer, GROUP, int(time.time() * 1000))
        finally:
            consumer.close()
    by_partition = {row.partition: row for row in lag.partitions}
    assert {p: row.lag for p, row in by_partition.items()} == {
        p: RECORDS - offset for p, offset in COMMITTED.items()
    }
    for partition, row in by_partition.items():
        assert row.lag_ms is not None
        assert row.lag_ms / 1000 == pytest.approx(
            _expected_seconds(stamped, partition), abs=SECONDS_SLACK
        )

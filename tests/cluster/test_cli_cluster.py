"""``AdminClient.elect_leaders``, ``odradek cluster describe`` and ``odradek leader-election``
against one 3-broker cluster on a real ZooKeeper (one cluster for the module; the test that
kills a broker runs last).

A preferred election finds the preferred replica leading already (ELECTION_NOT_NEEDED), or,
while its broker is down, not live (PREFERRED_LEADER_NOT_AVAILABLE), or, once its broker is
back and in the ISR again, electable; an unclean election finds every partition with a live
leader (ELECTION_NOT_NEEDED) once leadership has moved off the killed broker."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.main import main
from odradek.client import AdminClient, NewTopic, TopicPartition
from odradek.client.admin_types import ElectionType
from odradek.errors import ErrorCode
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster

TOPIC = "homing"
PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:12]}"
    # Leadership moves only when a test moves it, not by the controller's own rebalance.
    settings = {"auto.leader.rebalance.enable": "false"}
    with Cluster(3, chroot, tmp_path_factory.mktemp("cluster"), settings=settings) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        with AdminClient({"bootstrap.servers": started.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)]).all()
        yield started


def _assignment(cluster: Cluster) -> dict[int, list[int]]:
    document = json.loads(cluster.store.get(f"/brokers/topics/{TOPIC}")[0])
    return {int(p): replicas for p, replicas in document["partitions"].items()}


def _leaders(cluster: Cluster) -> dict[int, int]:
    path = f"/brokers/topics/{TOPIC}/partitions"
    return {
        int(p): int(json.loads(cluster.store.get(f"{path}/{p}/state")[0])["leader"])
        for p in cluster.store.children(path)
    }


def _codes(
    admin: AdminClient, kind: ElectionType, tps: list[TopicPartition] | None
) -> dict[TopicPartition, int]:
    results = admin.elect_leaders(kind, tps, timeout_ms=30_000)
    errors = results.errors
    return {tp: int(errors[tp].error_code) if tp in errors else 0 for tp in results}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    status = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out.splitlines(), captured.err


def _address(cluster: Cluster) -> str:
    """A broker that is not the controller: the CLI's requests are forwarded."""
    controller = cluster.controller_id()
    return next(b.address for i, b in cluster.brokers.items() if i != controller)


def test_cluster_describe_lists_every_broker_and_the_controller(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _cli(capsys, "cluster", "describe", "--bootstrap-server", _address(cluster))
    assert (status, err) == (0, "")
    assert out[0].startswith("Cluster ID: ")
    assert out[0] != "Cluster ID: none"
    assert out[1] == f"Controller: {cluster.controller_id()}"
    assert out[2:5] == [
        f"Broker: {i}\tEndpoint: {cluster.brokers[i].address}\tRack: none" for i in (0, 1, 2)
    ]
    assert out[5:] == ["UnderReplicatedPartitions: 0", "OfflinePartitions: 0"]


def test_admin_elect_leaders_where_preferred_replicas_lead(cluster: Cluster) -> None:
    assert _leaders(cluster) == {p: r[0] for p, r in _assignment(cluster).items()}
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    unknown = [TopicPartition(TOPIC, PARTITIONS), TopicPartition("no-such-topic", 0)]
    not_needed = int(ErrorCode.ELECTION_NOT_NEEDED)
    with AdminClient({"bootstrap.servers": _address(cluster)}) as admin:
        preferred = _codes(admin, ElectionType.PREFERRED, [*tps, *unknown])
        assert preferred == {
            **dict.fromkeys(tps, not_needed),
            **dict.fromkeys(unknown, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)),
        }
        assert list(preferred) == [*tps, *unknown]  # the order asked in
        assert _codes(admin, ElectionType.UNCLEAN, tps) == dict.fromkeys(tps, not_needed)
        everything = _codes(admin, ElectionType.PREFERRED, None)
        assert set(tps) <= set(everything)
        assert set(everything.values()) == {not_needed}
    assert _leaders(cluster) == {p: r[0] for p, r in _assignment(cluster).items()}


def test_cli_leader_election_where_preferred_replicas_lead(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bootstrap = ("--bootstrap-server", _address(cluster))
    status, out, err = _cli(
        capsys, "leader-election", *bootstrap, "--election-type", "PREFERRED",
        "--topic", TOPIC, "--partition", "1",
    )  # fmt: skip
    assert (status, out, err) == (
        0,
        [f"Valid replica already elected for partitions {TOPIC}-1"],
        "",
    )

    listed = tmp_path / "partitions.json"
    listed.write_text(
        json.dumps({"partitions": [{"topic": TOPIC, "partition": p} for p in (2, 0)]})
    )
    status, out, err = _cli(
        capsys, "leader-election", *bootstrap, "--election-type", "unclean",
        "--path-to-json-file", str(listed),
    )  # fmt: skip
    assert (status, out, err) == (
        0, [f"Valid replica already elected for partitions {TOPIC}-0, {TOPIC}-2"], "",
    )  # fmt: skip

    status, out, err = _cli(
        capsys, "leader-election", *bootstrap, "--election-type", "PREFERRED",
        "--all-topic-partitions",
    )  # fmt: skip
    assert status == 0
    assert err == ""
    assert len(out) == 1
    assert out[0].startswith("Valid replica already elected for partitions ")
    assert {f"{TOPIC}-{p}" for p in range(PARTITIONS)} <= set(
        out[0].split(" partitions ")[1].split(", ")
    )

    status, out, err = _cli(
        capsys, "leader-election", *bootstrap, "--election-type", "PREFERRED",
        "--topic", TOPIC, "--partition", "9",
    )  # fmt: skip
    assert status == 1
    assert len(out) == 1
    assert out[0].startswith(
        f"Error completing leader election (PREFERRED) for partition: {TOPIC}-9: "
        "UNKNOWN_TOPIC_OR_PARTITION"
    )
    assert err == "odradek: 1 replica(s) could not be elected\n"


def _isr(cluster: Cluster) -> dict[int, list[int]]:
    path = f"/brokers/topics/{TOPIC}/partitions"
    return {
        int(p): list(json.loads(cluster.store.get(f"{path}/{p}/state")[0])["isr"])
        for p in cluster.store.children(path)
    }


def test_after_a_preferred_leader_is_killed_and_restarted(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last. While the preferred leader's broker is down its partitions answer
    PREFERRED_LEADER_NOT_AVAILABLE; once it is back in their ISR the election moves them home."""
    controller = cluster.controller_id()
    victim = next(b for b in cluster.brokers if b != controller)
    away = sorted(p for p, replicas in _assignment(cluster).items() if replicas[0] == victim)
    assert away
    cluster.kill(victim)  # kill -9: no controlled shutdown
    cluster.wait_until(
        lambda: all(leader != victim for leader in _leaders(cluster).values()),
        what="leadership to move off the killed broker",
    )
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    survivor = cluster.brokers[controller or 0].address
    with AdminClient({"bootstrap.servers": survivor}) as admin:
        # Every partition has a live leader again: nothing for an unclean election to do.
        not_needed = int(ErrorCode.ELECTION_NOT_NEEDED)
        assert _codes(admin, ElectionType.UNCLEAN, tps) == dict.fromkeys(tps, not_needed)

    # The preferred replica is down: its partitions cannot go home, the others need nothing.
    status, out, err = _cli(
        capsys, "leader-election", "--bootstrap-server", survivor,
        "--election-type", "PREFERRED", "--all-topic-partitions",
    )  # fmt: skip
    home = [p for p in range(PARTITIONS) if p not in away]
    errors = [line for line in out if line.startswith("Error completing")]
    assert status == 1
    assert err == f"odradek: {len(away)} replica(s) could not be elected\n"
    assert [line.split(": ")[1] for line in errors] == [f"{TOPIC}-{p}" for p in away]
    assert all("PREFERRED_LEADER_NOT_AVAILABLE" in line for line in errors)
    already = next(line for line in out if line.startswith("Valid replica already elected"))
    assert {f"{TOPIC}-{p}" for p in home} <= set(already.split(" partitions ")[1].split(", "))
    assert all(leader != victim for leader in _leaders(cluster).values())

    # Back, caught up and in the ISR again: the same election moves its partitions home.
    cluster.restart(victim)
    cluster.wait_until(lambda: victim in cluster.registered(), what="the broker back")
    cluster.wait_until(
        lambda: all(victim in _isr(cluster)[p] for p in away),
        what="the restarted broker back in the ISR of its partitions",
    )
    status, out, err = _cli(
        capsys, "leader-election", "--bootstrap-server", survivor,
        "--election-type", "PREFERRED", "--all-topic-partitions",
    )  # fmt: skip
    assert (status, err) == (0, "")
    elected = next(line for line in out if line.startswith("Successfully completed"))
    assert set(elected.split(" partitions ")[1].split(", ")) == {f"{TOPIC}-{p}" for p in away}
    assert {p: leader for p, leader in _leaders(cluster).items() if p in away} == dict.fromkeys(
        away, victim
    )

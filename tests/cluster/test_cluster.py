"""Several `odradek serve` processes on one real ZooKeeper (odradek.testing.cluster): they
register with Kafka's JSON, share one cluster id, elect one controller, and a new one with a
new epoch when the controller's broker is killed; a duplicate broker id and an unreachable
zookeeper.connect refuse to start with one clear line."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.broker._wire import Wire

from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import free_ports

pytestmark = pytest.mark.cluster

_TIMESTAMP = re.compile(r"\d{13}")


def _run_serve(args: list[str], timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "odradek.cli.main", "serve", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)


def test_three_brokers_register_and_elect_one_controller(
    zookeeper_chroot: str, tmp_path: Path
) -> None:
    with Cluster(3, zookeeper_chroot, tmp_path) as cluster:
        assert cluster.registered() == [0, 1, 2]
        assert len({broker.cluster_id for broker in cluster.brokers.values()}) == 1
        stored_id = cluster.store.get("/cluster/id")[0]
        assert cluster.brokers[0].cluster_id.encode() in stored_id
        for broker in cluster.brokers.values():
            registration = cluster.registration(broker.broker_id)
            assert set(registration) == {
                "version",
                "host",
                "port",
                "endpoints",
                "listener_security_protocol_map",
                "jmx_port",
                "timestamp",
                "features",
            }
            assert registration["version"] == 5
            assert registration["host"] == "127.0.0.1"
            assert registration["port"] == broker.port
            assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"]
            assert registration["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
            assert _TIMESTAMP.fullmatch(registration["timestamp"])
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        assert cluster.controller_id() in (0, 1, 2)
        assert cluster.controller_epoch() == 1
        for path in (
            "/brokers/topics",
            "/config/topics",
            "/config/brokers",
            "/admin/delete_topics",
        ):
            assert cluster.store.exists(path), path


def test_killing_the_controller_elects_another_with_a_new_epoch(
    zookeeper_chroot: str, tmp_path: Path
) -> None:
    with Cluster(3, zookeeper_chroot, tmp_path, settings={"broker.rack": "r1"}) as cluster:
        assert cluster.registration(0)["rack"] == "r1"
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        first = cluster.controller_id()
        assert first is not None
        assert cluster.controller_epoch() == 1
        cluster.kill(first)  # SIGKILL: its session ends by timeout (2 s)
        cluster.wait_until(
            lambda: cluster.controller_id() not in (None, first),
            timeout_s=30,
            what="a new controller",
        )
        assert cluster.controller_epoch() == 2
        cluster.wait_until(lambda: first not in cluster.registered(), what="the registration gone")
        survivors = sorted(set(cluster.brokers) - {first})
        assert cluster.registered() == survivors
        # The killed broker comes back as a plain broker: the controller stays.
        cluster.restart(first)
        assert cluster.registered() == [0, 1, 2]
        assert cluster.controller_id() not in (None, first)
        assert cluster.controller_epoch() == 2


def test_a_clean_stop_hands_the_controller_over_at_once(
    zookeeper_chroot: str, tmp_path: Path
) -> None:
    # A session of 60 s: only a clean stop (which closes the session) can be this quick.
    with Cluster(
        2, zookeeper_chroot, tmp_path, settings={"zookeeper.session.timeout.ms": "60000"}
    ) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        first = cluster.controller_id()
        assert first is not None
        assert cluster.terminate(first) == 0
        cluster.wait_until(
            lambda: cluster.controller_id() not in (None, first),
            timeout_s=20,
            what="the other broker as controller",
        )
        assert cluster.controller_epoch() == 2


def test_a_duplicate_broker_id_refuses_to_start(zookeeper_chroot: str, tmp_path: Path) -> None:
    with Cluster(1, zookeeper_chroot, tmp_path / "cluster") as cluster:
        result = _run_serve(
            [
                "-o",
                "broker.id=0",
                "-o",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "-o",
                f"log.dirs={tmp_path / 'duplicate'}",
                "-o",
                f"zookeeper.connect={zookeeper_chroot}",
                "--log-level",
                "warning",
            ]
        )
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "broker.id 0 is already registered at /brokers/ids/0" in lines[0]
        assert "Traceback" not in result.stderr
        assert result.stdout == ""
        # The live broker keeps its registration.
        assert cluster.registration(0)["port"] == cluster.brokers[0].port
        # Nothing was opened in the refused broker's log directory.
        assert not any((tmp_path / "duplicate").glob("*-*"))


def test_an_unreachable_zookeeper_fails_with_one_line(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    result = _run_serve(
        [
            "-o",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "-o",
            f"log.dirs={tmp_path}",
            "-o",
            f"zookeeper.connect=127.0.0.1:{port}/kafka",
            "-o",
            "zookeeper.connection.timeout.ms=1500",
        ]
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0] == (
        f"odradek: cannot start the broker: cannot connect to ZooKeeper at 127.0.0.1:{port} "
        "(zookeeper.connect) within 1500 ms"
    )
    assert result.stdout == ""
    assert not (tmp_path / "metadata.json").exists()  # never silently standalone


def test_a_broker_paused_past_its_session_rejoins_on_resume(
    zookeeper_chroot: str, tmp_path: Path
) -> None:
    """Zombie fencing: a broker frozen longer than zookeeper.session.timeout.ms loses its
    registration (and the controller role); once it runs again it stops serving on the old
    session and rejoins — a new session, a new registration on the same address — instead of
    serving as if it were still registered, as a Kafka broker re-registers."""
    with Cluster(2, zookeeper_chroot, tmp_path) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        paused = cluster.controller_id()
        assert paused is not None
        before = cluster.registration(paused)
        cluster.kill(paused, signal.SIGSTOP)
        cluster.wait_until(lambda: paused not in cluster.registered(), what="registration gone")
        cluster.wait_until(
            lambda: cluster.controller_id() not in (None, paused), what="a new controller"
        )
        assert cluster.controller_epoch() == 2
        cluster.kill(paused, signal.SIGCONT)
        cluster.wait_until(lambda: paused in cluster.registered(), what="registered again")
        after = cluster.registration(paused)
        assert after["timestamp"] != before["timestamp"]  # a new registration
        assert after["endpoints"] == before["endpoints"]  # on the same address
        assert cluster.brokers[paused].running
        assert cluster.controller_id() != paused  # the role it lost stays lost
        stderr = cluster.brokers[paused].stderr_path.read_text()
        assert f"the ZooKeeper session of broker {paused} expired" in stderr
        assert f"broker {paused} rejoins the cluster" in stderr
        # The stopped broker's objects were thawed; the new one's are frozen once it is up.
        cluster.wait_until(
            lambda: (
                cluster.brokers[paused]
                .stderr_path.read_text()
                .count("frozen out of the garbage collector")
                == 2
            ),
            what="the rejoined broker's objects frozen",
        )
        wire = Wire(cluster.brokers[paused].port, timeout_s=30.0)
        try:
            assert wire.api_versions() == 0  # it serves again
        finally:
            wire.close()

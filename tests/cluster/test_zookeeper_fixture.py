"""odradek.testing.zookeeper: a real standalone node and a 3-node ensemble on loopback start,
serve, survive the loss of a node, and leave no process behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from odradek.testing.zookeeper import ZooKeeperEnsemble, four_letter_word, free_ports

pytestmark = pytest.mark.cluster


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(6)
    assert len(set(ports)) == 6
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_standalone_serves_and_stops(tmp_path: Path) -> None:
    ensemble = ZooKeeperEnsemble(tmp_path, 1).start()
    try:
        node = ensemble.nodes[0]
        assert four_letter_word(node.client_port, "ruok") == "imok"
        assert node.mode() == "standalone"
        assert ensemble.connect_string == f"127.0.0.1:{node.client_port}"
        config = (tmp_path / "zk1" / "zoo.cfg").read_text()
        assert "clientPortAddress=127.0.0.1" in config
        assert "tickTime=500" in config
        # Four-letter words outside the whitelist are refused.
        assert "imok" not in four_letter_word(node.client_port, "stat")
        assert node.process is not None
        pid = node.process.pid
    finally:
        ensemble.stop()
    assert not _alive(pid)
    assert four_letter_word(node.client_port, "ruok") == ""


def test_ensemble_elects_a_leader_and_survives_a_node_kill(tmp_path: Path) -> None:
    with ZooKeeperEnsemble(tmp_path, 3) as ensemble:
        modes = sorted(node.mode() or "none" for node in ensemble.nodes)
        assert modes == ["follower", "follower", "leader"]
        leader = ensemble.leader()
        assert leader is not None
        index = ensemble.nodes.index(leader)
        ensemble.kill(index)
        assert not leader.running
        ensemble.wait_serving()
        new_leader = ensemble.leader()
        assert new_leader is not None
        assert new_leader is not leader
        ensemble.start_node(index)
        assert leader.mode() == "follower"
        pids = [node.process.pid for node in ensemble.nodes if node.process is not None]
        assert len(pids) == 3
    assert not any(_alive(pid) for pid in pids)


def test_a_paused_node_is_stopped_too(tmp_path: Path) -> None:
    ensemble = ZooKeeperEnsemble(tmp_path, 1).start()
    try:
        ensemble.pause(0)
        assert four_letter_word(ensemble.nodes[0].client_port, "ruok", timeout_s=0.5) == ""
        process = ensemble.nodes[0].process
        assert process is not None
    finally:
        ensemble.stop()
    assert not _alive(process.pid)

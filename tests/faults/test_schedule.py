"""Seeded fault choice and the timeline, without a cluster (an unstarted ``FaultCluster``
answers what ``available_faults`` asks)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from odradek.testing.faults.cluster import FaultCluster
from odradek.testing.faults.injectors import FAULT_KINDS, available_faults
from odradek.testing.faults.schedule import NoFaultAvailableError, Timeline, choose_fault


def _kinds(seed: int, cluster: FaultCluster, count: int = 40) -> list[str]:
    rng = random.Random(seed)
    return [choose_fault(rng, cluster).kind for _ in range(count)]


def test_the_same_seed_chooses_the_same_faults(tmp_path: Path) -> None:
    cluster = FaultCluster(tmp_path)
    assert _kinds(7, cluster) == _kinds(7, cluster)
    assert _kinds(7, cluster) != _kinds(8, cluster)


def test_only_available_kinds_are_chosen(tmp_path: Path) -> None:
    cluster = FaultCluster(tmp_path)
    available = available_faults(cluster)
    assert set(available) == set(FAULT_KINDS)
    chosen = set(_kinds(1, cluster, 200))
    assert chosen == {kind for kind, reason in available.items() if reason is None}


def test_kinds_restrict_the_choice(tmp_path: Path) -> None:
    cluster = FaultCluster(tmp_path)
    rng = random.Random(3)
    chosen = {choose_fault(rng, cluster, ["kill-leader", "kill-zookeeper"]).kind for _ in range(50)}
    assert chosen == {"kill-leader", "kill-zookeeper"}


def test_unavailable_or_unknown_kinds_are_refused(tmp_path: Path) -> None:
    one_zookeeper = FaultCluster(tmp_path, zookeepers=1)
    assert available_faults(one_zookeeper)["kill-zookeeper"] is not None
    with pytest.raises(NoFaultAvailableError, match="kill-zookeeper: needs"):
        choose_fault(random.Random(0), one_zookeeper, ["kill-zookeeper"])
    with pytest.raises(ValueError, match="unknown fault kinds: no-such-fault"):
        choose_fault(random.Random(0), one_zookeeper, ["no-such-fault"])


@dataclass
class _Recorded:
    kind: str = "kill-leader"
    calls: list[str] = field(default_factory=list)

    def apply(self, cluster: FaultCluster) -> str:
        self.calls.append("apply")
        return "broker 2"

    def heal(self, cluster: FaultCluster) -> None:
        self.calls.append("heal")


def test_timeline_records_apply_and_heal_with_times(tmp_path: Path) -> None:
    now = [100.0]
    timeline = Timeline(clock=lambda: now[0])
    fault = _Recorded()
    cluster = FaultCluster(tmp_path)
    now[0] = 101.5
    timeline.apply(fault, cluster)
    now[0] = 104.0
    timeline.heal(fault, cluster)
    assert fault.calls == ["apply", "heal"]
    assert [(e.at_s, e.kind, e.target, e.action) for e in timeline.events] == [
        (1.5, "kill-leader", "broker 2", "apply"),
        (4.0, "kill-leader", "broker 2", "heal"),
    ]
    assert timeline.render().splitlines()[1].split() == [
        "4.000s",
        "heal",
        "kill-leader",
        "broker",
        "2",
    ]

"""The CI slice of the fault suite: a seeded ``run_chaos`` (a few minutes) whose report is
clean — no acknowledged record lost, no duplicate under idempotence, acknowledged order
kept, replicas identical, committed offsets never backwards, transactions whole and once
under read_committed and aborted ones invisible — with every fault applied and healed;
plus the pieces of the runner that need no cluster (fault windows from a timeline, the
replay command, the table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.testing.faults.checker import Lost, Report, Unavailability
from odradek.testing.faults.history import FaultWindow
from odradek.testing.faults.runner import (
    ChaosOptions,
    ChaosResult,
    fault_windows,
    render_result,
    run_chaos,
)
from odradek.testing.faults.schedule import FaultEvent

#: Fixed: the slice replays the same fault schedule on every run.
SEED = 15
FAULTS = 6


@pytest.mark.faults
@pytest.mark.cluster
@pytest.mark.slow
def test_a_seeded_slice_of_faults_loses_nothing(tmp_path: Path) -> None:
    lines: list[str] = []
    options = ChaosOptions(tmp_path / "run", SEED, FAULTS, hold_s=(1.0, 4.0))
    result = run_chaos(options, lines.append)
    text = render_result(result)
    assert result.exit_status == 0, text
    assert result.report.clean, text
    assert result.problems == (), text
    assert sum(result.faults_by_kind.values()) == FAULTS
    assert [e.action for e in result.timeline] == ["apply", "heal"] * FAULTS
    assert result.report.acknowledged > 1_000
    assert result.report.consumed > 0
    assert result.report.commits > 0
    assert set(result.report.unavailability) == set(result.faults_by_kind)
    assert sum(line.startswith("[") for line in lines) == FAULTS  # one progress line a fault
    assert (tmp_path / "run" / "history.jsonl").stat().st_size > 0
    txns = result.report.transactions
    assert txns.committed > 0, text
    assert txns.aborted > 0, text  # one in five is aborted on purpose
    assert txns.records_visible > 0, text


def test_fault_windows_pair_each_apply_with_its_heal() -> None:
    events = [
        FaultEvent(1.0, "kill-leader", "broker 1", "apply"),
        FaultEvent(2.0, "kill-zookeeper", "zookeeper 0", "apply"),
        FaultEvent(3.0, "kill-leader", "broker 1", "heal"),
        FaultEvent(4.0, "kill-zookeeper", "zookeeper 0", "heal"),
        FaultEvent(5.0, "pause-past-session", "broker 2", "apply"),
    ]
    assert fault_windows(events) == [
        FaultWindow("kill-leader", "broker 1", 1.0, 3.0),
        FaultWindow("kill-zookeeper", "zookeeper 0", 2.0, 4.0),
        FaultWindow("pause-past-session", "broker 2", 5.0, 5.0),
    ]


def _result(report: Report, problems: tuple[str, ...] = ()) -> ChaosResult:
    options = ChaosOptions(Path("/nonexistent"), 7, 2, hold_s=(1.5, 3.0), kinds=("kill-leader",))
    timeline = (
        FaultEvent(1.0, "kill-leader", "broker 1", "apply"),
        FaultEvent(2.5, "kill-leader", "broker 1", "heal"),
    )
    return ChaosResult(options, "loopback", timeline, report, problems, {"kill-leader": 2})


def test_a_clean_result_exits_0_and_prints_the_table() -> None:
    windows = {"kill-leader": Unavailability("kill-leader", (1.25, 4.5))}
    result = _result(Report(10, 10, 0, 9, 3, unavailability=windows))
    text = render_result(result)
    assert result.exit_status == 0
    assert "kill-leader                        2           1.25           4.50" in text
    assert "chaos: clean" in text
    assert "scripts/chaos --seed 7 --faults 2 --brokers 3 --hold-s 1.5,3 --kinds kill-leader" in (
        text
    )


def test_a_violation_exits_1_and_says_how_to_replay() -> None:
    result = _result(Report(10, 10, 0, 9, 3, lost=(Lost(b"p0-3", 0, 3, ()),)))
    text = render_result(result)
    assert result.exit_status == 1
    assert "lost acknowledged records                            1" in text
    assert "Lost(value=b'p0-3'" in text
    assert text.endswith("chaos: FAILED — replay with: " + result.options.replay_command())


def test_a_problem_without_violations_still_fails() -> None:
    result = _result(Report(10, 10, 0, 9, 3), ("no acknowledgements after the cluster healed",))
    assert result.exit_status == 1
    assert "problem: no acknowledgements after the cluster healed" in render_result(result)

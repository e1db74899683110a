"""The long protocol fuzz run's verdict (``fuzz_broker.failures``, ``scripts/fuzz-broker``'s
exit status): every kind of failure counts, resident-memory growth past the bound included."""

from __future__ import annotations

import pytest

from odradek.testing import fuzz_broker
from odradek.testing.fuzz_broker import MAX_RSS_GROWTH_BYTES, BrokerFigures, failures
from odradek.testing.protocol_fuzz import FuzzReport

MIB = 1 << 20


def _clean() -> tuple[FuzzReport, BrokerFigures]:
    return FuzzReport(frames=10, probes=3), BrokerFigures(
        exit_code=0, rss_start_bytes=100 * MIB, rss_end_bytes=100 * MIB, rss_max_bytes=130 * MIB
    )


def test_a_clean_run_passes() -> None:
    assert failures(*_clean()) == []


def test_the_default_bound_is_20_mib() -> None:
    assert MAX_RSS_GROWTH_BYTES == 20 * MIB


@pytest.mark.parametrize(
    ("growth", "fails"),
    [(0, False), (MAX_RSS_GROWTH_BYTES, False), (MAX_RSS_GROWTH_BYTES + 1, True), (64 * MIB, True)],
)
def test_rss_growth_past_the_bound_fails_the_run(growth: int, fails: bool) -> None:
    report, figures = _clean()
    figures.rss_end_bytes = figures.rss_start_bytes + growth

    reasons = failures(report, figures)

    assert bool(reasons) is fails
    if fails:
        assert reasons == [f"RSS grew {growth / MIB:.1f} MiB (more than 20 MiB)"]


def test_the_bound_is_the_callers() -> None:
    report, figures = _clean()
    figures.rss_end_bytes = figures.rss_start_bytes + 30 * MIB

    assert failures(report, figures, max_rss_growth_bytes=32 * MIB) == []
    assert failures(report, figures, max_rss_growth_bytes=16 * MIB) != []


def test_every_other_kind_of_failure_counts() -> None:
    report, figures = _clean()
    figures.exit_code = 1
    report.hangs = 2
    figures.tracebacks = 3
    figures.error_lines = ["x ERROR y: z"]
    report.order_violations = ["a"]
    report.lost_records = ["b"]

    assert failures(report, figures) == [
        "the broker crashed (exit code 1)",
        "2 probes hung",
        "3 tracebacks",
        "1 ERROR lines",
        "1 answers out of order",
        "1 acknowledged records lost",
    ]


@pytest.mark.parametrize(("growth", "status"), [(5 * MIB, 0), (21 * MIB, 1)])
def test_the_long_run_exits_non_zero_on_rss_growth(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], growth: int, status: int
) -> None:
    report, figures = _clean()
    figures.rss_end_bytes = figures.rss_start_bytes + growth
    monkeypatch.setattr(fuzz_broker, "fuzz_broker", lambda run: (report, figures))

    assert fuzz_broker.main(["--frames", "10"]) == status
    assert ("FAILED: RSS grew" in capsys.readouterr().out) is bool(status)


def test_what_the_warm_up_finds_counts_as_the_runs() -> None:
    report, figures = _clean()
    warmup = FuzzReport(
        frames=5, probes=2, hangs=1, lost_records=["p0@3"], mutations={"fault": 4}, elapsed_s=1.5
    )
    report.mutations = {"fault": 1, "none": 2}

    fuzz_broker._fold(report, warmup)

    assert (report.frames, report.probes, report.hangs) == (15, 5, 1)
    assert report.lost_records == ["p0@3"]
    assert report.mutations == {"fault": 5, "none": 2}
    assert failures(report, figures) == ["1 probes hung", "1 acknowledged records lost"]

"""A short seeded slice of the protocol fuzzer against a real broker (``odradek serve``).

Every advertised API and version is sent valid, with schema-aware faults (nulls where the
schema says non-nullable, huge and negative lengths and counts), bit flips, inserted and
deleted bytes, truncation, wrong versions and keys, duplicated frames and reused
correlation ids, pipelined and half-sent on dropped connections. The broker must not crash
or hang (a Metadata probe on its own connection answers within its deadline throughout),
must keep its memory bounded, must log no ERROR and no traceback (a malformed request never
reaches a handler), must answer pipelined requests in order, and must keep every record it
acknowledged. ``scripts/fuzz-broker`` runs the same fuzzer for as long as you like.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.testing.fuzz_broker import FuzzRun, fuzz_broker

FRAMES = 4_000
RSS_GROWTH_LIMIT_BYTES = 64 << 20


@pytest.mark.parametrize("seed", [11])
def test_a_fuzzed_broker_stays_up_answers_in_order_and_keeps_acknowledged_data(
    tmp_path: Path, seed: int
) -> None:
    report, broker = fuzz_broker(FuzzRun(tmp_path, seed=seed, frames=FRAMES))

    assert report.frames == FRAMES
    assert not broker.crashed, f"exit code {broker.exit_code}"
    assert report.probes > 0
    assert report.hangs == 0, f"{report.hangs} of {report.probes} probes missed the deadline"
    assert broker.error_lines == [], broker.error_lines[:5]
    assert broker.tracebacks == 0
    assert report.order_violations == [], report.order_violations[:5]
    assert report.acked_records > 0
    assert report.lost_records == []
    assert broker.rss_max_bytes - broker.rss_start_bytes < RSS_GROWTH_LIMIT_BYTES
    # The slice exercised what it claims: most connections met a malformed request.
    assert report.closed_by_broker > report.episodes // 2
    assert set(report.mutations) >= {"fault", "bit-flip", "truncate", "duplicate", "same-id"}

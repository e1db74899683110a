"""``client.consumer.decoder``: every width of the inline varints reads as the generic path, in
both record loops."""

from __future__ import annotations

from typing import Any

import pytest

from odradek.client.consumer.decoder import decode, py_decode, scan
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord


@pytest.mark.parametrize("decoder", [decode, py_decode])
def test_offset_deltas_of_one_two_and_three_bytes(decoder: Any) -> None:
    # Offset deltas 0..63 take one byte, up to 8,191 two, up to 2**20 - 1 three.
    count = 2**19 + 16
    values = [str(i % 251).encode() * (1 + i % 3) for i in range(count)]
    batch = build_batch(
        [SimpleRecord(1_000 + i % 7, None, v) for i, v in enumerate(values)], base_offset=5
    )
    for fetch_offset in (0, 5 + 8_000, 5 + 2**19):
        records = decoder("t", 0, batch, fetch_offset, check_crcs=True)
        first = max(0, fetch_offset - 5)
        assert [r.offset for r in records] == list(range(5 + first, 5 + count))
        assert [r.value for r in records] == values[first:]
        assert [r.timestamp for r in records] == [1_000 + i % 7 for i in range(first, count)]
    assert scan(batch, 0) == 5 + count

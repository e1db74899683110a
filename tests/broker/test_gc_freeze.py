"""broker/gc_freeze.py: a started broker's objects leave the collector's full passes, which
come after more younger passes."""

from __future__ import annotations

import subprocess
import sys

from odradek.broker.gc_freeze import FULL_COLLECTION_THRESHOLD

# Prints how many objects a full collection walks (generation 2's) after importing the
# broker, then after freeze_start_up, then after thaw. Run in its own process: freezing the
# test runner's objects would keep its garbage cycles from being collected.
_PROBE = """
import gc
import odradek.cli.serve  # the broker's imports
from odradek.broker.gc_freeze import freeze_start_up, thaw

gc.collect()
walked = len(gc.get_objects(generation=2))
full_every = gc.get_threshold()[2]
frozen = freeze_start_up()
after = len(gc.get_objects(generation=2))
thaw()
gc.collect()
print(walked, frozen, after, gc.get_freeze_count(), len(gc.get_objects(generation=2)))
print(full_every, *gc.get_threshold())
"""


def test_freezing_takes_the_start_up_objects_out_of_full_collections() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    )
    counts, thresholds = result.stdout.splitlines()
    walked, frozen, after, frozen_after_thaw, walked_after_thaw = map(int, counts.split())
    assert walked > 10_000  # the broker's imports alone
    assert frozen >= walked
    assert after < walked // 10
    assert frozen_after_thaw == 0
    assert walked_after_thaw >= walked
    default_full, young, middle, full = map(int, thresholds.split())
    assert (young, middle) == (700, 10)  # Python's
    assert full == FULL_COLLECTION_THRESHOLD > default_full

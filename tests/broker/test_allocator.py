"""broker/allocator.py: glibc keeps freed request-sized blocks mapped once a broker runs."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from odradek.broker.allocator import retain_freed_memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# Allocates 8 MiB in one block, touches it, frees it, and prints how much of it stayed
# resident (MiB). Stock glibc maps a block that size on its own and unmaps it when freed.
_PROBE = """
import sys
from odradek.broker.allocator import retain_freed_memory

def resident_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

if sys.argv[1] == "retain":
    assert retain_freed_memory()
block = b"x" * (8 * 2**20)
before = resident_mib()
del block
print(resident_mib() - before + 8)
"""


def _kept_mib(mode: str) -> float:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True
    )
    return float(result.stdout)


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_freed_blocks_stay_mapped_once_applied() -> None:
    assert _kept_mib("default") < 2
    assert _kept_mib("retain") > 6


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_applies_once_per_process() -> None:
    assert retain_freed_memory() is True
    assert retain_freed_memory() is True

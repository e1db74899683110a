"""The C allocator's settings in a broker process: freed request buffers stay mapped for reuse.

Every Produce request passes through a few buffers of its own size (the frame's bytes, the
decoded records field): with 1 MB batches that is megabytes allocated and freed per request.
glibc's malloc serves large blocks with ``mmap`` and gives freed memory at the top of its heap
back to the kernel once a few MB of it are free (its dynamic thresholds), so request after
request the broker faulted its buffers in again, page by page, each page zeroed by the kernel:
in ``bench/broker_perf.py`` (1 KB records, 1 MB batches) about a fifth of the broker's samples
were those faults and ``brk``/``munmap``, and the produce phase ran 15–25 % faster without them.
Raising both thresholds keeps up to ``TRIM_THRESHOLD_BYTES`` of freed memory mapped, to be
reused by the next request, as a JVM keeps its heap: a process holds at most its peak working
set plus that much.

The settings are process-wide, so they are made only where the process is the broker's own:
``odradek serve`` calls ``retain_freed_memory`` at start; an embedded ``odradek.Broker`` leaves
its host process's allocator alone (a host that wants the same may call it). Calling it again
changes nothing. Elsewhere than on glibc (musl, macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import sys

logger = logging.getLogger(__name__)

#: Freed memory at the top of the heap beyond this goes back to the kernel.
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024
#: Blocks at least this large are mapped on their own (and unmapped when freed); smaller ones
#: come from the heap. 32 MiB is the largest value glibc accepts on 64-bit systems.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024

# mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


@functools.cache
def retain_freed_memory() -> bool:
    """Sets glibc's trim and mmap thresholds (once per process); returns whether it did."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (present on glibc only: musl's mallopt is a stub)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # The mmap threshold first: setting either one turns off glibc's dynamic adjustment of
    # both, and a trim threshold alone would leave every block over 128 KiB mmap'd.
    applied = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
    if not applied:
        logger.info("glibc refused the malloc thresholds; freed memory is returned as usual")
    return applied

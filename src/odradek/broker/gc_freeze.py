"""The cyclic garbage collector in a broker process: start-up objects are frozen out of it.

CPython's collector finds reference cycles by walking every tracked object of the generations
it collects; a full (generation 2) pass walks them all and holds the event loop meanwhile. A
broker's process holds some 80,000 tracked objects after a few seconds of work, about 67,000
of them from its imports alone (functions, classes, module dicts, code objects), and they live
as long as the process. In ``bench/cluster_perf.py`` (RF 3, acks=all, 10,000 records/s) each
broker ran a full pass two or three times a minute, 21-52 ms of CPU each (48-148 ms of wall
time on the shared machine) — a stall of the loop that, on the leader or on either follower,
holds back the high watermark and so every acks=all produce and consumer fetch behind it:
a 100 ms stall in a 5 s run at 10,000 records/s is 2 % of the records, past the p99.

``gc.freeze()`` moves every object alive into a permanent generation that the collector no
longer walks, so later passes pay only for what was allocated since. ``odradek serve`` calls
``freeze_start_up`` once the broker is up (after a full collection, so no garbage is frozen),
and ``thaw`` before a broker whose ZooKeeper session expired is replaced by a new one (the old
one's objects, frozen with the rest, become collectable again; the new one is frozen once it
is up). Objects frozen are never freed while frozen: only objects alive at start-up are, and
a broker keeps those (modules, its configuration, the logs it loaded) for its life.

Process-wide, so made only where the process is the broker's own (``odradek serve``), as
``allocator.retain_freed_memory``; an embedded ``odradek.Broker`` leaves its host's collector
alone. The collector's thresholds stay Python's defaults.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_start_up", "thaw"]


def freeze_start_up() -> int:
    """Collects garbage once, then freezes every object alive (``gc.freeze``): later
    collections skip them. Returns how many objects are frozen now."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def thaw() -> None:
    """Returns the frozen objects to the collector (``gc.unfreeze``), to be collected when
    garbage: before the broker they belong to is replaced."""
    gc.unfreeze()

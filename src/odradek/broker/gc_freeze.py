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

With the start-up objects frozen, a full pass walks only the objects made since (some
10,000-20,000: 3-18 ms of CPU) but comes more often: CPython runs one after every
``threshold2`` (10) younger passes once the objects that survived them reach a quarter of those
a full pass left, and what a full pass leaves is small now. The traced bench counted 1-5 full
passes in each 5 s run over the three brokers; ``FULL_COLLECTION_THRESHOLD`` (100 younger
passes) makes them ten times rarer — none in two traced runs — for garbage cycles that reached
the oldest generation waiting longer to be freed. The younger generations' thresholds stay
Python's (their passes cost 0.1-2.5 ms of CPU).

Process-wide, so made only where the process is the broker's own (``odradek serve``), as
``allocator.retain_freed_memory``; an embedded ``odradek.Broker`` leaves its host's collector
alone.
"""

from __future__ import annotations

import gc

__all__ = ["FULL_COLLECTION_THRESHOLD", "freeze_start_up", "thaw"]

#: Younger (generation 1) passes between two full ones (CPython's default: 10).
FULL_COLLECTION_THRESHOLD = 100


def freeze_start_up() -> int:
    """Collects garbage once, then freezes every object alive (``gc.freeze``): later
    collections skip them; full passes come after ``FULL_COLLECTION_THRESHOLD`` younger ones.
    Returns how many objects are frozen now."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)
    return gc.get_freeze_count()


def thaw() -> None:
    """Returns the frozen objects to the collector (``gc.unfreeze``), to be collected when
    garbage: before the broker they belong to is replaced."""
    gc.unfreeze()

"""Timing probes inside the brokers of ``bench/cluster_perf.py --trace`` (diagnostic only).

Loaded into each ``odradek serve`` process by a ``sitecustomize`` that ``cluster_perf`` writes
(``install`` runs when ``ODRADEK_PROBE_DIR`` is set and the process is a broker), it wraps a
few methods of ``Partition`` and the event loop and every 2 s writes what it saw to
``$ODRADEK_PROBE_DIR/broker-<pid>.json``: lists of ``[wall time, ms, ...]`` under

- ``read``: a leader's append → its first read for a follower's fetch (the wake-up of the
  follower's long poll and the read);
- ``report-<id>``: the append → follower ``id``'s next fetch, whose offset says it holds the
  batch (a whole follower round trip);
- ``hw``: the append → the high watermark passing it (the acks=all produce and the
  consumers' fetches complete then);
- ``gc0``/``gc1``/``gc2``: each collection of that generation, wall ms and the loop thread's
  CPU ms;
- ``lag``: a 2 ms timer on the loop firing more than 2 ms late, the loop thread's CPU ms in
  between (little CPU: the process waited for a CPU; much: a long turn).

Only partitions of topics named ``$ODRADEK_PROBE_TOPIC_PREFIX`` (default ``bench-rf3``) are
timed. It wraps private methods, so it follows the broker's code: a renamed method makes it
fail at start-up, loudly. The wrappers cost a few µs per call; compare runs with and without.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

Events = collections.defaultdict[str, list[list[float]]]

_PERIOD_S = 0.002


def install() -> None:
    """Starts the probes in this process when it is a broker asked to be probed."""
    directory = os.environ.get("ODRADEK_PROBE_DIR")
    if not directory or "serve" not in sys.argv:
        return
    events: Events = collections.defaultdict(list)
    _probe_gc(events)
    _probe_loop(events)
    _probe_partitions(events, os.environ.get("ODRADEK_PROBE_TOPIC_PREFIX", "bench-rf3"))
    path = os.path.join(directory, f"broker-{os.getpid()}.json")
    threading.Thread(target=_dump_forever, args=(events, path), daemon=True).start()


def _probe_gc(events: Events) -> None:
    started: list[float] = [0.0, 0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[:] = [time.perf_counter(), time.thread_time()]
            return
        wall = (time.perf_counter() - started[0]) * 1e3
        cpu = (time.thread_time() - started[1]) * 1e3
        events[f"gc{info['generation']}"].append([time.time(), wall, cpu])

    gc.callbacks.append(callback)


def _probe_loop(events: Events) -> None:
    """Wraps ``odradek.cli.serve.new_event_loop``: the loop it makes runs a 2 ms timer."""
    from odradek.cli import serve  # noqa: PLC0415 (the probe loads after the interpreter)

    make: Callable[[], Any] = serve.new_event_loop

    def new_event_loop() -> Any:
        loop = make()
        state = [time.perf_counter(), time.thread_time()]

        def tick() -> None:
            now, cpu = time.perf_counter(), time.thread_time()
            late = (now - state[0]) * 1e3
            if late > 2:
                events["lag"].append([time.time(), late, (cpu - state[1]) * 1e3])
            state[:] = [now + _PERIOD_S, cpu]
            loop.call_later(_PERIOD_S, tick)

        loop.call_soon(tick)
        return loop

    serve.new_event_loop = new_event_loop  # type: ignore[assignment]


def _probe_partitions(events: Events, prefix: str) -> None:
    from odradek.broker.replication.partition import Partition  # noqa: PLC0415

    #: per partition: (offset the high watermark must reach, perf_counter of the append)
    appended: dict[Any, collections.deque[tuple[int, float]]] = collections.defaultdict(
        collections.deque
    )
    read_up_to: dict[Any, int] = collections.defaultdict(lambda: -1)
    reported: dict[tuple[Any, int], int] = collections.defaultdict(lambda: -1)
    append_as_leader = Partition.append_as_leader
    read = Partition.read
    update_follower_fetch = Partition.update_follower_fetch
    advance_high_watermark = Partition.advance_high_watermark

    def timed(partition: Partition) -> bool:
        return partition.topic_partition[0].startswith(prefix)

    def since(kind: str, start: float, now: float) -> None:
        events[kind].append([time.time(), (now - start) * 1e3])

    def probed_append(self: Partition, data: Any) -> Any:
        info = append_as_leader(self, data)
        if timed(self):
            appended[self.topic_partition].append((info.last_offset + 1, time.perf_counter()))
        return info

    def probed_read(self: Partition, fetch_offset: int, max_bytes: int, **kw: Any) -> Any:
        result = read(self, fetch_offset, max_bytes, **kw)
        if timed(self) and kw.get("committed_only") is False and self.is_leader:
            tp, now, end = self.topic_partition, time.perf_counter(), self.log_end_offset
            for required, at in appended[tp]:
                if fetch_offset < required <= end and required > read_up_to[tp]:
                    since("read", at, now)
            read_up_to[tp] = max(read_up_to[tp], end)
        return result

    def probed_report(self: Partition, replica_id: int, fetch_offset: int, now_ms: int) -> Any:
        if timed(self):
            tp, now = self.topic_partition, time.perf_counter()
            for required, at in appended[tp]:
                if reported[tp, replica_id] < required <= fetch_offset:
                    since(f"report-{replica_id}", at, now)
            reported[tp, replica_id] = max(reported[tp, replica_id], fetch_offset)
        return update_follower_fetch(self, replica_id, fetch_offset, now_ms)

    def probed_advance(self: Partition, offset: int) -> bool:
        moved = advance_high_watermark(self, offset)
        if moved and timed(self):
            queue, now = appended[self.topic_partition], time.perf_counter()
            while queue and queue[0][0] <= self.high_watermark:
                since("hw", queue.popleft()[1], now)
        return moved

    Partition.append_as_leader = probed_append  # type: ignore[method-assign]
    Partition.read = probed_read  # type: ignore[method-assign,assignment]
    Partition.update_follower_fetch = probed_report  # type: ignore[method-assign]
    Partition.advance_high_watermark = probed_advance  # type: ignore[method-assign]


def _dump_forever(events: Events, path: str) -> None:
    while True:
        time.sleep(2)
        snapshot = {kind: list(values) for kind, values in list(events.items())}
        with open(path + ".tmp", "w") as out:
            json.dump(snapshot, out)
        os.replace(path + ".tmp", path)

"""A crowd of small clients against the broker and against the null server, in the same run.

Many producer connections each send one small batch per Produce request (one record of
``--value-bytes``, to partition ``connection % --partitions``); consumers long-poll (Fetch with
``max_wait_ms`` 500, ``min_bytes`` 1) and tail every partition; a prober sends a Metadata
request every 100 ms on its own connection and opens a fresh connection for one every 500 ms.

Phases, each run against the null server and then the real broker (both started once, each in
its own process, as ``odradek serve`` runs: uvloop, allocator settings; the null server is the
same broker stack whose partitions store nothing — ``bench/_broker_servers.py``):
- *closed*: 1, 10, 50, 200 connections (``--clients``), each with one request in flight,
  for acks=1 and acks=all (``--acks``): requests/s, p50/p99 latency, real/null ratio, and the
  Metadata probes' latency — the 200-connection row is the saturated broker;
- *pipelined*: 50 connections with 32 requests in flight each (a client that queues its own
  work, as librdkafka does): the Metadata probes must not wait behind that queue;
- *paced*: 50 connections sending 100 requests/s each (``--paced``), below saturation:
  p50/p99 produce latency.

The load is generated cheaply so the broker is what is measured: raw asyncio protocols on
uvloop with the request frames encoded once, spread over ``--workers`` processes, plus one
process for the consumers and the prober. On a machine with two or more cores the servers are
pinned to the first core (every thread of each) and the load to the others, as if the clients
ran on other machines; ``--no-pin`` lets the scheduler place everything. Unpinned, the servers
share every core with the load, and at few connections the ratio then mostly measures where
the scheduler put each process at each round trip: on a 2-core machine the one-connection ratio
ranged over 58–88 % from run to run unpinned, and 82–90 % pinned. Pinned, the load has fewer
cores: compare the ratios, not the absolute figures, across machines and modes. Each row also
gives the server's CPU time (user+system, from /proc) per produce request answered, and null's over
real's: the share of the null server's rate the broker would reach if the server's core were
the limit. On a busy machine that figure is much steadier than the requests/s ratio, which
then mostly measures which server the other processes happened to slow down. The last
columns show the work each side's consumers did — fetches/s and records consumed/s (the
consumers advance past the batches they get, so they read what was produced, on both sides):
a slower server answers more, smaller fetches per produce (each finds less new), which is
part of what its CPU per request pays for.

    .venv/bin/python bench/many_clients.py [--seconds 3] [--clients 1,10,50,200] [--acks 1,all]
        [--no-pin] [--profile /tmp/crowd]   # py-spy (pip install py-spy): collapsed stacks
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from _broker_servers import KINDS, ServerProcess
from odradek.cli.serve import new_event_loop
from odradek.protocol import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

TOPIC = "crowd"
PRODUCE_VERSION = 7
FETCH_VERSION = 11
METADATA_VERSION = 4
FETCH_MAX_WAIT_MS = 500
PROBE_INTERVAL_S = 0.1
FRESH_PROBE_INTERVAL_S = 0.5
_SIZE = struct.Struct(">i")
_ERROR = struct.Struct(">h")
_BATCH_PREFIX = struct.Struct(">qi")
_BATCH_HEADER = 61
_OFFSET_OUT_OF_RANGE = 1
#: Produce v7 response: correlation id, topics count, topic name, partitions count, index, then
#: the error code — at this offset of the payload (one topic, one partition).
_PRODUCE_ERROR_AT = 4 + 4 + 2 + len(TOPIC) + 4 + 4


# ---------------------------------------------------------------------- load (worker side)


def produce_frame(partition: int, acks: int, value_bytes: int) -> bytes:
    batch = build_batch([SimpleRecord(int(time.time() * 1000), None, os.urandom(value_bytes))])
    return encode_request(
        ApiKey.PRODUCE,
        PRODUCE_VERSION,
        1,
        "crowd",
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": 30_000,
            "topic_data": [
                {"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}
            ],
        },
    )


def metadata_frame() -> bytes:
    fields = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
    return encode_request(ApiKey.METADATA, METADATA_VERSION, 7, "prober", fields)


def fetch_frame(offsets: dict[int, int]) -> bytes:
    partitions = [
        {
            "partition": partition,
            "current_leader_epoch": -1,
            "fetch_offset": offset,
            "log_start_offset": -1,
            "partition_max_bytes": 1024 * 1024,
        }
        for partition, offset in offsets.items()
    ]
    body = {
        "replica_id": -1,
        "max_wait": FETCH_MAX_WAIT_MS,
        "min_bytes": 1,
        "max_bytes": 16 * 1024 * 1024,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": TOPIC, "partitions": partitions}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return encode_request(ApiKey.FETCH, FETCH_VERSION, 3, "consumer", body)


class Window:
    """The measurement window: samples count only between ``start`` and ``end``."""

    def __init__(self) -> None:
        self.start = float("inf")
        self.end = float("inf")

    def __contains__(self, now: float) -> bool:
        return self.start <= now < self.end


class FrameProtocol(asyncio.Protocol):
    """Collects size-prefixed response frames; ``on_frame`` gets each payload."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.connected = asyncio.get_running_loop().create_future()
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.connected.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        position, end = 0, len(buffer)
        while end - position >= 4:
            (size,) = _SIZE.unpack_from(buffer, position)
            if end - position - 4 < size:
                break
            self.on_frame(buffer[position + 4 : position + 4 + size])
            position += 4 + size
        self.buffer = buffer[position:]

    def on_frame(self, payload: bytes) -> None:
        raise NotImplementedError


class Producer(FrameProtocol):
    """One producer connection: keeps ``depth`` requests in flight, or sends at a rate."""

    def __init__(self, frame: bytes, window: Window, samples: list[float], depth: int) -> None:
        super().__init__()
        self.frame = frame
        self.window = window
        self.samples = samples
        self.depth = depth
        self.sent: deque[float] = deque()
        self.errors = 0
        self.answered = 0
        self.running = True

    def send(self) -> None:
        if self.running and self.transport is not None and not self.lost:
            self.sent.append(time.perf_counter())
            self.transport.write(self.frame)

    def on_frame(self, payload: bytes) -> None:
        now = time.perf_counter()
        started = self.sent.popleft()
        self.answered += 1
        if _ERROR.unpack_from(payload, _PRODUCE_ERROR_AT)[0]:
            self.errors += 1
        if now in self.window and started >= self.window.start:
            self.samples.append(now - started)
        if self.depth:
            self.send()

    def paced(self, interval: float) -> None:
        loop = asyncio.get_running_loop()
        self.send()
        loop.call_later(interval, self.paced, interval)


def last_offset_after(records: bytes) -> tuple[int, int]:
    """The offset after the last whole batch in ``records`` (-1: none) and how many records
    the whole batches hold."""
    position, end, after, count = 0, len(records), -1, 0
    while end - position >= _BATCH_HEADER:
        base, length = _BATCH_PREFIX.unpack_from(records, position)
        if end - position < 12 + length:
            break
        (delta,) = _SIZE.unpack_from(records, position + 23)
        (in_batch,) = _SIZE.unpack_from(records, position + 57)
        after = base + delta + 1
        count += in_batch
        position += 12 + length
    return after, count


class Consumer(FrameProtocol):
    """One consumer connection: long-polls its partitions, from their high watermark on, and
    advances past the last batch each answer brings (as a consumer does)."""

    def __init__(self, partitions: list[int], window: Window, figures: dict[str, int]) -> None:
        super().__init__()
        # Far past the end: the first answer (OFFSET_OUT_OF_RANGE) tells the high watermark
        # to tail from.
        self.offsets = dict.fromkeys(partitions, 2**62)
        self.window = window
        self.figures = figures
        self.running = True

    def fetch(self) -> None:
        if self.running and self.transport is not None and not self.lost:
            self.transport.write(fetch_frame(self.offsets))

    def on_frame(self, payload: bytes) -> None:
        _, body = decode_response(ApiKey.FETCH, FETCH_VERSION, payload)
        consumed = size = 0
        for topic in body["responses"]:
            for partition in topic["partitions"]:
                index = partition["partition_index"]
                records = partition["records"] or b""
                if partition["error_code"] == _OFFSET_OUT_OF_RANGE:
                    self.offsets[index] = partition["high_watermark"]
                    continue
                after, count = last_offset_after(records)
                self.offsets[index] = max(self.offsets[index], after)
                consumed += count
                size += len(records)
        if time.perf_counter() in self.window:
            self.figures["fetches"] += 1
            self.figures["fetched_bytes"] += size
            self.figures["consumed"] += consumed
        self.fetch()


class Prober(FrameProtocol):
    """Sends one Metadata request at a time and times its answer."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: asyncio.Future[float] | None = None

    def on_frame(self, payload: bytes) -> None:
        if self.answered is not None and not self.answered.done():
            self.answered.set_result(time.perf_counter())


async def probe_loop(host: str, port: int, window: Window, samples: list[float]) -> None:
    loop = asyncio.get_running_loop()
    _, prober = await loop.create_connection(Prober, host, port)
    await prober.connected
    frame = metadata_frame()
    while time.perf_counter() < window.end:
        prober.answered = loop.create_future()
        started = time.perf_counter()
        assert prober.transport is not None
        prober.transport.write(frame)
        answered = await prober.answered
        if started >= window.start and answered < window.end:
            samples.append(answered - started)
        await asyncio.sleep(PROBE_INTERVAL_S)
    assert prober.transport is not None
    prober.transport.close()


async def fresh_probe_loop(host: str, port: int, window: Window, samples: list[float]) -> None:
    """A new connection per probe: connect, Metadata, answer (a fresh client's first look)."""
    loop = asyncio.get_running_loop()
    frame = metadata_frame()
    while time.perf_counter() < window.end:
        started = time.perf_counter()
        _, prober = await loop.create_connection(Prober, host, port)
        prober.answered = loop.create_future()
        assert prober.transport is not None
        prober.transport.write(frame)
        answered = await prober.answered
        prober.transport.close()
        if started >= window.start and answered < window.end:
            samples.append(answered - started)
        await asyncio.sleep(FRESH_PROBE_INTERVAL_S)


async def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One load process: connects, says ready, waits for go on stdin, runs, reports."""
    loop = asyncio.get_running_loop()
    host, port = "127.0.0.1", spec["port"]
    window = Window()
    samples: list[float] = []
    producers: list[Producer] = []
    for partition in spec["producers"]:
        frame = produce_frame(partition, spec["acks"], spec["value_bytes"])
        depth = 0 if spec["rate"] else spec["depth"]
        _, producer = await loop.create_connection(
            lambda frame=frame, depth=depth: Producer(frame, window, samples, depth), host, port
        )
        producers.append(producer)
    consumers: list[Consumer] = []
    figures = {"fetches": 0, "fetched_bytes": 0, "consumed": 0}
    for partitions in spec["consumers"]:
        _, consumer = await loop.create_connection(
            lambda partitions=partitions: Consumer(partitions, window, figures), host, port
        )
        consumers.append(consumer)
    print("ready", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    now = time.perf_counter()
    window.start = now + spec["warmup"]
    window.end = window.start + spec["seconds"]
    for consumer in consumers:
        consumer.fetch()
    for producer in producers:
        if spec["rate"]:
            interval = 1 / spec["rate"]
            loop.call_later(random.random() * interval, producer.paced, interval)
        else:
            for _ in range(producer.depth):
                producer.send()
    probes: list[float] = []
    fresh: list[float] = []
    tasks = []
    if spec["probe"]:
        tasks.append(asyncio.ensure_future(probe_loop(host, port, window, probes)))
        tasks.append(asyncio.ensure_future(fresh_probe_loop(host, port, window, fresh)))
    await asyncio.sleep(window.end - time.perf_counter())
    for producer in producers:
        producer.running = False
    for consumer in consumers:
        consumer.running = False
    if tasks:
        await asyncio.wait(tasks, timeout=30)
    return {
        "requests": len(samples),
        "latencies": samples,
        "errors": sum(p.errors for p in producers),
        "answered": sum(p.answered for p in producers),
        "lost": sum(p.lost for p in producers),
        "probes": probes,
        "fresh_probes": fresh,
        **figures,
    }


def worker_main(spec_json: str) -> None:
    """Runs one load process; its figures go to the spec's ``output`` file."""
    spec = json.loads(spec_json)
    loop = new_event_loop()
    try:
        result = loop.run_until_complete(run_worker(spec))
    finally:
        loop.close()
    with open(spec["output"], "w") as output:
        json.dump(result, output)


# ---------------------------------------------------------------------- phases (parent side)


@dataclass
class Phase:
    clients: int
    acks: int
    depth: int = 1
    rate: float = 0.0  # requests/s per connection; 0: closed loop

    @property
    def label(self) -> str:
        acks = "all" if self.acks == -1 else str(self.acks)
        if self.rate:
            return f"{self.clients:>3} paced {self.rate:.0f}/s acks={acks}"
        depth = f"x{self.depth}" if self.depth > 1 else ""
        return f"{self.clients:>3}{depth:<3} closed acks={acks}"


@dataclass
class Figures:
    requests_per_s: float
    latencies_ms: list[float]
    probes_ms: list[float]
    fresh_probes_ms: list[float]
    fetches_per_s: float
    #: Records the consumers read per second (equal work: about the produce rate, each side).
    consumed_per_s: float
    errors: int
    #: The server's CPU time per produce request answered (everything it did in the phase —
    #: fetches and probes too — divided by the produce requests), user and system.
    cpu_user_us: float
    cpu_system_us: float
    notes: list[str] = field(default_factory=list)

    @property
    def cpu_us(self) -> float:
        return self.cpu_user_us + self.cpu_system_us

    @property
    def p50(self) -> float:
        return percentile(self.latencies_ms, 0.5)

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 0.99)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def cpu_seconds(pid: int) -> tuple[float, float]:
    """The user and system CPU seconds process ``pid`` has used (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


def pin_servers(server_pids: list[int]) -> str | None:
    """Pins every thread of each server process to the first core this process may use, and
    this process (so the load workers it starts later) to the others; returns the placement
    for the report, or None (changing nothing) with fewer than two cores.

    The servers' threads are pinned one by one (``/proc/PID/task``): threads they start later
    inherit the pinning of the thread that starts them."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    server_cores, load_cores = {cores[0]}, set(cores[1:])
    for pid in server_pids:
        for thread in os.listdir(f"/proc/{pid}/task"):
            os.sched_setaffinity(int(thread), server_cores)
    os.sched_setaffinity(0, load_cores)
    return f"servers on core {cores[0]}, load on {len(load_cores)} other core(s)"


def start_profiler(
    server: ServerProcess, phase: Phase, args: argparse.Namespace
) -> subprocess.Popen[bytes] | None:
    """With ``--profile``: py-spy samples the server through the phase's warm-up and measured
    seconds, into ``PREFIX-<kind>-<phase>.txt`` (each round overwrites the file: the last
    round's profile is kept). Both servers are sampled: what the log costs is the difference,
    per request, between the two profiles of a phase."""
    if not args.profile:
        return None
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    label = phase.label.replace(" ", "").replace("=", "")
    output = f"{args.profile}-{server.kind}-{label}.txt"
    command = [spy, "record", "--pid", str(server.pid), "--rate", "1000", "--format", "raw"]
    command += ["--nonblocking", "--duration", str(int(args.warmup + args.seconds))]
    return subprocess.Popen([*command, "--output", output], stdout=subprocess.DEVNULL)


def run_phase(server: ServerProcess, phase: Phase, args: argparse.Namespace) -> Figures:
    """Runs one phase against ``server``; returns its figures."""
    port = server.port
    workers = max(1, min(args.workers, phase.clients))
    partitions = list(range(args.partitions))
    consumer_groups = [partitions[i :: args.consumers] for i in range(args.consumers)]
    specs = []
    for index in range(workers):
        specs.append(
            {
                "port": port,
                "producers": [c % args.partitions for c in range(index, phase.clients, workers)],
                "consumers": [],
                "probe": False,
                "acks": phase.acks,
                "depth": phase.depth,
                "rate": phase.rate,
                "value_bytes": args.value_bytes,
                "warmup": args.warmup,
                "seconds": args.seconds,
            }
        )
    specs.append({**specs[0], "producers": [], "consumers": consumer_groups, "probe": True})
    outputs = tempfile.mkdtemp(prefix="odradek-crowd-")
    for index, spec in enumerate(specs):
        spec["output"] = os.path.join(outputs, f"{index}.json")
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for spec in specs
    ]
    try:
        for child in children:
            assert child.stdout is not None
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError("a load worker did not start")
        profiler = start_profiler(server, phase, args)
        user_before, system_before = cpu_seconds(server.pid)
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        results = []
        for child, spec in zip(children, specs, strict=True):
            assert child.stdin is not None
            child.stdin.close()
            if child.wait(timeout=args.warmup + args.seconds + 120):
                raise RuntimeError("a load worker failed")
            with open(spec["output"]) as output:
                results.append(json.load(output))
        user_after, system_after = cpu_seconds(server.pid)
        if profiler is not None:
            profiler.wait(timeout=60)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        shutil.rmtree(outputs, ignore_errors=True)
    latencies = [s * 1000 for r in results for s in r["latencies"]]
    notes = []
    lost = sum(r["lost"] for r in results)
    if lost:
        notes.append(f"{lost} connections lost")
    answered = max(1, sum(r["answered"] for r in results))
    return Figures(
        cpu_user_us=(user_after - user_before) / answered * 1e6,
        cpu_system_us=(system_after - system_before) / answered * 1e6,
        requests_per_s=len(latencies) / args.seconds,
        latencies_ms=latencies,
        probes_ms=[s * 1000 for r in results for s in r["probes"]],
        fresh_probes_ms=[s * 1000 for r in results for s in r["fresh_probes"]],
        fetches_per_s=sum(r["fetches"] for r in results) / args.seconds,
        consumed_per_s=sum(r["consumed"] for r in results) / args.seconds,
        errors=sum(r["errors"] for r in results),
        notes=notes,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--clients", default="1,10,50,200", help="producer connections")
    parser.add_argument("--acks", default="1,all", help="acks values to run (1, all)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per phase")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--consumers", type=int, default=2, help="long-polling consumers")
    parser.add_argument("--value-bytes", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2, help="producer load processes")
    parser.add_argument(
        "--pipelined",
        default="50x32",
        help="CONNECTIONSxDEPTH for the pipelined phase ('' skips it)",
    )
    parser.add_argument(
        "--paced",
        default="50x100",
        help="CONNECTIONSxRATE for the paced phase, requests/s per connection ('' skips it)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="best of this many rounds")
    parser.add_argument(
        "--no-pin",
        dest="pin",
        action="store_false",
        help="let the scheduler place the servers and the load (default: servers on the first "
        "core, load on the others)",
    )
    parser.add_argument("--data-root", help="where the servers' data directories go")
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="sample each server with py-spy in each phase: PREFIX-<kind>-<phase>.txt, "
        "collapsed stacks (py-spy's raw format)",
    )
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker)
        return
    acks_values = [-1 if a.strip() == "all" else int(a) for a in args.acks.split(",")]
    phases = [
        Phase(int(clients), acks) for acks in acks_values for clients in args.clients.split(",")
    ]
    if args.pipelined:
        clients, depth = (int(x) for x in args.pipelined.split("x"))
        phases.append(Phase(clients, acks_values[-1], depth=depth))
    if args.paced:
        clients, rate = args.paced.split("x")
        phases.append(Phase(int(clients), acks_values[-1], rate=float(rate)))
    servers = {
        kind: ServerProcess(
            kind,
            topic=TOPIC,
            partitions=args.partitions,
            value_bytes=args.value_bytes,
            data_root=args.data_root,
        )
        for kind in KINDS
    }
    placement = pin_servers([server.pid for server in servers.values()]) if args.pin else None
    print(
        f"{args.partitions} partitions, {args.value_bytes} B records, one per request; "
        f"{args.consumers} consumers long-polling; {args.seconds:.0f} s per phase after "
        f"{args.warmup:.0f} s warm-up; best of {args.rounds} alternating null/real rounds; "
        + (placement or "servers and load unpinned")
    )
    print(
        "requests/s and produce latency (ms) per phase; metadata: the prober's p50/max on its "
        "own connection (and the max on a fresh connection); CPU: the server's user+system "
        "microseconds per produce request, and null's over real's (the share of the null "
        "server's capacity the broker would reach were the server's core the limit: steadier "
        "than the requests/s ratio when the machine is shared)"
    )
    print(
        f"{'phase':<24} {'null req/s':>10} {'real req/s':>10} {'ratio':>5}  "
        f"{'null p50/p99':>13} {'real p50/p99':>13}  {'metadata real':>20}  "
        f"{'CPU null':>9} {'CPU real':>9} {'CPU ratio':>9}  {'fetch/s n/r':>11}"
        f"  {'consumed/s n/r':>13}"
    )
    try:
        for phase in phases:
            figures: dict[str, Figures] = {}
            # Alternate null and real rounds and keep each one's best (the most requests/s;
            # when paced, the lowest p99): on a shared machine single runs swing by more than
            # the difference being measured.
            for _ in range(args.rounds):
                for kind in KINDS:
                    result = run_phase(servers[kind], phase, args)
                    kept = figures.get(kind)
                    if kept is None or (
                        result.p99 < kept.p99
                        if phase.rate
                        else result.requests_per_s > kept.requests_per_s
                    ):
                        figures[kind] = result
            null, real = figures["null"], figures["real"]
            probes = real.probes_ms or [float("nan")]
            fresh = real.fresh_probes_ms or [float("nan")]
            notes = [f"{kind}: {note}" for kind in KINDS for note in figures[kind].notes]
            notes += [
                f"{kind}: {f.errors} error answers" for kind, f in figures.items() if f.errors
            ]
            print(
                f"{phase.label:<24} {null.requests_per_s:>10,.0f} {real.requests_per_s:>10,.0f}"
                f" {real.requests_per_s / max(null.requests_per_s, 1e-9):>5.0%}"
                f"  {null.p50:>6.1f}/{null.p99:<6.1f} {real.p50:>6.1f}/{real.p99:<6.1f}"
                f"  {percentile(probes, 0.5):>5.1f}/{max(probes):<5.1f} ({max(fresh):>5.1f})"
                f"  {null.cpu_user_us:>4.0f}+{null.cpu_system_us:<4.0f}"
                f" {real.cpu_user_us:>4.0f}+{real.cpu_system_us:<4.0f}"
                f" {null.cpu_us / real.cpu_us:>9.0%}"
                f"  {null.fetches_per_s:>5,.0f}/{real.fetches_per_s:<5,.0f}"
                f"  {null.consumed_per_s:>6,.0f}/{real.consumed_per_s:<6,.0f}"
                + ("  " + "; ".join(notes) if notes else ""),
                flush=True,
            )
    finally:
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    main()

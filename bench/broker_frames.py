"""What reading a leader's Fetch answers costs the follower: ``FrameProtocol`` (each answer
read straight into its own buffer) against an ``asyncio.StreamReader`` (``StreamFrameChannel``,
what ``BrokerConnection`` used for every connection before), in the same run.

A child process plays the leader: for each 8-byte request it writes one answer frame of
``--frame-kb`` KiB. This process sends ``--frames`` requests one at a time (as a replica
fetcher does) through ``BrokerConnection.exchange`` and reports its own CPU (user + system)
and wall time per MB received, on uvloop (the broker's loop). The child's
CPU is the same for both and not counted.

    .venv/bin/python bench/broker_frames.py [--frames 2000] [--frame-kb 1024] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable

import uvloop

from odradek.broker import broker_connection
from odradek.broker.broker_connection import BrokerConnection
from odradek.broker.broker_frames import FrameChannel, StreamFrameChannel

_LEADER = """
import socket, struct, sys
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
size = int(sys.argv[1])
body = bytes(size - 4)
while True:
    conn, _ = listener.accept()
    with conn:
        while True:
            request = conn.recv(8, socket.MSG_WAITALL)
            if len(request) < 8:
                break
            conn.sendall(struct.pack(">i", size) + request[4:8] + body)
"""


async def _stream_channel(host: str, port: int, limit: int) -> FrameChannel:
    reader, writer = await asyncio.open_connection(host, port)
    return StreamFrameChannel(reader, writer, limit)


async def _round(port: int, frames: int, size: int) -> tuple[float, float]:
    connection = BrokerConnection("bench", max_response_bytes=size + 1024)
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(frames):
        await connection.exchange("127.0.0.1", port, lambda c: struct.pack(">ii", 4, c), wait_ms=0)
    elapsed, used = time.perf_counter() - started, time.process_time() - cpu
    await connection.aclose()
    return elapsed, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--frame-kb", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = args.frame_kb * 1024
    new_loop: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop  # the broker's
    leader = subprocess.Popen(
        [sys.executable, "-c", _LEADER, str(size)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert leader.stdout is not None
        port = int(leader.stdout.readline())
        plain = broker_connection.open_plaintext_channel
        ways = {"FrameProtocol": plain, "StreamReader": _stream_channel}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, opener in ways.items():
                broker_connection.open_plaintext_channel = opener  # type: ignore[assignment]
                loop = new_loop()
                try:
                    results[name].append(loop.run_until_complete(_round(port, args.frames, size)))
                finally:
                    loop.close()
        broker_connection.open_plaintext_channel = plain
    finally:
        leader.kill()
        leader.wait()
    megabytes = args.frames * size / 1e6
    print(
        f"{args.frames} answers of {args.frame_kb} KiB over 127.0.0.1 on uvloop, "
        f"{args.rounds} rounds (medians; shared machine, load "
        f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}):"
    )
    medians = {}
    for name, rounds in results.items():
        wall = statistics.median(r[0] for r in rounds)
        cpu = statistics.median(r[1] for r in rounds)
        medians[name] = cpu
        print(
            f"  {name:<14} {1e6 * cpu / megabytes:7.1f} µs CPU/MB  "
            f"{1e6 * wall / megabytes:7.1f} µs wall/MB  ({megabytes / wall:,.0f} MB/s)"
        )
    cpu_ratio = medians["FrameProtocol"] / medians["StreamReader"]
    print(f"  CPU ratio FrameProtocol / StreamReader: {cpu_ratio:.2f}x")


if __name__ == "__main__":
    main()

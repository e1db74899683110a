"""What timing every request costs the server (``broker.metrics.RequestMetrics``), in the same
run: one broker (``BrokerApp``) fed Produce frames through the server's own connection code
(``broker.server.KafkaProtocol.data_received`` over a transport that drops what is written), with
the request timing off and on, in interleaved rounds.

Cases, CPU time (``time.process_time``) per request, the minimum over rounds (contention only
ever adds time): *produce* (one-record Produce v7, acks=1, ``--value-bytes``, round-robin over
8 partitions) with ``request_metrics`` None and set; the difference is the timing's cost per
request. The bare ``RequestMetrics.record`` plus two ``perf_counter`` reads (the server reads
the clock once per request and once per read) is timed alone too.

    .venv/bin/python bench/request_timing_cost.py [--requests 4000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from typing import Any

from many_clients import TOPIC, produce_frame
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.broker.metrics import RequestMetrics
from odradek.broker.server import KafkaProtocol

PARTITIONS = 8


class NullTransport:
    """Accepts writes and drops them; enough of ``asyncio.Transport`` for ``KafkaProtocol``."""

    def write(self, data: bytes) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def feed(protocol: KafkaProtocol, frames: list[bytes], requests: int) -> float:
    started = time.process_time()
    for i in range(requests):
        protocol.data_received(frames[i % len(frames)])
    return (time.process_time() - started) / requests


def bare_record(requests: int) -> float:
    metrics = RequestMetrics()
    perf = time.perf_counter
    started = time.process_time()
    for _ in range(requests):
        read_at = perf()
        metrics.record(0, 0.0, perf() - read_at)
    return (time.process_time() - started) / requests


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="odradek-timing-", dir=args.data_root) as data_dir:
        config = BrokerConfig.from_mapping(
            {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir, "num.partitions": "1"}
        )
        app = BrokerApp(config)
        await app.start()
        try:
            assert app.topics is not None
            assert app.server is not None
            app.topics.create_topic(TOPIC, PARTITIONS)
            server = app.server
            protocol = KafkaProtocol(server)
            protocol.connection_made(NullTransport())  # type: ignore[arg-type]
            frames = [produce_frame(p, 1, args.value_bytes) for p in range(PARTITIONS)]
            best: dict[str, float] = {}
            for round_ in range(args.rounds):
                order = [("off", None), ("on", RequestMetrics())]
                for name, metrics in order if round_ % 2 else order[::-1]:
                    server.request_metrics = metrics
                    seconds = feed(protocol, frames, args.requests)
                    best[name] = min(best.get(name, seconds), seconds)
                seconds = bare_record(args.requests)
                best["bare"] = min(best.get("bare", seconds), seconds)
            server.request_metrics = None
            protocol.connection_lost(None)
            off, on = best["off"] * 1e6, best["on"] * 1e6
            print(
                f"CPU µs per produce request through KafkaProtocol, min of {args.rounds} "
                f"interleaved rounds of {args.requests:,} ({args.value_bytes} B records)"
            )
            print(
                f"timing off {off:7.2f}  on {on:7.2f}  cost {on - off:5.2f}  on/off {on / off:.3f}"
            )
            print(
                f"RequestMetrics.record + 2 perf_counter reads alone: {best['bare'] * 1e6:.2f} µs"
            )
        finally:
            await app.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000, help="produce requests per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--value-bytes", type=int, default=200)
    parser.add_argument("--data-root", help="where the log directory goes")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

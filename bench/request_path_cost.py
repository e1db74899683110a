"""The broker's CPU per request without sockets: the real log against the null partition, in
one process, in the same run.

``bench/many_clients.py`` measures the crowd end to end, but on a shared two-core machine its
requests/s ratio mostly measures which server the other processes slowed down, and its CPU per
request moves with how many fetches each produce happens to wake. This bench takes the network,
the clients and the scheduler out: one broker (``BrokerApp``, the topic created as the servers in
``bench/_broker_servers.py`` create it) is fed request frames through a ``ServerConnection`` and
the router, exactly the per-request code ``broker.server`` runs, and answers them; the partitions
are switched between the real ones and ``NullPartition`` (*follow* kind) between rounds.

Cases, each CPU time (``time.process_time``) per produce, the minimum over interleaved rounds
(contention only ever adds time):
- *produce*: one-record Produce v7 requests (``--value-bytes``), acks=1, round-robin over the
  partitions;
- *idempotent produce*: the same from an idempotent producer (one producer id, each partition's
  sequence numbers in order: the broker checks and records its producer state), its frames
  built before each timed round;
- *produce + fetch every N*: the same, plus after every N produces one Fetch v11 of four
  partitions from where the last one ended (a consumer tailing them; with N=1 every fetch
  finds one new batch, as at one producer connection), its records read as the server sends
  small ones. The fetch frames are encoded between requests, off the clock.

The difference (real − null) is what the log costs per request; null/real is the share of the
null server's rate the broker would reach were the server's CPU the only limit.

``--breakdown`` splits the *produce* difference, in the same interleaved rounds: *null + write*
is the null server whose partitions also write each batch to a file of their own in the log
directory (the real log's one ``write`` per append, with no log code), and *append alone* is
``Partition.append_as_leader`` of the real partitions called in a loop outside any request.
When real − (null + write) is much more than append alone − the null's append, the log's code
costs more inside a request than on its own: its instructions are not the whole of its cost
(callgrind counts instructions; CPU time also counts the cache and TLB misses a syscall and a
larger working set bring).

    .venv/bin/python bench/request_path_cost.py [--requests 4000] [--rounds 7] [--breakdown]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import tempfile
import time
from collections.abc import Callable
from typing import Any

from _broker_servers import NullPartition, prebuilt
from many_clients import TOPIC, fetch_frame, produce_frame
from odradek._types import TopicPartition
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.protocol import RecordsSlot, ServerConnection
from odradek.records.batch import ATTRIBUTES_OFFSET, CRC_OFFSET
from odradek.records.crc import crc32c

PARTITIONS = 8
FETCHED = (0, 2, 4, 6)
#: Where an idempotent batch's header holds its producer id, epoch and base sequence.
_PRODUCER = struct.Struct(">qhi")
_PRODUCER_OFFSET = 43
_IDEMPOTENT_PRODUCER_ID = 4242


class WritingNullPartition(NullPartition):
    """A null partition that also writes each appended batch to a file of its own (the real
    log's one ``write`` per append, with none of its code)."""

    def __init__(self, path: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.segment_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append_as_leader(self, data: bytes) -> Any:
        os.write(self.segment_fd, data)
        return super().append_as_leader(data)


class Rig:
    """One broker whose partitions of ``TOPIC`` are real or null, fed frames directly."""

    def __init__(self, app: BrokerApp, value_bytes: int, data_dir: str) -> None:
        assert app.ctx is not None
        assert app.server is not None
        self.app = app
        self.ctx = app.ctx
        self.router = app.server.router
        self.replicas = app.ctx.replicas
        self.real_get = self.replicas.get
        blob = prebuilt(1, value_bytes)
        self.nulls = [NullPartition(*blob, follow=True) for _ in range(PARTITIONS)]
        self.writing_nulls = [
            WritingNullPartition(os.path.join(data_dir, f"null-writes-{p}.log"), *blob, follow=True)
            for p in range(PARTITIONS)
        ]
        self.produce = [produce_frame(p, 1, value_bytes) for p in range(PARTITIONS)]
        #: Where each produce frame's batch starts, and the next base sequence per partition,
        #: per kind: the null partitions keep no producer state, and a real partition that
        #: saw the sequences jump by a null round would refuse every batch after it
        #: (OUT_OF_ORDER_SEQUENCE_NUMBER: the case would time an error path).
        self.batch_starts = [_batch_start(frame) for frame in self.produce]
        self.sequences = {"null": [0] * PARTITIONS, "real": [0] * PARTITIONS}
        self.kind = "real"

    def use(self, kind: str) -> None:
        self.kind = kind
        if kind in ("null", "null + write"):
            nulls = self.nulls if kind == "null" else self.writing_nulls
            self.replicas.get = lambda tp: nulls[tp.partition]  # type: ignore[method-assign]
        else:
            self.replicas.get = self.real_get  # type: ignore[method-assign]

    def _connection(self) -> ServerConnection[Any]:
        return ServerConnection(supported=self.router.supported_versions, max_frame_bytes=1 << 26)

    def _answer(self, conn: ServerConnection[Any], frame: bytes) -> int:
        """Handles one frame; returns the record bytes its response carries."""
        carried = 0
        for event in conn.receive_data(frame):
            result = self.router.dispatch(self.ctx, event.request)  # type: ignore[union-attr]
            if not isinstance(result, bytes | None) and asyncio.iscoroutine(result):
                result.close()
                raise RuntimeError("a fetch long-polled: it should have found records")
            for part in conn.send_response(event, result):  # type: ignore[arg-type]
                if isinstance(part, RecordsSlot) and part.records is not None:
                    carried += len(part.records.read())
        return carried

    def produce_only(self, requests: int) -> float:
        conn = self._connection()
        started = time.process_time()
        for i in range(requests):
            self._answer(conn, self.produce[i % PARTITIONS])
        return (time.process_time() - started) / requests

    def append_alone(self, requests: int, kind: str) -> float:
        """``append_as_leader`` of the real (or null) partitions (the produce frames' batches,
        round-robin), called in a loop outside any request."""
        partitions: list[Any] = (
            [self.real_get(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)]
            if kind == "real"
            else self.nulls
        )
        batches = [
            frame[start:] for frame, start in zip(self.produce, self.batch_starts, strict=True)
        ]
        started = time.process_time()
        for i in range(requests):
            partitions[i % PARTITIONS].append_as_leader(batches[i % PARTITIONS])
        return (time.process_time() - started) / requests

    def idempotent_frames(self, requests: int) -> list[bytes]:
        """The next ``requests`` idempotent produce frames, round-robin over the partitions,
        each partition's base sequences continuing from the last round's."""
        frames = []
        sequences = self.sequences[self.kind]
        for i in range(requests):
            partition = i % PARTITIONS
            frame = bytearray(self.produce[partition])
            start = self.batch_starts[partition]
            sequence = sequences[partition]
            sequences[partition] = sequence + 1
            _PRODUCER.pack_into(
                frame, start + _PRODUCER_OFFSET, _IDEMPOTENT_PRODUCER_ID, 0, sequence
            )
            crc = crc32c(memoryview(frame)[start + ATTRIBUTES_OFFSET :])
            struct.pack_into(">I", frame, start + CRC_OFFSET, crc)
            frames.append(bytes(frame))
        return frames

    def idempotent_produce(self, requests: int) -> float:
        frames = self.idempotent_frames(requests)
        conn = self._connection()
        before = self._appended()
        started = time.process_time()
        for frame in frames:
            self._answer(conn, frame)
        elapsed = time.process_time() - started
        if self._appended() - before != requests:
            raise RuntimeError("an idempotent produce was refused: the case would time errors")
        return elapsed / requests

    def _appended(self) -> int:
        """Records appended to the partitions so far (one per produce request)."""
        return sum(self._high_watermark(p) for p in range(PARTITIONS))

    def produce_and_fetch(self, requests: int, every: int) -> float:
        """The bench's own work between requests — encoding each Fetch frame (the client's
        work, ~50 µs) and reading the high watermarks it starts from — is taken out of the
        time: the clock is read around it."""
        conn = self._connection()
        offsets = {p: self._high_watermark(p) for p in FETCHED}
        clock = time.process_time
        own = 0.0
        started = clock()
        for i in range(requests):
            self._answer(conn, self.produce[FETCHED[i % len(FETCHED)]])
            if i % every == every - 1:
                paused = clock()
                frame = fetch_frame(offsets)
                own += clock() - paused
                if not self._answer(conn, frame):
                    raise RuntimeError("a fetch carried no records")
                paused = clock()
                for p in offsets:
                    offsets[p] = self._high_watermark(p)
                own += clock() - paused
        return (clock() - started - own) / requests

    def _high_watermark(self, partition: int) -> int:
        found = self.replicas.get(TopicPartition(TOPIC, partition))
        assert found is not None
        return found.high_watermark


def _batch_start(frame: bytes) -> int:
    """Where the batch that ends ``frame`` (a one-batch produce request) starts: the position
    whose batch length field names exactly the rest of the frame, magic 2."""
    for start in range(len(frame) - 61, 0, -1):
        (length,) = struct.unpack_from(">i", frame, start + 8)
        if start + 12 + length == len(frame) and frame[start + 16] == 2:
            return start
    raise ValueError("no batch at the end of the frame")


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="odradek-path-", dir=args.data_root) as data_dir:
        config = BrokerConfig.from_mapping(
            {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir, "num.partitions": "1"}
        )
        app = BrokerApp(config)
        await app.start()
        try:
            assert app.topics is not None
            app.topics.create_topic(TOPIC, PARTITIONS)
            rig = Rig(app, args.value_bytes, data_dir)
            cases: dict[str, Callable[[], float]] = {
                "produce": lambda: rig.produce_only(args.requests),
                "idempotent produce": lambda: rig.idempotent_produce(args.requests),
            }
            for every in (1, 4):
                cases[f"produce + fetch every {every}"] = lambda every=every: rig.produce_and_fetch(
                    args.requests, every
                )
            best: dict[tuple[str, str], float] = {}

            def record(key: tuple[str, str], seconds: float) -> None:
                best[key] = min(best.get(key, seconds), seconds)

            for _ in range(args.rounds):
                for kind in ("null", "real"):
                    rig.use(kind)
                    for name, case in cases.items():
                        record((name, kind), case())
                if args.breakdown:
                    rig.use("null + write")
                    record(("produce", "null + write"), rig.produce_only(args.requests))
                    for kind in ("null", "real"):
                        record((f"{kind} append alone", ""), rig.append_alone(args.requests, kind))
            rig.use("real")
            for partition in rig.writing_nulls:
                os.close(partition.segment_fd)
            print(
                f"CPU µs per produce request, min of {args.rounds} interleaved rounds of "
                f"{args.requests:,} ({args.value_bytes} B records, {PARTITIONS} partitions)"
            )
            print(f"{'case':<26} {'null':>7} {'real':>7} {'real-null':>9} {'null/real':>9}")
            for name in cases:
                null, real = best[(name, "null")] * 1e6, best[(name, "real")] * 1e6
                print(
                    f"{name:<26} {null:>7.2f} {real:>7.2f} {real - null:>9.2f} {null / real:>9.0%}"
                )
            if args.breakdown:
                null, writing, real = (
                    best[("produce", kind)] * 1e6 for kind in ("null", "null + write", "real")
                )
                null_alone, real_alone = (
                    best[(f"{kind} append alone", "")] * 1e6 for kind in ("null", "real")
                )
                print(
                    f"produce: null {null:.2f}, null + write {writing:.2f}, real {real:.2f}: "
                    f"the write {writing - null:.2f}, the rest of the log {real - writing:.2f}; "
                    f"append_as_leader alone, in a loop: null {null_alone:.2f}, "
                    f"real {real_alone:.2f} (difference {real_alone - null_alone:.2f})"
                )
        finally:
            await app.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000, help="produce requests per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--value-bytes", type=int, default=200)
    parser.add_argument("--data-root", help="where the log directory goes")
    parser.add_argument(
        "--breakdown", action="store_true", help="split the produce case (module docstring)"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

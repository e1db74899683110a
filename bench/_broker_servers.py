"""The two servers the broker benches measure, each in its own child process: the real broker
and the null server, the same broker stack (protocol, router, handlers, purgatory) whose
partitions store nothing.

A null partition answers appends at once and serves reads from batches prebuilt in memory,
so its figures are the ceiling set by the clients, the network and the broker's own
per-request code; the real broker should reach ≥ 80 % of them. Both children set the
allocator up and run the event loop as ``odradek serve`` does (``retain_freed_memory``,
uvloop when installed).

Null partitions come in two kinds:
- *replay* (``bench/broker_perf.py``): the prebuilt batches hold ``records`` records from
  offset 0, the high watermark is far ahead, and a consumer reads them back in order;
- *follow* (``bench/many_clients.py``): the high watermark is the log end offset the appends
  reached, and a read at an offset below it answers copies of one small prebuilt batch, one
  per offset from the fetch offset on (base offsets patched; the CRC does not cover them), as
  many as the appends made and the fetch's bytes allow — what a consumer tailing a real log
  of one-record batches gets; an append wakes the consumers long-polling the partition, as a
  real leader's high-watermark move does. So a consumer does against it the work it does
  against the real broker.

Run by ``ServerProcess``; as a script it is that child (``--serve KIND``), printing its port.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.allocator import retain_freed_memory
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.cli.serve import new_event_loop
from odradek.errors import OffsetOutOfRangeError
from odradek.net.sendfile import SENDFILE_MIN_BYTES
from odradek.records.batch import parse_header
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.file_records import FileSlice
from odradek.storage.log import AppendInfo, LogReadInfo

KINDS = ("null", "real")
_FAR_AHEAD = 10**12
_BASE_OFFSET = struct.Struct(">q")


class BytesRegion:
    """Bytes in memory posing as a file region (a *follow* read's patched batches): read with
    ``read``, never sent with sendfile (kept under ``SENDFILE_MIN_BYTES``)."""

    __slots__ = ("data", "length")

    fd = -1
    position = 0

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.length = len(data)

    def read(self) -> bytes:
        return self.data


class NullPartition:
    """Accepts appends without storing them; serves reads from prebuilt batches.

    Args:
        blob, batch_positions, records_per_batch: what ``prebuilt`` returns.
        follow: the *follow* kind (see the module docstring) instead of *replay*.
        on_append: called after each append (*follow*: wakes the partition's long polls).
    """

    def __init__(
        self,
        blob: bytes,
        batch_positions: list[int],
        records_per_batch: int,
        *,
        follow: bool = False,
        on_append: Callable[[], None] | None = None,
    ) -> None:
        # The batches live in an in-memory file, so reads are file regions like the real
        # log's (the server sends large ones with sendfile, as it does the real log's).
        self.fd = os.memfd_create("null-partition")
        view = memoryview(blob)
        while view:
            view = view[os.write(self.fd, view) :]
        self.positions = batch_positions
        self.records_per_batch = records_per_batch
        self.follow = follow
        self.on_append = on_append
        #: *follow*: the first prebuilt batch, copied per offset read.
        self.batch = blob[batch_positions[0] : batch_positions[1]]
        self.log_end_offset = 0
        self.log_start_offset = 0
        self.leader_epoch = 0
        self.isr = [0]
        self.min_insync_replicas = 1
        self.is_leader = True

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset if self.follow else _FAR_AHEAD

    def append_as_leader(self, data: bytes) -> Any:
        header = parse_header(data)
        first = self.log_end_offset
        self.log_end_offset += header.last_offset_delta + 1
        if self.on_append is not None:
            self.on_append()
        return AppendInfo(
            first,
            self.log_end_offset - 1,
            header.max_timestamp,
            -1,
            header.records_count,
            len(data),
            0,
        )

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = True,
        committed_only: bool = True,
        read_committed: bool = False,
    ) -> Any:
        if self.follow:
            return self._follow(offset, max_bytes)
        index = offset // self.records_per_batch
        if index >= len(self.positions) - 1:
            return LogReadInfo(None, offset, 0, offset)
        start = self.positions[index]
        end = min(self.positions[-1], start + max(max_bytes, 1))
        return LogReadInfo(FileSlice(self.fd, start, end - start), offset, 0, _FAR_AHEAD)

    def _follow(self, offset: int, max_bytes: int) -> LogReadInfo:
        """A *follow* read: one copy of the batch per offset from ``offset`` to the log end,
        within ``max_bytes`` (at least one) and under the sendfile size; past the log end:
        OFFSET_OUT_OF_RANGE, as the real log answers."""
        end = self.log_end_offset
        if offset > end or offset < 0:
            raise OffsetOutOfRangeError(f"offset {offset} is outside [0, {end}]")
        if offset == end:
            return LogReadInfo(None, offset, 0, end)
        batch = self.batch
        size = len(batch)
        fits = min(max(max_bytes, size), SENDFILE_MIN_BYTES - 1) // size
        count = max(1, min(end - offset, fits))
        data = bytearray(batch * count)
        pack_into = _BASE_OFFSET.pack_into
        for index in range(count):
            pack_into(data, index * size, offset + index)
        return LogReadInfo(BytesRegion(bytes(data)), offset, 0, end)  # type: ignore[arg-type]


def prebuilt(records: int, value_bytes: int) -> tuple[bytes, list[int], int]:
    """``records`` records of ``value_bytes`` random bytes in batches of up to 1 MB: the
    batches' bytes end to end, where each begins (and where the last ends), records per
    batch."""
    per_batch = max(1, (1024 * 1024) // (value_bytes + 20))
    value = os.urandom(value_bytes)
    now = int(time.time() * 1000)
    chunks, positions, position = [], [0], 0
    for base in range(0, records, per_batch):
        count = min(per_batch, records - base)
        batch = build_batch([SimpleRecord(now, None, value)] * count, base_offset=base)
        chunks.append(batch)
        position += len(batch)
        positions.append(position)
    return b"".join(chunks), positions, per_batch


def serve(
    kind: str, data_dir: str, topic: str, partitions: int, value_bytes: int, records: int
) -> None:
    """Child process: runs a broker (real or null) with ``topic`` created and prints its port.

    ``records`` > 0 makes the null partitions *replay* that many records; 0 makes them
    *follow* (one record of ``value_bytes`` per read).
    """
    retain_freed_memory()
    config = BrokerConfig.from_mapping(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir, "num.partitions": "1"}
    )
    loop = new_event_loop()
    app = BrokerApp(config)
    loop.run_until_complete(app.start())
    assert app.ctx is not None
    assert app.topics is not None
    app.topics.create_topic(topic, partitions)
    if kind == "null":
        follow = records == 0
        blob = prebuilt(records or 1, value_bytes)
        purgatory = app.ctx.purgatory

        def waker(partition: int) -> Callable[[], None] | None:
            if not follow:
                return None
            tp = TopicPartition(topic, partition)
            return lambda: purgatory.notify_high_watermark(tp)

        nulls = [
            NullPartition(*blob, follow=follow, on_append=waker(index))
            for index in range(partitions)
        ]
        replicas = app.ctx.replicas
        real_get = replicas.get

        def get(tp: TopicPartition) -> Any:
            return nulls[tp.partition] if tp.topic == topic else real_get(tp)

        replicas.get = get  # type: ignore[method-assign]
    print(app.port, flush=True)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    loop.run_until_complete(stop)
    loop.run_until_complete(app.stop())


class ServerProcess:
    """A server child process; ``stop`` ends it (SIGTERM, then SIGKILL) and removes its data.

    Args:
        kind: ``"null"`` or ``"real"``.
        topic, partitions: the topic created before the port is announced.
        value_bytes, records: the null server's prebuilt records (see ``serve``).
        data_root: where the data directory goes (default: the temp dir).
    """

    def __init__(
        self,
        kind: str,
        *,
        topic: str,
        partitions: int = 1,
        value_bytes: int = 100,
        records: int = 0,
        data_root: str | None = None,
    ) -> None:
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix=f"odradek-bench-{kind}-", dir=data_root)
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                kind,
                "--dir",
                self.dir,
                "--topic",
                topic,
                "--partitions",
                str(partitions),
                "--value-bytes",
                str(value_bytes),
                "--records",
                str(records),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip():
            self.stop()
            raise RuntimeError(f"the {kind} server did not start")
        self.port = int(line)
        self.bootstrap = f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", choices=KINDS, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--records", type=int, default=0)
    args = parser.parse_args()
    serve(args.serve, args.dir, args.topic, args.partitions, args.value_bytes, args.records)


if __name__ == "__main__":
    main()

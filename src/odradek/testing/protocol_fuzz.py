"""A seeded protocol fuzzer that drives a running broker over raw sockets.

``run_fuzz(FuzzConfig(...))`` sends ``frames`` request frames built from templates of every
advertised API and version (``odradek.protocol.samples``), most of them mutated, in episodes
of one connection each:

- *pipelined*: 1..``max_pipeline`` frames written at once, then a sentinel ApiVersions v0; the
  episode reads until the sentinel's answer or the broker's close, and checks that the
  answers it got came in request order (when the mutations left the framing intact);
- *dropped*: frames, then half of a frame (or of a size prefix), and the socket is closed
  without reading: the broker must drop the half-sent frame and the connection.

Mutations (``MUTATIONS``): schema-aware faults (a null where the schema says non-nullable,
negative and huge lengths and counts, integer extremes), bit flips, inserted and deleted
bytes, truncation, a wrong api version or key, a duplicated frame (same correlation id),
random bytes in a valid frame, a correlation id reused while a request with it is in flight,
and unmutated frames.

Meanwhile a probe thread sends a Metadata request on its own connection every
``probe_interval_s`` and counts the answers that miss ``probe_deadline_s`` (a hang), and the
fuzzer itself produces known records to a topic no fuzzed request names (before, during,
after) and reads them all back at the end: ``FuzzReport.lost_records`` must be empty.

Deterministic for a seed as far as the fuzzer's choices go (the broker's timing is not).
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from odradek.errors import ErrorCode, ProtocolError
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.samples import RequestSampler, SampleNames
from odradek.records.batch import iter_batches
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import SimpleRecord

__all__ = ["MUTATIONS", "FuzzConfig", "FuzzReport", "read_rss_bytes", "run_fuzz"]

INTEGRITY_TOPIC: Final = "fuzz-acked"
FUZZ_TOPICS: Final = ("fuzz-a", "fuzz-b", "no-such-topic")
FUZZ_GROUPS: Final = ("fuzz-group-a", "fuzz-group-b")
_SENTINEL_ID: Final = 0x7FFF_FFF0
_PROBE_ID: Final = 0x7FFF_FFF1
_CLIENT_ID: Final = "odradek-fuzz"
_SIZE = struct.Struct(">i")
_FRAME_HEAD = struct.Struct(">ii")


@dataclass(frozen=True, slots=True)
class FuzzConfig:
    """One fuzz run.

    Args:
        host, port: the broker.
        seed: seeds every choice the fuzzer makes.
        frames: fuzzed frames to send (sentinels, probes and integrity traffic not counted).
        supported: the advertised ranges to build templates from (ApiVersions' answer).
        max_pipeline: most frames written at once on one connection.
        episode_timeout_s: how long an episode waits for its sentinel before giving up on
            the connection (a long-polling Fetch with a fuzzed ``max_wait`` may hold it).
        probe_interval_s, probe_deadline_s: the Metadata probe's period and deadline.
        integrity_every: episodes between two acknowledged produces.
        workers: connections fuzzed at once (threads), each with its own random stream
            (seeded from ``seed`` and its index) and an equal share of ``frames``.
        excluded: APIs to build no templates for.
        integrity_topic: the topic of the acknowledged produces (created by the run, which
            expects it empty: a second run on the same broker names another).
    """

    host: str
    port: int
    seed: int
    frames: int
    supported: Mapping[ApiKey, VersionRange]
    max_pipeline: int = 8
    episode_timeout_s: float = 2.0
    probe_interval_s: float = 0.2
    probe_deadline_s: float = 5.0
    integrity_every: int = 200
    workers: int = 4
    excluded: frozenset[ApiKey] = frozenset()
    integrity_topic: str = INTEGRITY_TOPIC


@dataclass(slots=True)
class FuzzReport:
    """What a run saw. ``hangs`` counts probes that missed their deadline."""

    frames: int = 0
    episodes: int = 0
    closed_by_broker: int = 0
    episode_timeouts: int = 0
    order_violations: list[str] = field(default_factory=list)
    probes: int = 0
    hangs: int = 0
    probe_max_latency_s: float = 0.0
    acked_records: int = 0
    lost_records: list[str] = field(default_factory=list)
    mutations: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.elapsed_s if self.elapsed_s else 0.0


# --- mutations ----------------------------------------------------------------------------------


Mutation = Callable[[random.Random, bytes], bytes]


def _payload(frame: bytes) -> bytearray:
    return bytearray(frame[4:])


def _framed(payload: bytes | bytearray) -> bytes:
    return _SIZE.pack(len(payload)) + bytes(payload)


def _bit_flips(rng: random.Random, frame: bytes) -> bytes:
    payload = _payload(frame)
    for _ in range(rng.randrange(1, 9)):
        position = rng.randrange(8, len(payload)) if len(payload) > 8 else 0
        if payload:
            payload[position] ^= 1 << rng.randrange(8)
    return _framed(payload)


def _insert(rng: random.Random, frame: bytes) -> bytes:
    payload = _payload(frame)
    position = rng.randrange(8, len(payload) + 1) if len(payload) >= 8 else 0
    payload[position:position] = rng.randbytes(rng.randrange(1, 9))
    return _framed(payload)


def _delete(rng: random.Random, frame: bytes) -> bytes:
    payload = _payload(frame)
    if len(payload) > 8:
        position = rng.randrange(8, len(payload))
        del payload[position : position + rng.randrange(1, 9)]
    return _framed(payload)


def _truncate(rng: random.Random, frame: bytes) -> bytes:
    payload = _payload(frame)
    return _framed(payload[: rng.randrange(0, len(payload) + 1)])


def _wrong_version(rng: random.Random, frame: bytes) -> bytes:
    payload = _payload(frame)
    if len(payload) >= 4:
        version = rng.choice((-1, 0, 1, 3, 7, 12, 99, 32767))
        struct.pack_into(">h", payload, 2, version)
    return _framed(payload)


def _wrong_key(rng: random.Random, frame: bytes) -> bytes:
    payload = _payload(frame)
    if len(payload) >= 2:
        struct.pack_into(">h", payload, 0, rng.choice([*ApiKey, -1, 93, 32767]))
    return _framed(payload)


def _duplicate(rng: random.Random, frame: bytes) -> bytes:
    return frame + frame


def _garbage(rng: random.Random, frame: bytes) -> bytes:
    payload = _payload(frame)
    return _framed(payload[:8] + rng.randbytes(max(len(payload) - 8, 0)))


MUTATIONS: Final[Mapping[str, Mutation | None]] = {
    "none": None,
    "fault": None,  # written by the sampler (schema-aware)
    "bit-flip": _bit_flips,
    "insert": _insert,
    "delete": _delete,
    "truncate": _truncate,
    "wrong-version": _wrong_version,
    "wrong-key": _wrong_key,
    "duplicate": _duplicate,
    "garbage": _garbage,
    "same-id": None,  # the previous frame's correlation id, reused while it is in flight
}
_WEIGHTS: Final = {
    "none": 3,
    "fault": 6,
    "bit-flip": 4,
    "insert": 1,
    "delete": 1,
    "truncate": 1,
    "wrong-version": 1,
    "wrong-key": 1,
    "duplicate": 1,
    "garbage": 1,
    "same-id": 2,
}


# --- a blocking connection ----------------------------------------------------------------------


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""

    def read_frame(self, deadline: float) -> bytes | None:
        """The next response frame's payload; ``None`` when the broker closed the connection.

        Raises:
            TimeoutError: nothing complete arrived before ``deadline`` (a monotonic time).
        """
        while True:
            if len(self._buffer) >= 4:
                (size,) = _SIZE.unpack_from(self._buffer)
                if len(self._buffer) >= 4 + size:
                    frame = self._buffer[4 : 4 + size]
                    self._buffer = self._buffer[4 + size :]
                    return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no response before the deadline")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except (ConnectionResetError, BrokenPipeError):
                return None
            except TimeoutError:
                raise
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _request(conn: _Connection, api_key: int, version: int, cid: int, fields: Any) -> Any:
    conn.send(encode_request(api_key, version, cid, _CLIENT_ID, fields))
    frame = conn.read_frame(time.monotonic() + 30.0)
    if frame is None:
        raise ConnectionError(f"{ApiKey(api_key).name} got no answer: connection closed")
    answered, body = decode_response(api_key, version, frame)
    if answered != cid:
        raise ProtocolError(f"answer for correlation id {answered}, expected {cid}")
    return body


# --- the probe ----------------------------------------------------------------------------------


class _Probe(threading.Thread):
    """Sends Metadata on its own connection at a fixed period; counts missed deadlines."""

    def __init__(self, config: FuzzConfig, report: FuzzReport) -> None:
        super().__init__(name="fuzz-probe", daemon=True)
        self._config = config
        self._report = report
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def run(self) -> None:
        config = self._config
        frame = encode_request(
            ApiKey.METADATA,
            4,
            _PROBE_ID,
            _CLIENT_ID,
            {"topics": [{"name": config.integrity_topic}], "allow_auto_topic_creation": False},
        )
        conn: _Connection | None = None
        while not self._stop_event.wait(config.probe_interval_s):
            started = time.monotonic()
            try:
                if conn is None:
                    conn = _Connection(config.host, config.port, config.probe_deadline_s)
                conn.send(frame)
                answer = conn.read_frame(started + config.probe_deadline_s)
                if answer is None:
                    raise ConnectionError("closed")
                answered, body = decode_response(ApiKey.METADATA, 4, answer)
                if answered != _PROBE_ID or body["topics"][0]["name"] != config.integrity_topic:
                    raise ProtocolError("wrong answer")
            except (OSError, ProtocolError, KeyError, IndexError):
                self._report.hangs += 1
                if conn is not None:
                    conn.close()
                conn = None
            latency = time.monotonic() - started
            self._report.probes += 1
            self._report.probe_max_latency_s = max(self._report.probe_max_latency_s, latency)
        if conn is not None:
            conn.close()


# --- acknowledged data --------------------------------------------------------------------------


class _Integrity:
    """Produces numbered records with acks=-1 and checks that every acknowledged one is read
    back, in order."""

    def __init__(self, config: FuzzConfig) -> None:
        self._config = config
        self.acked: list[bytes] = []
        self._cid = 0

    def _connect(self) -> _Connection:
        return _Connection(self._config.host, self._config.port, 30.0)

    def create_topics(self) -> None:
        """Creates the integrity topic and (again, if a fuzzed DeleteTopics removed them) the
        topics fuzzed requests name: the broker should not auto-create topics."""
        conn = self._connect()
        topics = [(self._config.integrity_topic, 1)] + [(name, 2) for name in FUZZ_TOPICS[:-1]]
        try:
            fields = {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                    for name, partitions in topics
                ],
                "timeout_ms": 30_000,
                "validate_only": False,
            }
            self._cid += 1
            body = _request(conn, ApiKey.CREATE_TOPICS, 3, self._cid, fields)
            for topic in body["topics"]:
                code = topic["error_code"]
                if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                    raise ProtocolError(f"cannot create {topic['name']}: error {code}")
        finally:
            conn.close()

    def produce(self, count: int = 3) -> None:
        values = [f"acked-{len(self.acked) + i}".encode() for i in range(count)]
        batch = build_batch(SimpleRecord(1_700_000_000_000, None, value) for value in values)
        fields = {
            "transactional_id": None,
            "acks": -1,
            "timeout": 30_000,
            "topic_data": [
                {
                    "name": self._config.integrity_topic,
                    "partition_data": [{"index": 0, "records": batch}],
                }
            ],
        }
        conn = self._connect()
        try:
            self._cid += 1
            body = _request(conn, ApiKey.PRODUCE, 7, self._cid, fields)
        finally:
            conn.close()
        partition = body["responses"][0]["partition_responses"][0]
        if partition["error_code"] == ErrorCode.NONE:
            if partition["base_offset"] != len(self.acked):
                raise ProtocolError(
                    f"acknowledged at offset {partition['base_offset']}, expected {len(self.acked)}"
                )
            self.acked.extend(values)

    def lost(self) -> list[str]:
        """Acknowledged values missing from (or out of place in) the log, as text."""
        read: list[bytes] = []
        conn = self._connect()
        try:
            while len(read) < len(self.acked):
                fields = {
                    "max_wait": 0,
                    "min_bytes": 0,
                    "topics": [
                        {
                            "topic": self._config.integrity_topic,
                            "partitions": [
                                {
                                    "partition": 0,
                                    "fetch_offset": len(read),
                                    "partition_max_bytes": 1 << 20,
                                }
                            ],
                        }
                    ],
                    "forgotten_topics_data": [],
                }
                self._cid += 1
                body = _request(conn, ApiKey.FETCH, 11, self._cid, fields)
                data = body["responses"][0]["partitions"][0]["records"] or b""
                before = len(read)
                for position, _header in iter_batches(data):
                    for record in decode_batch_records(data, position):
                        if record.offset == len(read) and record.value is not None:
                            read.append(record.value)
                if len(read) == before:
                    break
        finally:
            conn.close()
        missing = [value.decode() for value in self.acked[len(read) :]]
        wrong = [
            f"offset {offset}: {got!r} != {want!r}"
            for offset, (got, want) in enumerate(zip(read, self.acked, strict=False))
            if got != want
        ]
        return wrong + missing


# --- the run ------------------------------------------------------------------------------------


class _Fuzzer:
    def __init__(self, config: FuzzConfig, report: FuzzReport, worker: int = 0) -> None:
        self._config = config
        self._report = report
        self._rng = random.Random(f"{config.seed}/{worker}")
        batches = [
            build_batch([SimpleRecord(1_700_000_000_000, b"k", b"fuzz-value")]),
            build_batch([SimpleRecord(1_700_000_000_000 + i, None, b"v" * i) for i in range(5)]),
        ]
        self._sampler = RequestSampler(self._rng, SampleNames(FUZZ_TOPICS, FUZZ_GROUPS, batches))
        self._templates = [
            (key, version)
            for key, versions in sorted(config.supported.items())
            for version in versions
            if key not in config.excluded
        ]
        self._mutation_names = list(_WEIGHTS)
        self._mutation_weights = list(_WEIGHTS.values())
        self._cid = 0

    def _next_frame(self) -> tuple[bytes, str]:
        rng = self._rng
        key, version = rng.choice(self._templates)
        name = rng.choices(self._mutation_names, self._mutation_weights)[0]
        if name != "same-id":
            self._cid += 1
        rate = rng.choice((0.02, 0.1, 0.3)) if name == "fault" else 0.0
        frame = self._sampler.frame(key, version, self._cid, _CLIENT_ID, fault_rate=rate)
        mutation = MUTATIONS[name]
        if mutation is not None:
            frame = mutation(rng, frame)
        mutations = self._report.mutations
        mutations[name] = mutations.get(name, 0) + 1
        return frame, name

    def episode(self, budget: int) -> int:
        """Runs one episode of at most ``budget`` frames; returns how many it sent."""
        rng = self._rng
        config = self._config
        count = min(rng.randrange(1, config.max_pipeline + 1), budget)
        frames = [self._next_frame() for _ in range(count)]
        self._report.episodes += 1
        conn = _Connection(config.host, config.port, config.episode_timeout_s)
        try:
            if rng.random() < 0.1:
                self._dropped(conn, frames)
            else:
                self._pipelined(conn, frames)
        finally:
            conn.close()
        return count

    def _dropped(self, conn: _Connection, frames: list[tuple[bytes, str]]) -> None:
        rng = self._rng
        data = b"".join(frame for frame, _ in frames)
        last = frames[-1][0]
        half = last[: rng.randrange(1, len(last))] if len(last) > 1 else b"\x00"
        conn.send(data[: len(data) - len(last)] + half)

    def _pipelined(self, conn: _Connection, frames: list[tuple[bytes, str]]) -> None:
        sentinel = encode_request(ApiKey.API_VERSIONS, 0, _SENTINEL_ID, _CLIENT_ID, {})
        if not conn.send(b"".join(frame for frame, _ in frames) + sentinel):
            self._report.closed_by_broker += 1
            return
        intact = all(name not in ("bit-flip", "insert", "delete", "garbage") for _, name in frames)
        expected = [_SENTINEL_ID]
        if intact:
            expected = [cid for frame, _ in frames for cid in _correlation_ids(frame)]
            expected.append(_SENTINEL_ID)
        deadline = time.monotonic() + self._config.episode_timeout_s
        answered: list[int] = []
        while True:
            try:
                frame = conn.read_frame(deadline)
            except TimeoutError:
                self._report.episode_timeouts += 1
                return
            if frame is None:
                self._report.closed_by_broker += 1
                break
            if len(frame) < 4:
                self._report.order_violations.append(f"answer of {len(frame)} bytes")
                return
            (cid,) = struct.unpack_from(">i", frame)
            answered.append(cid)
            if cid == _SENTINEL_ID:
                break
        if intact and not _is_subsequence(answered, expected):
            self._report.order_violations.append(f"sent {expected}, answered {answered}")

    def run(self, frames: int, integrity: _Integrity | None) -> None:
        report = self._report
        config = self._config
        while report.frames < frames:
            report.frames += self.episode(frames - report.frames)
            if integrity is not None and report.episodes % config.integrity_every == 0:
                integrity.create_topics()
                integrity.produce()


def _correlation_ids(data: bytes) -> list[int]:
    """Correlation ids of the whole frames in ``data`` (one, or two for a duplicate)."""
    ids = []
    offset = 0
    while offset + 4 <= len(data):
        (size,) = _SIZE.unpack_from(data, offset)
        if size >= 8 and offset + 4 + size <= len(data):
            ids.append(struct.unpack_from(">i", data, offset + 8)[0])
        offset += 4 + max(size, 0)
    return ids


def _is_subsequence(answered: list[int], expected: list[int]) -> bool:
    remaining = iter(expected)
    return all(any(cid == want for want in remaining) for cid in answered)


def run_fuzz(config: FuzzConfig) -> FuzzReport:
    """Runs the fuzzer against the broker at ``config.host:port`` (see the module docstring).

    Raises:
        OSError, ProtocolError: the integrity producer could not talk to the broker.
    """
    report = FuzzReport()
    integrity = _Integrity(config)
    integrity.create_topics()
    integrity.produce()
    probe = _Probe(config, report)
    reports = [FuzzReport() for _ in range(config.workers)]
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        # Worker 0 also produces the acknowledged records, between its episodes.
        share = config.frames // config.workers + (worker < config.frames % config.workers)
        try:
            fuzzer = _Fuzzer(config, reports[worker], worker)
            fuzzer.run(share, integrity if worker == 0 else None)
        except BaseException as error:  # re-raised below, in the caller's thread
            failures.append(error)

    threads = [
        threading.Thread(target=work, args=(worker,), name=f"fuzz-{worker}", daemon=True)
        for worker in range(config.workers)
    ]
    started = time.monotonic()
    probe.start()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        probe.stop()
        report.elapsed_s = time.monotonic() - started
    if failures:
        raise failures[0]
    for part in reports:
        _merge(report, part)
    integrity.produce()
    report.acked_records = len(integrity.acked)
    report.lost_records = integrity.lost()
    return report


def _merge(total: FuzzReport, part: FuzzReport) -> None:
    total.frames += part.frames
    total.episodes += part.episodes
    total.closed_by_broker += part.closed_by_broker
    total.episode_timeouts += part.episode_timeouts
    total.order_violations.extend(part.order_violations)
    for name, count in part.mutations.items():
        total.mutations[name] = total.mutations.get(name, 0) + count


def advertised_versions(host: str, port: int) -> dict[ApiKey, VersionRange]:
    """The broker's ApiVersions answer, as ranges by known API key."""
    conn = _Connection(host, port, 30.0)
    try:
        body = _request(conn, ApiKey.API_VERSIONS, 0, 1, {})
    finally:
        conn.close()
    return {
        ApiKey(entry["api_key"]): VersionRange(entry["min_version"], entry["max_version"])
        for entry in body["api_keys"]
        if entry["api_key"] in ApiKey._value2member_map_
    }


def read_rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"no VmRSS for process {pid}")

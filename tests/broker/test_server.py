"""The server's per-connection scheduling (``broker/server.py``): a read's requests are handled
at most ``MAX_REQUESTS_PER_TURN`` per turn of the event loop, the connection is not read while
the rest waits, responses still go out in request order, and other connections are served in
between — one client's pipelined burst does not hold up the others. Small responses are held
until the end of the loop's pass and then written, one write per connection, before anything
else the connection writes or its close.

Connections are ``KafkaProtocol`` objects on a started broker, fed bytes through a recording
transport (no sockets), so what each call did is observable exactly.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.broker.server import MAX_REQUESTS_PER_TURN, KafkaProtocol
from odradek.net.sendfile import SENDFILE_MIN_BYTES
from odradek.protocol import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

TOPIC = "crowd"
BURST = 5 * MAX_REQUESTS_PER_TURN + 3
DEADLINE_S = 10.0


class RecordingTransport:
    """Records writes and whether reading is paused."""

    def __init__(self) -> None:
        self.written = b""
        self.writes = 0
        self.paused = False
        self.pauses = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after the close"
        self.written += data
        self.writes += 1

    def pause_reading(self) -> None:
        assert not self.paused
        self.paused = True
        self.pauses += 1

    def resume_reading(self) -> None:
        assert self.paused
        self.paused = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def responses(self) -> list[tuple[int, bytes]]:
        """(correlation id, payload) of every whole response frame written so far."""
        out, position = [], 0
        while position + 4 <= len(self.written):
            (size,) = struct.unpack_from(">i", self.written, position)
            payload = self.written[position + 4 : position + 4 + size]
            out.append((struct.unpack_from(">i", payload)[0], payload))
            position += 4 + size
        return out


def produce(correlation_id: int, value: bytes | None = None) -> bytes:
    record = value if value is not None else b"v%d" % correlation_id
    batch = build_batch([SimpleRecord(0, None, record)])
    fields = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30_000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return encode_request(ApiKey.PRODUCE, 7, correlation_id, "test", fields)


def metadata_request(correlation_id: int) -> bytes:
    fields = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
    return encode_request(ApiKey.METADATA, 4, correlation_id, "test", fields)


def fetch_request(correlation_id: int) -> bytes:
    partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    fields = {
        "max_wait": 0,
        "min_bytes": 1,
        "topics": [{"topic": TOPIC, "partitions": [partition]}],
        "forgotten_topics_data": [],
    }
    return encode_request(ApiKey.FETCH, 11, correlation_id, "test", fields)


class SocketTransport(RecordingTransport):
    """Writes into one end of a socket pair and hands that socket to ``sendfile``, so bytes
    written and bytes sent from a file arrive at the other end in the order they left."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock

    def write(self, data: bytes) -> None:
        super().write(data)
        self.sock.sendall(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.sock if name == "socket" else super().get_extra_info(name, default)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass


def read_responses(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """``count`` response frames read from ``sock``: (correlation id, payload) each."""
    out = []
    with sock.makefile("rb") as stream:
        for _ in range(count):
            (size,) = struct.unpack(">i", stream.read(4))
            payload = stream.read(size)
            assert len(payload) == size, "the connection ended early"
            out.append((struct.unpack_from(">i", payload)[0], payload))
    return out


def base_offset(payload: bytes) -> int:
    _, body = decode_response(ApiKey.PRODUCE, 7, payload)
    partition = body["responses"][0]["partition_responses"][0]
    assert partition["error_code"] == 0
    offset: int = partition["base_offset"]
    return offset


def run(tmp_path: Path, scenario: Callable[[BrokerApp], Awaitable[None]]) -> None:
    async def main() -> None:
        config = BrokerConfig.from_mapping(
            {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}
        )
        app = BrokerApp(config)
        await app.start()
        try:
            assert app.topics is not None
            app.topics.create_topic(TOPIC, 1)
            await scenario(app)
        finally:
            await app.stop()

    asyncio.run(main())


def connect(app: BrokerApp) -> tuple[KafkaProtocol, RecordingTransport]:
    assert app.server is not None
    protocol = KafkaProtocol(app.server)
    transport = RecordingTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


async def wait_for(condition: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + DEADLINE_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0)


def test_a_pipelined_burst_is_handled_in_turns_and_answered_in_order(tmp_path: Path) -> None:
    async def scenario(app: BrokerApp) -> None:
        busy, busy_transport = connect(app)
        busy.data_received(b"".join(produce(cid) for cid in range(1, BURST + 1)))
        # Only the first turn's share is handled at once (its answers held for the end of
        # the pass); the socket is not read meanwhile.
        assert busy_transport.written == b""
        assert busy_transport.paused
        assert busy.busy
        # A fresh connection's request is answered in the same pass, ahead of the waiting
        # ones: the pass ends, both connections write, and only then the next turn comes.
        fresh, fresh_transport = connect(app)
        fresh.data_received(metadata_request(77))
        await asyncio.sleep(0)
        assert [cid for cid, _ in fresh_transport.responses()] == [77]
        assert [cid for cid, _ in busy_transport.responses()] == list(
            range(1, MAX_REQUESTS_PER_TURN + 1)
        )
        assert busy_transport.writes == 1

        await wait_for(lambda: len(busy_transport.responses()) == BURST)
        answered = busy_transport.responses()
        assert [cid for cid, _ in answered] == list(range(1, BURST + 1))
        assert [base_offset(payload) for _, payload in answered] == list(range(BURST))
        assert not busy_transport.paused
        assert not busy.busy

    run(tmp_path, scenario)


def test_two_bursting_connections_take_turns(tmp_path: Path) -> None:
    async def scenario(app: BrokerApp) -> None:
        first, first_transport = connect(app)
        second, second_transport = connect(app)
        first.data_received(b"".join(produce(cid) for cid in range(1, BURST + 1)))
        second.data_received(b"".join(produce(cid) for cid in range(1, BURST + 1)))
        await wait_for(lambda: len(first_transport.responses()) == BURST)
        # Round robin: when the first is done the second is within a turn or two of done
        # (handled one after the other, it would still be at its first turn's share).
        assert len(second_transport.responses()) >= BURST - 2 * MAX_REQUESTS_PER_TURN
        await wait_for(lambda: len(second_transport.responses()) == BURST)
        offsets = sorted(
            base_offset(payload)
            for transport in (first_transport, second_transport)
            for _, payload in transport.responses()
        )
        assert offsets == list(range(2 * BURST))

    run(tmp_path, scenario)


def test_a_connection_lost_with_requests_waiting_handles_none_of_them(tmp_path: Path) -> None:
    async def scenario(app: BrokerApp) -> None:
        busy, busy_transport = connect(app)
        busy.data_received(b"".join(produce(cid) for cid in range(1, BURST + 1)))
        busy.connection_lost(None)
        for _ in range(3 * BURST):
            await asyncio.sleep(0)
        assert len(busy_transport.responses()) == MAX_REQUESTS_PER_TURN
        assert not busy.busy
        # Only the first turn's records were appended.
        assert app.ctx is not None
        partition = app.ctx.replicas.get(TopicPartition(TOPIC, 0))
        assert partition is not None
        assert partition.log.log_end_offset == MAX_REQUESTS_PER_TURN

    run(tmp_path, scenario)


def test_the_responses_of_a_pass_leave_after_it_one_write_per_connection(tmp_path: Path) -> None:
    async def scenario(app: BrokerApp) -> None:
        connections = [connect(app) for _ in range(3)]
        for index, (protocol, _) in enumerate(connections):
            cids = range(10 * index, 10 * index + 3)
            protocol.data_received(b"".join(metadata_request(cid) for cid in cids))
        # Served (nothing waits its turn), written by none yet.
        for protocol, transport in connections:
            assert transport.written == b""
            assert protocol.busy
        await asyncio.sleep(0)
        for index, (protocol, transport) in enumerate(connections):
            assert transport.writes == 1
            assert [cid for cid, _ in transport.responses()] == [10 * index + c for c in range(3)]
            assert not protocol.busy

    run(tmp_path, scenario)


def test_held_responses_go_before_records_sent_from_the_file(tmp_path: Path) -> None:
    async def scenario(app: BrokerApp) -> None:
        assert app.server is not None
        ours, theirs = socket.socketpair()
        try:
            ours.setblocking(False)
            theirs.settimeout(DEADLINE_S)
            protocol = KafkaProtocol(app.server)
            transport = SocketTransport(ours)
            protocol.connection_made(transport)  # type: ignore[arg-type]
            protocol.data_received(produce(1, value=b"x" * SENDFILE_MIN_BYTES))
            await asyncio.sleep(0)
            # Two reads in one pass: a Metadata answer (held for the end of the pass), then a
            # Fetch answer whose records go out with sendfile: the held answer goes first.
            protocol.data_received(metadata_request(2))
            protocol.data_received(fetch_request(3))
            await wait_for(lambda: not protocol.busy)
            received = await asyncio.to_thread(read_responses, theirs, 3)
            assert [cid for cid, _ in received] == [1, 2, 3]
            _, fetched = decode_response(ApiKey.FETCH, 11, received[2][1])
            records = fetched["responses"][0]["partitions"][0]["records"]
            assert len(records) > SENDFILE_MIN_BYTES
        finally:
            ours.close()
            theirs.close()

    run(tmp_path, scenario)


def test_held_responses_go_before_the_close(tmp_path: Path) -> None:
    async def scenario(app: BrokerApp) -> None:
        graceful, graceful_transport = connect(app)
        aborted, aborted_transport = connect(app)
        graceful.data_received(metadata_request(5))
        aborted.data_received(metadata_request(6))
        graceful.close(after_writes=True)
        aborted.close()
        assert [cid for cid, _ in graceful_transport.responses()] == [5]
        assert [cid for cid, _ in aborted_transport.responses()] == [6]
        assert graceful_transport.closed
        assert aborted_transport.closed
        await asyncio.sleep(0)  # the pass's callback finds nothing more to write
        assert graceful_transport.writes == aborted_transport.writes == 1

    run(tmp_path, scenario)

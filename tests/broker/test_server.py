"""The server's per-connection scheduling (``broker/server.py``): a read's requests are handled
at most ``MAX_REQUESTS_PER_TURN`` per turn of the event loop, the connection is not read while
the rest waits, responses still go out in request order, and other connections are served in
between — one client's pipelined burst does not hold up the others.

Connections are ``KafkaProtocol`` objects on a started broker, fed bytes through a recording
transport (no sockets), so what each call did is observable exactly.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.broker.server import MAX_REQUESTS_PER_TURN, KafkaProtocol
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
        self.paused = False
        self.pauses = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written += data

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


def produce(correlation_id: int) -> bytes:
    batch = build_batch([SimpleRecord(0, None, b"v%d" % correlation_id)])
    fields = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30_000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return encode_request(ApiKey.PRODUCE, 7, correlation_id, "test", fields)


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
        # Only the first turn's share is handled at once; the socket is not read meanwhile.
        assert [cid for cid, _ in busy_transport.responses()] == list(
            range(1, MAX_REQUESTS_PER_TURN + 1)
        )
        assert busy_transport.paused
        assert busy.busy
        # A fresh connection's request is answered at once, ahead of the waiting ones.
        fresh, fresh_transport = connect(app)
        metadata = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
        fresh.data_received(encode_request(ApiKey.METADATA, 4, 77, "fresh", metadata))
        assert [cid for cid, _ in fresh_transport.responses()] == [77]
        assert len(busy_transport.responses()) == MAX_REQUESTS_PER_TURN

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

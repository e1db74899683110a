"""``broker_frames``: frames come out whole and byte for byte however the stream is cut —
driven chunk by chunk through the protocol's own calls (``get_buffer`` / ``buffer_updated``,
as a transport makes them), then over real 127.0.0.1 sockets on asyncio's loop and on uvloop
through ``BrokerConnection.exchange``. A frame larger than the scratch buffer is read into
its own buffer (``direct_reads``); a size out of bounds, or a peer that hangs up mid-frame,
fails the read; frames nobody takes pause the transport."""

from __future__ import annotations

import asyncio
import os
import random
import struct
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from odradek.broker.broker_connection import BrokerConnection, BrokerUnavailableError
from odradek.broker.broker_frames import MAX_QUEUED_FRAMES, SCRATCH_BYTES, FrameProtocol
from odradek.errors import ProtocolError


class FakeTransport:
    """What ``FrameProtocol`` calls on its transport, recorded."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.aborted = False
        self.closed = False
        self.reading = True

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _feed(protocol: FrameProtocol, data: bytes, cuts: list[int]) -> None:
    """Delivers ``data`` as a transport would: into the buffers the protocol hands out, in
    reads no longer than the next cut (and no longer than the buffer offered)."""
    position = 0
    for cut in [*cuts, len(data)]:
        while position < min(cut, len(data)):
            buffer = protocol.get_buffer(-1)
            count = min(len(buffer), cut - position)
            assert count > 0
            buffer[:count] = data[position : position + count]
            protocol.buffer_updated(count)
            position += count


def _run(coroutine: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(coroutine())


def _protocol(max_frame_bytes: int = 16 << 20) -> tuple[FrameProtocol, FakeTransport]:
    protocol = FrameProtocol(max_frame_bytes)
    transport = FakeTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


@pytest.mark.parametrize("seed", range(8))
def test_frames_come_out_whole_however_the_stream_is_cut(seed: int) -> None:
    generator = random.Random(seed)
    sizes = [4, 5, 100, SCRATCH_BYTES - 4, SCRATCH_BYTES, SCRATCH_BYTES + 7, 3 * SCRATCH_BYTES]
    generator.shuffle(sizes)
    payloads = [generator.randbytes(size) for size in sizes]
    stream = b"".join(_framed(payload) for payload in payloads)
    cuts = sorted(generator.sample(range(1, len(stream)), 40))

    async def scenario() -> None:
        protocol, _ = _protocol()
        _feed(protocol, stream, cuts)
        for payload in payloads:
            frame = await protocol.read_frame()
            assert bytes(frame) == payload
        assert protocol.direct_reads > 0  # the large frames were read into their own buffer

    _run(scenario)


@pytest.mark.parametrize("header_bytes", [1, 2, 3])
def test_a_size_cut_after_whole_frames_is_kept_for_the_next_read(header_bytes: int) -> None:
    payloads = [b"first", b"second", os.urandom(2 * SCRATCH_BYTES)]
    stream = b"".join(_framed(payload) for payload in payloads)
    cut = len(_framed(b"first")) + len(_framed(b"second")) + header_bytes

    async def scenario() -> None:
        protocol, _ = _protocol()
        _feed(protocol, stream, [cut])
        assert [bytes(await protocol.read_frame()) for _ in payloads] == payloads

    _run(scenario)


@pytest.mark.parametrize("size", [10, 2 * SCRATCH_BYTES])
def test_frames_nobody_reads_pause_the_transport_until_one_is_taken(size: int) -> None:
    payloads = [os.urandom(size) for _ in range(MAX_QUEUED_FRAMES)]

    async def scenario() -> None:
        protocol, transport = _protocol()
        _feed(protocol, _framed(payloads[0]), [])
        assert transport.reading
        _feed(protocol, _framed(payloads[1]), [])
        assert not transport.reading  # answers never asked for stop being read
        assert bytes(await protocol.read_frame()) == payloads[0]
        assert transport.reading
        assert bytes(await protocol.read_frame()) == payloads[1]

    _run(scenario)


def test_a_reader_waiting_is_woken_by_the_frame() -> None:
    async def scenario() -> None:
        protocol, _ = _protocol()
        reading = asyncio.ensure_future(protocol.read_frame())
        await asyncio.sleep(0)
        assert not reading.done()
        payload = os.urandom(2 * SCRATCH_BYTES)
        _feed(protocol, _framed(payload), [3, 10, SCRATCH_BYTES])
        assert bytes(await asyncio.wait_for(reading, 5)) == payload

    _run(scenario)


@pytest.mark.parametrize("size", [-1, 0, 3, 1001])
def test_a_size_out_of_bounds_fails_the_read_and_aborts(size: int) -> None:
    async def scenario() -> None:
        protocol, transport = _protocol(max_frame_bytes=1000)
        _feed(protocol, struct.pack(">i", size) + bytes(8), [])
        with pytest.raises(ProtocolError, match="out of bounds"):
            await protocol.read_frame()
        assert transport.aborted

    _run(scenario)


def test_a_hang_up_mid_frame_fails_the_read() -> None:
    async def scenario() -> None:
        protocol, _ = _protocol()
        _feed(protocol, _framed(b"whole"), [])
        _feed(protocol, _framed(os.urandom(3 * SCRATCH_BYTES))[: 2 * SCRATCH_BYTES], [])
        protocol.connection_lost(None)
        assert bytes(await protocol.read_frame()) == b"whole"  # what came whole is kept
        with pytest.raises(ConnectionResetError):
            await protocol.read_frame()
        with pytest.raises(ConnectionResetError):
            protocol.write(b"more")

    _run(scenario)


# --- over sockets ------------------------------------------------------------------------------


def _loops() -> list[Any]:
    return [
        pytest.param(asyncio.new_event_loop, id="asyncio"),
        pytest.param(uvloop.new_event_loop, id="uvloop"),  # the broker's loop
    ]


async def _echo_server(answers: list[bytes]) -> tuple[asyncio.Server, int]:
    """Answers each request frame with the next of ``answers`` (its correlation id patched
    in), written in small pieces; hangs up when none is left."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for answer in answers:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                request = await reader.readexactly(size)
                reply = _framed(request[4:8] + answer)
                for start in range(0, len(reply), 50_000):
                    writer.write(reply[start : start + 50_000])
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@pytest.mark.parametrize("new_loop", _loops())
def test_answers_arrive_byte_for_byte_over_a_socket(new_loop: Callable[[], Any]) -> None:
    answers = [os.urandom(size) for size in (0, 10, 3 << 20, SCRATCH_BYTES, 1 << 20)]

    async def scenario() -> None:
        server, port = await _echo_server(answers)
        connection = BrokerConnection("test", timeout_s=10, max_response_bytes=8 << 20)
        try:
            for answer in answers:
                frame = await connection.exchange(
                    "127.0.0.1",
                    port,
                    lambda c: _framed(struct.pack(">hhi", 1, 11, c) + b"\x00\x00"),
                )
                assert bytes(frame[4:]) == answer
            assert connection.connects == 1
            with pytest.raises(BrokerUnavailableError):  # the server hung up
                await connection.exchange(
                    "127.0.0.1", port, lambda c: _framed(struct.pack(">hhi", 1, 11, c))
                )
        finally:
            await connection.aclose()
            server.close()
            await server.wait_closed()

    loop = new_loop()
    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()

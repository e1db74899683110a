"""``BrokerConnection`` against a small asyncio server on 127.0.0.1 (port 0): answers come back
decoded over one kept connection; a peer that hangs up, answers with another correlation id or
announces an oversized frame fails the request with BrokerUnavailableError, and the next
request connects again."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

import pytest

from odradek.broker.broker_connection import BrokerConnection, BrokerUnavailableError
from odradek.protocol import ApiKey
from odradek.protocol.builder import build_response
from odradek.protocol.codec import encode_response
from odradek.protocol.header import response_header_version

KEY, VERSION = ApiKey.OFFSET_FOR_LEADER_EPOCH, 3
FIELDS = {"replica_id": 1, "topics": [{"topic": "t", "partitions": []}]}

#: How the server answers request number n (0-based) with correlation id c: bytes to send,
#: or None to hang up.
Behaviour = Callable[[int, int], bytes | None]


def _answer(correlation_id: int) -> bytes:
    body = build_response(
        KEY, VERSION, {"throttle_time": 0, "topics": [{"topic": "t", "partitions": []}]}
    )
    return encode_response(response_header_version(KEY, VERSION), correlation_id, body)


async def _serve(behaviour: Behaviour) -> tuple[asyncio.Server, int]:
    count = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                (correlation_id,) = struct.unpack_from(">i", frame, 4)
                reply = behaviour(count, correlation_id)
                count += 1
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _run(behaviour: Behaviour, requests: int) -> tuple[list[object], int]:
    async def scenario() -> tuple[list[object], int]:
        server, port = await _serve(behaviour)
        connection = BrokerConnection("test", timeout_s=5)
        outcomes: list[object] = []
        try:
            for _ in range(requests):
                try:
                    outcomes.append(
                        await connection.request("127.0.0.1", port, KEY, VERSION, FIELDS)
                    )
                except BrokerUnavailableError as error:
                    outcomes.append(error)
        finally:
            connection.close()
            server.close()
            await server.wait_closed()
        return outcomes, connection.connects

    return asyncio.run(scenario())


def test_answers_come_back_over_one_kept_connection() -> None:
    outcomes, connects = _run(lambda n, c: _answer(c), 3)
    assert all(isinstance(o, dict) and o["topics"][0]["topic"] == "t" for o in outcomes)
    assert connects == 1


@pytest.mark.parametrize(
    "bad",
    [
        lambda c: None,  # hangs up
        lambda c: _answer(c + 1),  # another correlation id
        lambda c: struct.pack(">i", 1 << 30),  # an oversized frame
        lambda c: _answer(c)[:-1][:6],  # a truncated frame, then a hang-up
    ],
)
def test_a_bad_answer_fails_the_request_and_the_next_one_reconnects(
    bad: Callable[[int], bytes | None],
) -> None:
    def behaviour(n: int, c: int) -> bytes | None:
        if n == 0:
            reply = bad(c)
            return None if reply is None or len(reply) < 8 else reply
        return _answer(c)

    outcomes, connects = _run(behaviour, 2)
    assert isinstance(outcomes[0], BrokerUnavailableError)
    assert isinstance(outcomes[1], dict)
    assert connects == 2


def test_nobody_listening_is_unavailable() -> None:
    async def scenario() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(BrokerUnavailableError):
            await BrokerConnection("test", timeout_s=5).request(
                "127.0.0.1", port, KEY, VERSION, FIELDS
            )

    asyncio.run(scenario())

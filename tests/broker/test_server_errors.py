"""The server's error paths without sockets: a response whose records cannot be read closes
that connection with one WARNING line, and raises nothing into the event loop."""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from typing import Any

import pytest

from odradek.broker.router import Router
from odradek.broker.server import BrokerServer, KafkaProtocol
from odradek.protocol import RecordsSlot
from odradek.storage.file_records import FileSlice


class FakeTransport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else None


def closed_fd() -> int:
    with tempfile.TemporaryFile() as file:
        file.write(b"x" * 100)
        file.flush()
        fd = os.dup(file.fileno())
    os.close(fd)
    return fd


@pytest.mark.parametrize("length", [10, 200])
def test_records_that_cannot_be_read_close_the_connection_with_a_warning(
    caplog: pytest.LogCaptureFixture, length: int
) -> None:
    async def scenario() -> FakeTransport:
        server = BrokerServer(None, Router({}), "127.0.0.1", 0, 1 << 20)  # type: ignore[arg-type]
        protocol = KafkaProtocol(server)
        transport = FakeTransport()
        protocol.connection_made(transport)  # type: ignore[arg-type]
        with tempfile.TemporaryFile() as file:
            file.write(b"x" * 100)
            file.flush()
            # A closed fd (EBADF), or a slice past the end of the file (a short read).
            fd = closed_fd() if length == 10 else file.fileno()
            slot = RecordsSlot("t", 0, FileSlice(fd, 0, length), length)
            protocol._write([b"head", slot, b"tail"])
        return transport

    with caplog.at_level(logging.INFO, logger="odradek"):
        transport = asyncio.run(scenario())
    assert transport.aborted
    assert transport.written == []
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "cannot read records for 127.0.0.1:5555" in warnings[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

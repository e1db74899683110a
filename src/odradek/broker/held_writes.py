"""Responses held until the end of the event loop's pass (``EndOfPassWrites``): the server's
connections hold their small responses while a pass serves its reads, and each writes what
it holds, in one write, once the pass is over.

Why: on loopback the kernel runs the receiving client's wake-up inside the server's
``write``, and waking a process on an idle core costs the server an inter-processor
interrupt (on a virtual machine, a VM exit). Written back to back, the responses to one client
process's connections wake it once per pass instead of once per response: at 50 and 200
producer connections on a 2-core VM the server's system time per request fell from 11-16 µs
to 4-5 µs, and its requests/s rose by half (``bench/many_clients.py``;
``docs/architecture.md``). Redis writes its replies before its loop sleeps for the same reason.
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class HoldsWrites(Protocol):
    """A connection that holds responses until ``write_held``."""

    def write_held(self) -> None: ...


class EndOfPassWrites:
    """The connections holding responses in the current pass of the loop."""

    def __init__(self) -> None:
        self._holding: list[HoldsWrites] = []

    def hold(self, connection: HoldsWrites, loop: asyncio.AbstractEventLoop) -> None:
        """Registers ``connection``, which holds its first response of this pass: every
        connection registered in the pass writes once the pass is over, by one callback
        scheduled with the first (asyncio and uvloop run a callback scheduled during a pass in
        the next one, after every read the pass delivered was served)."""
        holding = self._holding
        if not holding:
            loop.call_soon(self._write_held)
        holding.append(connection)

    def _write_held(self) -> None:
        holding = self._holding
        self._holding = []
        for connection in holding:
            connection.write_held()

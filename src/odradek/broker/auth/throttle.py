"""What handlers and the server call to enforce client quotas (``broker.auth.quotas``).

Produce counts the request's bytes against ``producer_byte_rate``, a consumer's Fetch its
response's record bytes against ``consumer_byte_rate``, the server each handler's time
against ``request_percentage``; each gets the throttle time to put in
its response's ``throttle_time_ms`` (KIP-219: the response goes out at once). After writing a
response the server asks ``mute_ms`` how long to stop reading the connection. The quota
holder is (the principal's name, the request's client id). With no quota set anywhere each
call is one attribute test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.broker.auth.quotas import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE
from odradek.broker.principal import CLIENT_PRINCIPAL
from odradek.protocol import Request

if TYPE_CHECKING:
    from odradek.broker.context import BrokerContext

__all__ = ["fetch_throttle_ms", "mute_ms", "produce_throttle_ms", "record_request_time"]


def produce_throttle_ms(ctx: BrokerContext, request: Request) -> int:
    """Counts a Produce request's size; its throttle time (0: none)."""
    quotas = ctx.quotas
    if quotas is None or not quotas.active:
        return 0
    return quotas.record(
        PRODUCER_BYTE_RATE,
        CLIENT_PRINCIPAL.get().name,
        request.header.client_id or "",
        request.frame_size,
        ctx.clock.monotonic_ms(),
    )


def fetch_throttle_ms(ctx: BrokerContext, request: Request, size: int) -> int:
    """Counts a consumer Fetch response's record bytes; its throttle time (0: none)."""
    quotas = ctx.quotas
    if quotas is None or not quotas.active:
        return 0
    return quotas.record(
        CONSUMER_BYTE_RATE,
        CLIENT_PRINCIPAL.get().name,
        request.header.client_id or "",
        size,
        ctx.clock.monotonic_ms(),
    )


def mute_ms(ctx: BrokerContext, request: Request) -> int:
    """How long the connection that sent ``request`` is muted after its response."""
    quotas = ctx.quotas
    if quotas is None or not quotas.active:
        return 0
    return quotas.mute_ms(
        CLIENT_PRINCIPAL.get().name, request.header.client_id or "", ctx.clock.monotonic_ms()
    )


def record_request_time(ctx: BrokerContext, request: Request, elapsed_ns: int) -> None:
    """Counts the time a handler took against ``request_percentage`` (its throttle shows in
    ``mute_ms``)."""
    quotas = ctx.quotas
    if quotas is None or not quotas.request_time_active:
        return
    quotas.record(
        REQUEST_PERCENTAGE,
        CLIENT_PRINCIPAL.get().name,
        request.header.client_id or "",
        elapsed_ns / 1e6,
        ctx.clock.monotonic_ms(),
    )

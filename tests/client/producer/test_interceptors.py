"""``producer.interceptors``: the chain runs in order, and an interceptor's exception is logged
with context and never stops the chain or the send (Java's ProducerInterceptors rule)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest

from odradek.client.producer.interceptors import ProducerInterceptors, resolve_interceptors
from odradek.client.producer.record import ProducerRecord, RecordMetadata
from odradek.errors import ConfigError

METADATA = RecordMetadata("t", 1, 5, 1000, -1, 3)


class Tagger:
    def __init__(self, tag: str = "x") -> None:
        self.tag = tag
        self.acks: list[tuple[RecordMetadata, BaseException | None]] = []
        self.closed = 0

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return dataclasses.replace(record, headers=(*record.headers, (self.tag, b"1")))

    def on_acknowledgement(self, metadata: RecordMetadata, exception: BaseException | None) -> None:
        self.acks.append((metadata, exception))

    def close(self) -> None:
        self.closed += 1


class Broken:
    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        raise RuntimeError("on_send is broken")

    def on_acknowledgement(self, metadata: RecordMetadata, exception: BaseException | None) -> None:
        raise RuntimeError("on_acknowledgement is broken")

    def close(self) -> None:
        raise RuntimeError("close is broken")


class ReturnsNone:
    def on_send(self, record: ProducerRecord) -> Any:
        return None


def test_chain_runs_in_order() -> None:
    first, second = Tagger("a"), Tagger("b")
    chain = ProducerInterceptors([first, second])
    record = chain.on_send(ProducerRecord("t", b"v"))
    assert record.headers == (("a", b"1"), ("b", b"1"))
    chain.on_acknowledgement(METADATA, None)
    assert first.acks == second.acks == [(METADATA, None)]
    chain.close()
    assert first.closed == second.closed == 1


def test_errors_are_logged_and_the_chain_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    after = Tagger("after")
    chain = ProducerInterceptors([Tagger("before"), Broken(), ReturnsNone(), after])
    with caplog.at_level(logging.ERROR):
        record = chain.on_send(ProducerRecord("orders", b"v"))
        error = ValueError("delivery failed")
        chain.on_acknowledgement(METADATA, error)
        chain.close()
    # Broken and ReturnsNone were skipped: the record went on as the previous one left it.
    assert record.headers == (("before", b"1"), ("after", b"1"))
    assert after.acks == [(METADATA, error)]
    assert after.closed == 1
    messages = [r.getMessage() for r in caplog.records]
    assert any("on_send" in m and "orders" in m for m in messages)
    assert any("not a ProducerRecord" in m for m in messages)
    assert any("on_acknowledgement" in m and "t-1" in m for m in messages)
    assert any("closing interceptor" in m for m in messages)
    assert all(r.exc_info for r in caplog.records if "broken" in str(r.exc_info))


def test_resolve() -> None:
    assert not resolve_interceptors(None, {})
    assert not resolve_interceptors((), {})
    tagger = Tagger()
    chain = resolve_interceptors([tagger, Tagger], {})
    assert chain
    assert chain.has_on_acknowledgement
    configured: list[dict[str, Any]] = []

    class Configurable(Tagger):
        def configure(self, configs: dict[str, Any]) -> None:
            configured.append(configs)

    resolve_interceptors(Configurable(), {"acks": "1"})
    assert configured == [{"acks": "1"}]
    path = "odradek.client.producer.record.RecordMetadata"
    with pytest.raises(ConfigError, match="neither on_send nor on_acknowledgement"):
        resolve_interceptors(object(), {})
    with pytest.raises(ConfigError, match=r"interceptor\.classes"):
        resolve_interceptors(path + "Nope", {})

"""Producer interceptors (Java's ``ProducerInterceptor``), run as one chain.

An interceptor is any object with some of: ``on_send(record) -> record`` (called in ``send``
before serialization; it may return a changed ``ProducerRecord``),
``on_acknowledgement(metadata, exception)`` (called once per record when it is acknowledged or
fails: in the sender thread, or in ``send`` for a record refused there; keep it short),
``close()`` (called once by ``Producer.close``) and ``configure(configs)`` (called once when
the producer is built). ``interceptor.classes`` lists them (objects, classes or dotted import
paths), run in list order.

The rule this module keeps, as Java's ``ProducerInterceptors`` does: an exception raised by an
interceptor is logged with the interceptor and the topic, and the chain goes on —
``on_send`` continues with the record as it was before that interceptor. Interceptor errors
never fail a send and never reach the sender thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from odradek.client.producer._plugins import close_quietly, instantiate
from odradek.client.producer.record import ProducerRecord, RecordMetadata
from odradek.errors import ConfigError

__all__ = ["ProducerInterceptors", "resolve_interceptors"]

logger = logging.getLogger(__name__)


class ProducerInterceptors:
    """The chain of configured interceptors (possibly empty: ``bool(chain)`` is False)."""

    __slots__ = ("_interceptors", "_on_ack", "_on_send")

    def __init__(self, interceptors: Sequence[object] = ()) -> None:
        self._interceptors = tuple(interceptors)
        self._on_send = [i for i in self._interceptors if callable(getattr(i, "on_send", None))]
        self._on_ack = [
            i for i in self._interceptors if callable(getattr(i, "on_acknowledgement", None))
        ]

    def __bool__(self) -> bool:
        return bool(self._interceptors)

    @property
    def has_on_acknowledgement(self) -> bool:
        return bool(self._on_ack)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        """``record`` passed through every ``on_send`` (see the module docstring)."""
        for interceptor in self._on_send:
            try:
                changed = interceptor.on_send(record)  # type: ignore[attr-defined]
            except Exception:
                logger.exception(
                    "interceptor %r raised in on_send for a record to %s; "
                    "continuing with the record unchanged",
                    interceptor,
                    record.topic,
                )
                continue
            if not isinstance(changed, ProducerRecord):
                logger.error(
                    "interceptor %r returned %r from on_send for a record to %s, not a "
                    "ProducerRecord; continuing with the record unchanged",
                    interceptor,
                    type(changed).__name__,
                    record.topic,
                )
                continue
            record = changed
        return record

    def on_acknowledgement(self, metadata: RecordMetadata, exception: BaseException | None) -> None:
        """Calls every ``on_acknowledgement``, logging (never raising) their exceptions."""
        for interceptor in self._on_ack:
            try:
                interceptor.on_acknowledgement(metadata, exception)  # type: ignore[attr-defined]
            except Exception:
                logger.exception(
                    "interceptor %r raised in on_acknowledgement for a record to %s-%d",
                    interceptor,
                    metadata.topic,
                    metadata.partition,
                )

    def close(self) -> None:
        """Closes every interceptor once, logging what a ``close`` raises."""
        for interceptor in self._interceptors:
            close_quietly(interceptor, f"interceptor {interceptor!r}", logger)


def resolve_interceptors(value: Any, configs: Mapping[str, Any]) -> ProducerInterceptors:
    """The chain ``interceptor.classes`` configures (a list, or a comma-separated string of
    import paths), each one's ``configure(configs)`` called if it has one.

    Raises:
        ConfigError: an unimportable path, or an item with neither ``on_send`` nor
            ``on_acknowledgement``.
        Exception: whatever a constructor or ``configure`` raises.
    """
    if value is None:
        items: Iterable[Any] = ()
    elif isinstance(value, str):
        items = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, list | tuple):
        items = value
    else:
        items = [value]
    interceptors = []
    for item in items:
        interceptor = instantiate(item, "interceptor.classes", {})
        if not any(
            callable(getattr(interceptor, name, None)) for name in ("on_send", "on_acknowledgement")
        ):
            raise ConfigError(
                f"interceptor.classes: {item!r} has neither on_send nor on_acknowledgement"
            )
        configure = getattr(interceptor, "configure", None)
        if callable(configure):
            configure(dict(configs))
        interceptors.append(interceptor)
    return ProducerInterceptors(interceptors)

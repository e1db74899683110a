"""Values a ``MessageStream`` hands out: ``MessageAndMetadata``, and ``ConsumerTimeoutError``.

``MessageAndMetadata`` is the classic high-level consumer's name for one record with where it
came from. It is a named tuple (one is built per record handed out): topic, partition, offset,
key, message (the value, after the value deserializer; ``value`` is an alias), timestamp (ms),
headers (``(str, bytes | None)`` pairs).
"""

from __future__ import annotations

from typing import NamedTuple

from odradek.client.consumer import ConsumerRecord
from odradek.errors import KafkaTimeoutError
from odradek.records.record import Header

__all__ = ["ConsumerTimeoutError", "MessageAndMetadata"]


class MessageAndMetadata(NamedTuple):
    """One record as a ``MessageStream`` yields it (see the module docstring)."""

    topic: str
    partition: int
    offset: int
    key: object
    message: object
    timestamp: int
    headers: tuple[Header, ...]

    @property
    def value(self) -> object:
        """The record's value (the same as ``message``)."""
        return self.message

    @classmethod
    def from_record(cls, record: ConsumerRecord) -> MessageAndMetadata:
        return cls(
            record.topic,
            record.partition,
            record.offset,
            record.key,
            record.value,
            record.timestamp,
            record.headers,
        )


class ConsumerTimeoutError(KafkaTimeoutError):
    """No message reached a ``MessageStream`` within ``consumer.timeout.ms``.

    As in the classic API the stream is still usable: iterating it again waits again.
    """

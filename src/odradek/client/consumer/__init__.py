"""The Kafka consumer: ``Consumer`` (facade), with its parts one module each.

``config`` (keys and settings), ``record`` (``ConsumerRecord``, ``OffsetAndMetadata``, errors),
``deserializers``, ``decoder`` (Fetch bytes to records), ``subscription`` (assignment and
positions), ``network_thread`` (a thread owning a NetworkClient), ``fetcher`` (prefetch and
the poll buffer), ``coordinator`` (group membership, heartbeats, commits), ``consumer``.
"""

from odradek._types import TopicPartition
from odradek.client.consumer.consumer import Consumer
from odradek.client.consumer.record import (
    CommitFailedError,
    ConsumerRecord,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
)

__all__ = [
    "CommitFailedError",
    "Consumer",
    "ConsumerRecord",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "TopicPartition",
]

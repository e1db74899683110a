"""odradek: a Kafka-compatible distributed commit log in Python.

The public API is re-exported here as it grows; code inside the package never imports from
the package root (STYLE.md rule 3).
"""

from odradek._version import __version__
from odradek.broker.embedded import Broker
from odradek.client import AdminClient, NewTopic, SimpleConsumer
from odradek.client.consumer import Consumer, ConsumerRecord, OffsetAndMetadata, TopicPartition
from odradek.client.producer import Producer, ProducerRecord, RecordMetadata
from odradek.client.streams import (
    Blacklist,
    ConsumerConnector,
    ConsumerTimeoutError,
    MessageAndMetadata,
    MessageStream,
    TopicFilter,
    Whitelist,
)

__all__ = [
    "AdminClient",
    "Blacklist",
    "Broker",
    "Consumer",
    "ConsumerConnector",
    "ConsumerRecord",
    "ConsumerTimeoutError",
    "MessageAndMetadata",
    "MessageStream",
    "NewTopic",
    "OffsetAndMetadata",
    "Producer",
    "ProducerRecord",
    "RecordMetadata",
    "SimpleConsumer",
    "TopicFilter",
    "TopicPartition",
    "Whitelist",
    "__version__",
]

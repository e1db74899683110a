"""odradek: a Kafka-compatible distributed commit log in Python.

The public API is re-exported here as it grows; code inside the package never imports from
the package root (STYLE.md rule 3).
"""

from odradek._version import __version__
from odradek.broker.embedded import Broker
from odradek.client import AdminClient, NewTopic, SimpleConsumer
from odradek.client.consumer import Consumer, ConsumerRecord, OffsetAndMetadata, TopicPartition
from odradek.client.producer import Producer, ProducerRecord, RecordMetadata

__all__ = [
    "AdminClient",
    "Broker",
    "Consumer",
    "ConsumerRecord",
    "NewTopic",
    "OffsetAndMetadata",
    "Producer",
    "ProducerRecord",
    "RecordMetadata",
    "SimpleConsumer",
    "TopicPartition",
    "__version__",
]

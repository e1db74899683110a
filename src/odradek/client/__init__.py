"""odradek's Python Kafka clients: ``admin`` (``AdminClient``, over its ``admin_*`` parts),
``simple_consumer``, and the packages ``producer``, ``consumer``, ``streams`` (the classic
high-level consumer) and ``assignors``; every client is a ``closeable.Closeable``.

Layers inside (each module's docstring states its contract): ``config`` (settings by Kafka
name), ``network`` / ``connection`` (non-blocking pipelined connections, one owner thread),
``codecs`` (the request/response codec seam), ``cluster`` (metadata), then the clients.
"""

from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from odradek.client.config import ClientConfig
from odradek.client.simple_consumer import FetchRequest, Message, SimpleConsumer

__all__ = [
    "AdminClient",
    "AlterConfigOp",
    "AlterConfigOpType",
    "ClientConfig",
    "ConfigResource",
    "ConfigResourceType",
    "FetchRequest",
    "Message",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "SimpleConsumer",
    "TopicPartition",
]

"""The classic high-level consumer API: ``ConsumerConnector`` and its ``MessageStream``s.

Parts, one module each: ``config`` (the connector's keys), ``filters`` (``Whitelist`` /
``Blacklist``), ``message`` (``MessageAndMetadata``, ``ConsumerTimeoutError``), ``router``
(one stream per partition), ``stream`` (a bounded, blocking iterator), ``connector`` (the
facade and its poll thread); with ``zookeeper.connect``, the group is coordinated through
ZooKeeper as legacy Kafka did: ``zk_assignment`` (pure), ``zookeeper`` (the group's nodes),
``zk_coordinator`` (the rebalance).
"""

from odradek.client.streams.connector import ConsumerConnector
from odradek.client.streams.filters import Blacklist, TopicFilter, Whitelist
from odradek.client.streams.message import ConsumerTimeoutError, MessageAndMetadata
from odradek.client.streams.stream import MessageStream
from odradek.client.streams.zk_coordinator import (
    ConsumerIdInUseError,
    ConsumerRebalanceFailedError,
)

__all__ = [
    "Blacklist",
    "ConsumerConnector",
    "ConsumerIdInUseError",
    "ConsumerRebalanceFailedError",
    "ConsumerTimeoutError",
    "MessageAndMetadata",
    "MessageStream",
    "TopicFilter",
    "Whitelist",
]

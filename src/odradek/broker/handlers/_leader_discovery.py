"""KIP-951 leader discovery: who leads a partition this broker does not lead, for the
``current_leader`` and ``node_endpoints`` fields of Produce (v10+) and Fetch (v16+).

A partition answered NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) names the leader the
metadata cache knows, with its leader epoch, and the response lists that broker's endpoint,
so the client moves to it without a Metadata round trip, as Kafka's ``ReplicaManager`` does.
On a single broker (no cache), or while the cache knows no leader, nothing is named: the
client falls back to Metadata.
"""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.context import CLIENT_LISTENER, BrokerContext
from odradek.protocol import NodeEndpoint

NO_LEADER = (-1, -1)


class LeaderDiscovery:
    """Collects the leaders named in one response and the endpoints to send with them."""

    __slots__ = ("_ctx", "_endpoints")

    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx
        self._endpoints: dict[int, NodeEndpoint] = {}

    def current_leader(self, topic_partition: TopicPartition) -> tuple[int, int]:
        """``(leader_id, leader_epoch)`` of the partition's leader as the cache knows it, and
        remembers its endpoint; ``(-1, -1)`` when unknown."""
        cluster = self._ctx.cluster
        if cluster is None:
            return NO_LEADER
        state = cluster.cache.partition(topic_partition)
        leader = cluster.cache.leader(topic_partition, CLIENT_LISTENER.get())
        if state is None or leader is None:
            return NO_LEADER
        if leader.broker_id not in self._endpoints:
            self._endpoints[leader.broker_id] = NodeEndpoint(
                leader.broker_id, leader.host, leader.port, leader.rack
            )
        return leader.broker_id, state.leader_epoch

    @property
    def node_endpoints(self) -> list[NodeEndpoint]:
        """The endpoints of every leader named so far, by broker id."""
        return [self._endpoints[broker_id] for broker_id in sorted(self._endpoints)]

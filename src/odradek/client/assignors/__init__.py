"""Consumer group partition assignors as pure functions, and the consumer protocol's bytes.

The group leader decodes every member's subscription (``protocol.decode_subscription``), runs
the assignor the group agreed on, and encodes each member's assignment
(``protocol.encode_assignment``). Assignors are Kafka's four, by Kafka's names:

- ``range`` (``RangeAssignor``): contiguous partition ranges per topic;
- ``roundrobin`` (``RoundRobinAssignor``): all partitions dealt in turn;
- ``sticky`` (``StickyAssignor``): balanced, then as little movement as possible;
- ``cooperative-sticky`` (``CooperativeStickyAssignor``): sticky, moves revoked first (KIP-429).

Any object with ``name()`` and ``assign(partitions_per_topic, subscriptions)`` is an assignor;
``resolve`` turns configured names into instances.
"""

from odradek.client.assignors.assignor import (
    DEFAULT_GENERATION_ID,
    Assignment,
    Assignor,
    RebalanceProtocol,
    Subscription,
    sorted_members,
    subscription_user_data,
    supported_protocols,
)
from odradek.client.assignors.cooperative_sticky import CooperativeStickyAssignor
from odradek.client.assignors.protocol import (
    CONSUMER_PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from odradek.client.assignors.range import RangeAssignor
from odradek.client.assignors.registry import (
    DEFAULT_PARTITION_ASSIGNMENT_STRATEGY,
    resolve,
    resolve_all,
)
from odradek.client.assignors.roundrobin import RoundRobinAssignor
from odradek.client.assignors.sticky import StickyAssignor

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "DEFAULT_GENERATION_ID",
    "DEFAULT_PARTITION_ASSIGNMENT_STRATEGY",
    "Assignment",
    "Assignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "resolve",
    "resolve_all",
    "sorted_members",
    "subscription_user_data",
    "supported_protocols",
]

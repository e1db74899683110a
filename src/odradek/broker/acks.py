"""What a produce's ``acks`` means: the one place that reads it.

A Produce request (and the group coordinator's own appends to ``__consumer_offsets``) names
how many replicas must hold its batches before it is answered (Kafka's ``acks``):

- ``0``: no response at all; the append happens and the producer never hears of it (a
  failure closes the connection: the producer has no other way to learn);
- ``1``: answered once the leader appended, whatever the followers hold;
- ``-1`` (``all``): refused with NOT_ENOUGH_REPLICAS *before* the append while the ISR is
  smaller than the topic's ``min.insync.replicas``; otherwise answered once the high
  watermark has passed the append (every in-sync replica holds it), through the
  delayed-produce purgatory (``broker.replication.delayed_produce``) — which answers at once
  when the append already moved the high watermark (an ISR of one).

Any other value is INVALID_REQUIRED_ACKS for every partition of the request, and nothing is
appended (Kafka's ReplicaManager). Sans-I/O: values in, values or ``KafkaError`` out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from odradek.errors import ErrorCode, KafkaError

__all__ = [
    "ACKS_ALL",
    "ACKS_LEADER",
    "ACKS_NONE",
    "Acks",
    "InSyncReplicas",
    "check_enough_replicas",
    "parse_acks",
]


@dataclass(frozen=True, slots=True)
class Acks:
    """What one value of ``acks`` means (three instances: ``ACKS_NONE``, ``ACKS_LEADER``,
    ``ACKS_ALL``; slotted fields, not enum properties: read on every Produce)."""

    value: int
    #: Whether the request gets a response (acks=0 does not).
    responds: bool
    #: Whether the ISR must hold ``min.insync.replicas`` before the append, and the response
    #: waits for the high watermark to pass it (acks=all).
    waits_for_replication: bool


ACKS_NONE: Final = Acks(0, responds=False, waits_for_replication=False)
ACKS_LEADER: Final = Acks(1, responds=True, waits_for_replication=False)
ACKS_ALL: Final = Acks(-1, responds=True, waits_for_replication=True)
_BY_VALUE = {acks.value: acks for acks in (ACKS_NONE, ACKS_LEADER, ACKS_ALL)}


class InSyncReplicas(Protocol):
    """What the min.insync.replicas rule looks at on a leader partition."""

    @property
    def isr(self) -> Sequence[int]: ...
    @property
    def min_insync_replicas(self) -> int: ...


def parse_acks(value: int) -> Acks:
    """The meaning of a request's ``acks`` field.

    Raises:
        KafkaError: INVALID_REQUIRED_ACKS for anything but 0, 1 and -1.
    """
    acks = _BY_VALUE.get(value)
    if acks is None:
        raise KafkaError(
            f"acks={value}: expected 0, 1 or -1 (all)", code=ErrorCode.INVALID_REQUIRED_ACKS
        )
    return acks


def check_enough_replicas(acks: Acks, partition: InSyncReplicas) -> None:
    """The check before an append: acks=all needs ``min.insync.replicas`` in-sync replicas
    (acks=0 and 1 do not care: they still work with the leader alone).

    Raises:
        KafkaError: NOT_ENOUGH_REPLICAS.
    """
    if acks.waits_for_replication and len(partition.isr) < partition.min_insync_replicas:
        raise KafkaError(
            f"{len(partition.isr)} in-sync replicas, "
            f"min.insync.replicas is {partition.min_insync_replicas}",
            code=ErrorCode.NOT_ENOUGH_REPLICAS,
        )

"""The controller's admission of new partitions, pure: the broker's ``max.partitions``,
``max.broker.partitions`` and ``max.partitions.per.request`` (``broker.limits``) applied to
topics and partitions created through the controller of a cluster.

On a single broker the topic manager applies the three limits itself; in a cluster every
CreateTopics and CreatePartitions runs on the controller, which knows every partition, so it
applies them there, with the controller broker's values:

- ``max.partitions.per.request``: partitions one request creates, all its topics together;
  over it, every topic of the request answers POLICY_VIOLATION and nothing is created.
- ``max.partitions``: partitions in the cluster after the change.
- ``max.broker.partitions``: replicas on each broker after the change (each broker's count
  checked; the message names the broker).

A topic over either total answers POLICY_VIOLATION alone; the topics admitted before it in the
same request count against the totals of the next ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from odradek.errors import ErrorCode, KafkaError

_MAX_INT = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PartitionLimits:
    """The three limits, with the broker's defaults (``broker.limits.BrokerLimits``)."""

    max_partitions: int = _MAX_INT
    max_broker_partitions: int = 100_000
    max_partitions_per_request: int = 10_000


def check_request_partitions(requested: int, limits: PartitionLimits) -> None:
    """Refuses a request creating more than ``max.partitions.per.request`` partitions.

    Raises:
        KafkaError: POLICY_VIOLATION.
    """
    if requested > limits.max_partitions_per_request:
        raise KafkaError(
            f"excessively large number of partitions per request: {requested} requested, "
            f"max.partitions.per.request is {limits.max_partitions_per_request}",
            code=ErrorCode.POLICY_VIOLATION,
        )


class PartitionAdmission:
    """The cluster's partition and per-broker replica counts during one request, and the
    check of each change against the totals.

    Args:
        replicas: every existing partition's replicas.
        limits: the limits to keep.
    """

    def __init__(self, replicas: Iterable[Sequence[int]], limits: PartitionLimits) -> None:
        self.limits = limits
        self.partitions = 0
        self.per_broker: Counter[int] = Counter()
        for assigned in replicas:
            self.partitions += 1
            self.per_broker.update(assigned)

    def admit(self, assignment: Mapping[int, Sequence[int]], *, record: bool = True) -> None:
        """Checks new partitions (partition → replicas) and, with ``record``, counts them.

        Raises:
            KafkaError: POLICY_VIOLATION; nothing is counted then.
        """
        adding = len(assignment)
        if self.partitions + adding > self.limits.max_partitions:
            raise KafkaError(
                f"cannot add {adding} partitions: the cluster has {self.partitions} and "
                f"max.partitions is {self.limits.max_partitions}",
                code=ErrorCode.POLICY_VIOLATION,
            )
        new: Counter[int] = Counter()
        for assigned in assignment.values():
            new.update(assigned)
        for broker in sorted(new):
            if self.per_broker[broker] + new[broker] > self.limits.max_broker_partitions:
                raise KafkaError(
                    f"cannot add {new[broker]} replicas to broker {broker}: it holds "
                    f"{self.per_broker[broker]} and max.broker.partitions is "
                    f"{self.limits.max_broker_partitions}",
                    code=ErrorCode.POLICY_VIOLATION,
                )
        if record:
            self.partitions += adding
            self.per_broker.update(new)

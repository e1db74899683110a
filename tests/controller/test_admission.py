"""The controller's admission of new partitions (controller.admission), with plain values."""

from __future__ import annotations

import pytest

from odradek.controller.admission import (
    PartitionAdmission,
    PartitionLimits,
    check_request_partitions,
)
from odradek.errors import ErrorCode, KafkaError

LIMITS = PartitionLimits(max_partitions=10, max_broker_partitions=6, max_partitions_per_request=5)


def test_a_request_over_the_per_request_cap_is_refused() -> None:
    check_request_partitions(5, LIMITS)
    with pytest.raises(KafkaError, match=r"max\.partitions\.per\.request is 5") as caught:
        check_request_partitions(6, LIMITS)
    assert caught.value.error_code == ErrorCode.POLICY_VIOLATION


def test_cluster_total_counts_what_exists_and_what_was_admitted() -> None:
    admission = PartitionAdmission([(0, 1)] * 4, LIMITS)  # 4 partitions, 4 replicas on 0 and 1
    admission.admit({0: [2], 1: [2], 2: [2]})  # 7 partitions
    admission.admit({0: [2], 1: [2], 2: [2]})  # 10
    with pytest.raises(KafkaError, match=r"the cluster has 10 and max\.partitions is 10"):
        admission.admit({0: [2]})


def test_each_broker_keeps_its_replica_bound_and_the_message_names_it() -> None:
    admission = PartitionAdmission([(0, 1), (0, 1), (1, 2)], LIMITS)  # 0: 2, 1: 3, 2: 1
    with pytest.raises(KafkaError, match="to broker 1: it holds 3") as caught:
        admission.admit({0: [1, 2], 1: [1, 2], 2: [1, 2], 3: [1, 0]})
    assert caught.value.error_code == ErrorCode.POLICY_VIOLATION
    # A refused change counts nothing: the same broker takes 3 more.
    admission.admit({0: [1, 2], 1: [1, 2], 2: [1, 0]})
    assert admission.per_broker[1] == 6
    assert admission.partitions == 6


def test_record_false_only_checks() -> None:
    admission = PartitionAdmission([], LIMITS)
    admission.admit({0: [0]}, record=False)
    assert admission.partitions == 0

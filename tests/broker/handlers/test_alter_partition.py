"""AlterPartition outside a cluster: a single broker has no controller to change an ISR, so
the request is answered NOT_CONTROLLER (the cluster tests cover the controller's answers)."""

from __future__ import annotations

from typing import Any

from tests.broker.fakes import context, request

from odradek.broker.handlers import alter_partition
from odradek.errors import ErrorCode
from odradek.protocol.inter_broker import (
    AlterPartitionRequest,
    AlterPartitionRequestPartition,
    AlterPartitionRequestTopic,
)


def test_a_single_broker_answers_not_controller() -> None:
    body = AlterPartitionRequest(
        broker_id=1,  # type: ignore[arg-type]
        topics=(
            AlterPartitionRequestTopic(
                topic_name="t",
                partitions=(
                    AlterPartitionRequestPartition(
                        partition_index=0,  # type: ignore[arg-type]
                        leader_epoch=0,  # type: ignore[arg-type]
                        new_isr=(1,),  # type: ignore[arg-type]
                        partition_epoch=0,  # type: ignore[arg-type]
                    ),
                ),
            ),
        ),
    )

    response: Any = alter_partition.handle(context(), request(body))

    assert response.error_code == ErrorCode.NOT_CONTROLLER
    assert response.topics == ()

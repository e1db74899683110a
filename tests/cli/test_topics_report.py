"""``odradek topics describe --under-replicated-partitions / --unavailable-partitions``: the
rules (ISR smaller than the replicas; no leader, or a leader that is not a live broker) on
descriptions built by hand, and against an ``odradek serve`` process, whose healthy
partitions are neither (only partition lines are ever printed with the flags, as
kafka-topics.sh). A 3-broker cluster with a killed broker is in
tests/cluster/test_cli_replication.py."""

from __future__ import annotations

import pytest

from odradek.cli.main import main
from odradek.cli.topics import is_unavailable, is_under_replicated
from odradek.client.admin_types import PartitionDescription

from .conftest import ServeFactory


def described(
    leader: int | None, replicas: tuple[int, ...], isr: tuple[int, ...]
) -> PartitionDescription:
    return PartitionDescription(partition=0, leader=leader, replicas=replicas, isr=isr)


@pytest.mark.parametrize(
    ("partition", "expected"),
    [
        (described(1, (1, 2, 3), (1, 2, 3)), False),
        (described(1, (1, 2, 3), (1, 3)), True),
        (described(None, (1,), ()), True),
        (described(1, (1,), (1,)), False),
    ],
)
def test_under_replicated_is_an_isr_smaller_than_the_replicas(
    partition: PartitionDescription, expected: bool
) -> None:
    assert is_under_replicated(partition) is expected


@pytest.mark.parametrize(
    ("partition", "expected"),
    [
        (described(1, (1, 2), (1, 2)), False),
        (described(None, (1, 2), (1,)), True),  # leader -1
        (described(2, (1, 2), (2,)), True),  # broker 2 is not alive
        (described(-1, (1,), ()), True),
    ],
)
def test_unavailable_is_no_leader_or_a_leader_that_is_not_live(
    partition: PartitionDescription, expected: bool
) -> None:
    assert is_unavailable(partition, live_brokers={1, 3}) is expected


def test_a_healthy_broker_reports_no_partitions(
    serve: ServeFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve()
    bootstrap = ["--bootstrap-server", served.bootstrap]
    assert main(["topics", "create", "--topic", "fine", "--partitions", "2", *bootstrap]) == 0
    capsys.readouterr()

    statuses = [
        main(["topics", "describe", flag, *bootstrap])
        for flag in ("--under-replicated-partitions", "--unavailable-partitions")
    ]
    reported = capsys.readouterr()
    main(["topics", "describe", "--topic", "fine", *bootstrap])
    plain = capsys.readouterr().out.splitlines()

    assert statuses == [0, 0]
    assert (reported.out, reported.err) == ("", "")
    assert len(plain) == 3  # the flags filtered two partition lines out, not the command

"""The follower's fetch session (KIP-227): plain-value rules of ``FollowerFetchSession``, then a
replica fetcher against a leader served in process (real logs, the real Fetch handler and
session cache): full fetch, incremental fetches naming only moved partitions, replication
still complete, and a leader that lost the session answered by a full fetch."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from tests.broker.replication.test_fetcher import (
    FOLLOWER,
    LEADER,
    InProcessLeader,
    _batch,
    _fetcher,
)

from odradek._types import TopicPartition
from odradek.broker.fetch_session import FetchSessionCache
from odradek.broker.replication.follower_session import FollowerFetchSession
from odradek.broker.replication.partition import Partition
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey
from odradek.protocol.replica_fetch import ReplicaFetchPartition
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

A0 = ReplicaFetchPartition("a", 0, 1, 10, 1024)
A1 = ReplicaFetchPartition("a", 1, 1, 20, 1024)
B0 = ReplicaFetchPartition("b", 0, 1, 0, 1024)


def test_first_fetch_is_full_then_only_changes_are_named() -> None:
    session = FollowerFetchSession()
    first = session.plan([A0, A1, B0])
    assert (first.session_id, first.session_epoch) == (0, 0)
    assert list(first.partitions) == [A0, A1, B0]
    session.answered(first, 0, 42)
    assert (session.session_id, session.epoch) == (42, 1)

    moved = A1._replace(fetch_offset=21)
    second = session.plan([A0, moved, B0])
    assert (second.session_id, second.session_epoch) == (42, 1)
    assert list(second.partitions) == [moved]
    assert list(second.forgotten) == []
    session.answered(second, 0, 42)
    assert session.epoch == 2

    # B0 no longer wanted (delayed, say), A0 at a new leader epoch.
    refenced = A0._replace(current_leader_epoch=2)
    third = session.plan([refenced, moved])
    assert list(third.partitions) == [refenced]
    assert list(third.forgotten) == [("b", [0])]
    session.answered(third, 0, 42)
    # Nothing changed: an incremental fetch naming nothing.
    fourth = session.plan([refenced, moved])
    assert list(fourth.partitions) == []
    assert list(fourth.forgotten) == []
    assert fourth.session_epoch == 3


def test_a_session_error_makes_the_next_fetch_full_and_closes_the_old_session() -> None:
    session = FollowerFetchSession()
    session.answered(session.plan([A0]), 0, 42)
    incremental = session.plan([A0])
    session.answered(incremental, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    again = session.plan([A0])
    assert again.full
    assert again.session_id == 42  # closes the old one, if the leader still has it
    assert list(again.partitions) == [A0]
    session.answered(again, 0, 43)
    assert session.plan([A0]).session_id == 43
    assert session.statistics()["session_resets"] == 1


def test_a_lost_answer_or_no_session_granted_keeps_fetches_full() -> None:
    session = FollowerFetchSession()
    session.answered(session.plan([A0]), 0, 0)  # the leader had no slot
    assert session.plan([A0]).full
    session.answered(session.plan([A0]), 0, 7)
    session.plan([A0])
    session.failed()
    assert session.plan([A0]).full


def test_an_answer_for_another_session_resets() -> None:
    session = FollowerFetchSession()
    session.answered(session.plan([A0]), 0, 42)
    session.answered(session.plan([A0]), 0, 99)
    assert session.plan([A0]).full


# ---------------------------------------------------------------- with the real leader

TPS = [TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)]


def _log(path: Path, name: str, tp: TopicPartition) -> Log:
    config = dataclasses.replace(LogConfig(), segment_bytes=1 << 20)
    return Log.open(str(path / f"{name}-{tp.partition}"), tp, config)


def _pair(tmp_path: Path, tp: TopicPartition) -> tuple[Partition, Partition]:
    leader = Partition(
        tp, _log(tmp_path, "leader", tp), broker_id=LEADER, replicas=[LEADER, FOLLOWER]
    )
    leader.make_leader(0, [LEADER, FOLLOWER], None, 0, 0)
    follower = Partition(
        tp, _log(tmp_path, "follower", tp), broker_id=FOLLOWER, replicas=[LEADER, FOLLOWER]
    )
    follower.leader_epoch = 0
    follower.leader_id = LEADER
    return leader, follower


def _named(fields: dict[str, object]) -> list[int]:
    return [p["partition"] for t in fields["topics"] for p in t["partitions"]]  # type: ignore[attr-defined,index]


def test_the_fetcher_names_only_moved_partitions_and_recovers_a_lost_session(
    tmp_path: Path,
) -> None:
    pairs = [_pair(tmp_path, tp) for tp in TPS]
    leaders = [leader for leader, _ in pairs]
    followers = [follower for _, follower in pairs]
    served = InProcessLeader(*leaders)
    fetcher = _fetcher(served)
    for follower in followers:
        fetcher.add_partition(follower)

    def fetches() -> list[dict[str, object]]:
        return [fields for key, fields in served.requests if key == ApiKey.FETCH]

    # Empty logs, no epochs: truncation is decided locally, then a full fetch creates the
    # session.
    asyncio.run(fetcher.run_once())
    [full] = fetches()
    assert full["session_epoch"] == 0
    assert sorted(_named(full)) == [0, 1, 2]
    assert fetcher.session.session_id != 0

    leaders[1].append_as_leader(_batch(b"one"))
    asyncio.run(fetcher.run_once())  # incremental, naming nothing: partition 1 answers
    first = fetches()[-1]
    assert first["session_epoch"] == 1
    assert _named(first) == []
    assert followers[1].log_end_offset == 1

    asyncio.run(fetcher.run_once())  # partition 1's fetch offset moved: only it is named
    second = fetches()[-1]
    assert (second["session_epoch"], _named(second)) == (2, [1])
    assert followers[1].high_watermark == leaders[1].high_watermark == 1

    # The leader loses its sessions (a restart): the next fetch gets the session error,
    # the one after is full again, and replication goes on.
    served.ctx.fetch_sessions = FetchSessionCache()
    leaders[2].append_as_leader(_batch(b"two"))
    asyncio.run(fetcher.run_once())
    assert followers[2].log_end_offset == 0
    asyncio.run(fetcher.run_once())
    assert fetches()[-1]["session_epoch"] == 0
    assert sorted(_named(fetches()[-1])) == [0, 1, 2]
    assert followers[2].log_end_offset == 1
    assert fetcher.statistics()["session_resets"] == 1
    for leader, follower in pairs:
        assert (
            follower.log.read(0, 1 << 20).read_bytes() == leader.log.read(0, 1 << 20).read_bytes()
        )

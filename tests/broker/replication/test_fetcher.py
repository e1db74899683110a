"""The replica fetcher against a leader served in process: real logs on both sides (tmp dirs),
the leader's real Fetch and OffsetForLeaderEpoch handlers, requests and answers through the real
codec — only the socket is left out. Covers KIP-101's divergent old leader (truncated to the
divergence point, not to its high watermark), KIP-279's rounds, a follower behind the leader's
log start offset, fencing, and batches cut by the fetch size."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.broker.fakes import context

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.config import FetcherSettings
from odradek.broker.handlers import fetch, offset_for_leader_epoch
from odradek.broker.replication.fetcher import ReplicaFetcher, whole_batches_size
from odradek.broker.replication.partition import Partition
from odradek.protocol import ApiKey, FetchResponseFrame, RecordsSlot, decode_request
from odradek.protocol.client_codec import decode_response, encode_request, entity_fields
from odradek.protocol.codec import encode_response
from odradek.protocol.header import response_header_version
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

TP = TopicPartition("t", 0)
LEADER, FOLLOWER = 1, 2
SETTINGS = FetcherSettings(replica_fetch_wait_max_ms=0, replica_fetch_backoff_ms=1000)


class InProcessLeader:
    """A ``BrokerConnection`` whose broker is the leader's handlers, called in process."""

    def __init__(self, *partitions: Partition) -> None:
        self.ctx = context(*partitions)  # type: ignore[arg-type]
        self.requests: list[tuple[int, dict[str, Any]]] = []

    async def request(
        self,
        host: str,
        port: int,
        api_key: int,
        api_version: int,
        fields: Mapping[str, Any],
        *,
        wait_ms: int = 0,
    ) -> dict[str, Any]:
        frame = encode_request(api_key, api_version, 7, "follower", fields)
        _, body = decode_response(api_key, api_version, await self._serve(frame))
        return body

    async def exchange(
        self, host: str, port: int, frame_for: Callable[[int], bytes], *, wait_ms: int = 0
    ) -> bytes:
        return await self._serve(frame_for(7))

    async def _serve(self, frame: bytes) -> bytes:
        """The leader's answer frame (without its size prefix) to a request frame."""
        request = decode_request(frame[4:])
        api_key, api_version = request.api_key, request.api_version
        self.requests.append((api_key, entity_fields(request.body)))
        handler = fetch if api_key == ApiKey.FETCH else offset_for_leader_epoch
        result: Any = handler.handle(self.ctx, request)  # type: ignore[attr-defined]
        if asyncio.iscoroutine(result):
            result = await result
        if isinstance(result, FetchResponseFrame):
            wire = b"".join(
                part.records.read() if isinstance(part, RecordsSlot) else part
                for part in result.parts
            )
        else:
            wire = encode_response(response_header_version(api_key, api_version), 7, result)
        return wire[4:]

    def close(self) -> None:
        pass


def _log(path: Path, name: str) -> Log:
    config = dataclasses.replace(LogConfig(), segment_bytes=1 << 20)
    return Log.open(str(path / name), TP, config)


def _batch(value: bytes, count: int = 1) -> bytes:
    return build_batch([SimpleRecord(1_000, None, value) for _ in range(count)])


def _leader(log: Log, epoch: int) -> Partition:
    """A leader alone in its ISR (the follower is out until it catches up), as
    ``ReplicaManager.become_leader`` makes one."""
    partition = Partition(TP, log, broker_id=LEADER, replicas=[LEADER, FOLLOWER])
    partition.make_leader(epoch, [LEADER, FOLLOWER], None, 0, 0)
    return partition


def _follower(log: Log, epoch: int) -> Partition:
    partition = Partition(TP, log, broker_id=FOLLOWER, replicas=[LEADER, FOLLOWER])
    partition.leader_epoch = epoch
    partition.leader_id = LEADER
    return partition


def _fetcher(leader: InProcessLeader, clock: MockClock | None = None) -> ReplicaFetcher:
    return ReplicaFetcher(
        FOLLOWER,
        LEADER,
        0,
        SETTINGS,
        lambda broker_id: ("127.0.0.1", 1),
        clock or MockClock(),
        connection=leader,  # type: ignore[arg-type]
    )


def _segment_bytes(log: Log) -> bytes:
    return b"".join(
        Path(segment.log.path).read_bytes()[: segment.size] for segment in log.segments()
    )


def _append(log: Log, epoch: int, values: list[bytes]) -> None:
    for value in values:
        log.append(_batch(value), leader_epoch=epoch)


def test_kip_101_the_old_leader_truncates_to_the_divergence_point_not_its_hw(
    tmp_path: Path,
) -> None:
    # The leader wrote epoch 0 at 0-4 and, elected at epoch 2, epoch 2 at 5-9. The old
    # leader shares 0-4 but wrote its own epoch-1 records at 5-11, and its high watermark
    # reached 8: truncating to the HW would keep three divergent records.
    leader_log = _log(tmp_path, "leader")
    _append(leader_log, 0, [b"shared-%d" % i for i in range(5)])
    old_log = _log(tmp_path, "old-leader")
    old_log.append(leader_log.read(0, 1 << 20).read_bytes(), assign_offsets=False)
    _append(old_log, 1, [b"divergent-%d" % i for i in range(7)])
    _append(leader_log, 2, [b"new-%d" % i for i in range(5)])
    leader = _leader(leader_log, 2)
    old = _follower(old_log, 2)
    old.advance_high_watermark(8)
    assert leader_log.leader_epoch_entries() == [(0, 0), (2, 5)]
    assert old_log.leader_epoch_entries() == [(0, 0), (1, 5)]
    served = InProcessLeader(leader)
    fetcher = _fetcher(served)
    fetcher.add_partition(old)

    asyncio.run(fetcher.run_once())  # OffsetForLeaderEpoch: epoch 1 ends at 5 on the leader

    assert served.requests[0][0] == ApiKey.OFFSET_FOR_LEADER_EPOCH
    asked = served.requests[0][1]["topics"][0]["partitions"][0]
    assert (asked["leader_epoch"], asked["current_leader_epoch"]) == (1, 2)
    assert old.log_end_offset == 5
    assert old.high_watermark == 5  # never above the log end
    assert old_log.leader_epoch_entries() == [(0, 0)]

    asyncio.run(fetcher.run_once())  # Fetch from 5

    assert served.requests[1][0] == ApiKey.FETCH
    assert served.requests[1][1]["replica_id"] == FOLLOWER
    assert old.log_end_offset == 10
    assert old_log.leader_epoch_entries() == [(0, 0), (2, 5)]
    assert _segment_bytes(old_log) == _segment_bytes(leader_log)
    assert old.high_watermark == leader.high_watermark == 10
    assert fetcher.statistics()["truncations"] == 1


def test_kip_279_asks_again_about_an_older_epoch_until_the_logs_agree(tmp_path: Path) -> None:
    # Leader: epoch 0 at 0-2, epoch 1 at 3-5, epoch 3 at 6-7. Follower: epoch 0 at 0-2 (the
    # same records), then its own epoch 2 at 3-6. Asked about epoch 2 the leader answers
    # epoch 1 ending at 6, which the follower does not have; it truncates to the end of its
    # epoch 0 (3) and asks about epoch 0, which ends at 3 on both.
    leader_log = _log(tmp_path, "leader")
    _append(leader_log, 0, [b"a", b"b", b"c"])
    follower_log = _log(tmp_path, "follower")
    follower_log.append(leader_log.read(0, 1 << 20).read_bytes(), assign_offsets=False)
    _append(leader_log, 1, [b"d", b"e", b"f"])
    _append(leader_log, 3, [b"g", b"h"])
    _append(follower_log, 2, [b"w", b"x", b"y", b"z"])
    served = InProcessLeader(_leader(leader_log, 3))
    follower = _follower(follower_log, 3)
    fetcher = _fetcher(served)
    fetcher.add_partition(follower)

    asyncio.run(fetcher.run_once())
    assert follower.log_end_offset == 3
    state = fetcher.fetch_state(TP)
    assert state is not None
    assert state.truncating
    assert state.ask_epoch == 0
    asyncio.run(fetcher.run_once())
    assert not state.truncating
    asyncio.run(fetcher.run_once())

    asked = [
        fields["topics"][0]["partitions"][0]["leader_epoch"]
        for key, fields in served.requests
        if key == ApiKey.OFFSET_FOR_LEADER_EPOCH
    ]
    assert asked == [2, 0]
    assert _segment_bytes(follower_log) == _segment_bytes(leader_log)
    assert follower_log.leader_epoch_entries() == [(0, 0), (1, 3), (3, 6)]


def test_a_follower_behind_the_leaders_log_start_restarts_its_log_there(tmp_path: Path) -> None:
    leader_log = _log(tmp_path, "leader")
    _append(leader_log, 0, [b"%d" % i for i in range(10)])
    leader = _leader(leader_log, 0)
    leader.delete_records_before(6)
    follower_log = _log(tmp_path, "follower")  # empty, no epochs: nothing to ask
    follower = _follower(follower_log, 0)
    served = InProcessLeader(leader)
    fetcher = _fetcher(served)
    fetcher.add_partition(follower)

    asyncio.run(fetcher.run_once())  # Fetch from 0: OFFSET_OUT_OF_RANGE
    assert [key for key, _ in served.requests] == [ApiKey.FETCH]
    assert (follower.log_start_offset, follower.log_end_offset) == (6, 6)
    asyncio.run(fetcher.run_once())

    assert follower.log_end_offset == 10
    assert follower_log.read(6, 1 << 20).read_bytes() == leader_log.read(6, 1 << 20).read_bytes()


@pytest.mark.parametrize("follower_epoch", [1, 3])
def test_a_leader_at_another_epoch_fences_the_partition_for_the_backoff(
    tmp_path: Path, follower_epoch: int
) -> None:
    leader_log = _log(tmp_path, "leader")
    _append(leader_log, 2, [b"x"])
    follower_log = _log(tmp_path, "follower")
    _append(follower_log, 0, [b"y"])
    clock = MockClock()
    fetcher = _fetcher(InProcessLeader(_leader(leader_log, 2)), clock)
    fetcher.add_partition(_follower(follower_log, follower_epoch))

    asyncio.run(fetcher.run_once())

    state = fetcher.fetch_state(TP)
    assert state is not None
    assert state.truncating
    assert state.delayed_until_ms == clock.monotonic_ms() + SETTINGS.replica_fetch_backoff_ms
    assert follower_log.log_end_offset == 1  # untouched


def test_a_removed_partition_gets_nothing_from_an_answer_in_flight(tmp_path: Path) -> None:
    leader_log = _log(tmp_path, "leader")
    _append(leader_log, 0, [b"x", b"y"])
    follower_log = _log(tmp_path, "follower")
    served = InProcessLeader(_leader(leader_log, 0))
    fetcher = _fetcher(served)
    fetcher.add_partition(_follower(follower_log, 0))
    original = served.exchange

    async def remove_then_answer(*args: Any, **kwargs: Any) -> bytes:
        fetcher.remove_partition(TP)
        return await original(*args, **kwargs)

    served.exchange = remove_then_answer  # type: ignore[method-assign]
    asyncio.run(fetcher.run_once())  # no epochs, empty: nothing to ask, so a fetch
    assert [key for key, _ in served.requests] == [ApiKey.FETCH]
    assert follower_log.log_end_offset == 0


def test_only_whole_batches_are_kept_of_a_fetch_cut_short() -> None:
    first, second = _batch(b"one", 3), _batch(b"two", 2)
    data = first + second
    assert whole_batches_size(data) == len(data)
    assert whole_batches_size(data[:-1]) == len(first)
    assert whole_batches_size(data[: len(first) + 11]) == len(first)
    assert whole_batches_size(b"") == 0
    assert whole_batches_size(data[:20]) == 0

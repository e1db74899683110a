"""The streaming reader's offset decisions (latestOffset, partitions, group commits) against an
in-memory stand-in for the broker lookups: rate limits, minOffsetsPerTrigger with
maxTriggerDelay, availableNow, partitions that come and go."""

from __future__ import annotations

import pickle
from collections.abc import Collection, Mapping
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from odradek.client import TopicPartition
from odradek.spark.offsets import to_json
from odradek.spark.options import parse_source_options
from odradek.spark.planning import OffsetRange
from odradek.spark.read_task import DataLossError
from odradek.spark.stream_reader import StreamReader

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


class FakeLookups:
    """What the stream reader asks the broker, answered from dicts the test changes."""

    def __init__(self, log_end: dict[TopicPartition, int]) -> None:
        self.log_end = dict(log_end)
        self.log_start: dict[TopicPartition, int] = {}
        self.commits: list[dict[TopicPartition, int]] = []

    def partitions(self) -> list[TopicPartition]:
        return sorted(self.log_end)

    def latest(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.log_end[tp] for tp in partitions}

    def earliest(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.log_start.get(tp, 0) for tp in partitions}

    def resolve(
        self, limit: Any, partitions: Collection[TopicPartition], *, which: str
    ) -> dict[TopicPartition, int]:
        assert limit == "earliest"
        return self.earliest(partitions)

    def commit_group(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        self.commits.append(dict(offsets))

    def close(self) -> None:
        pass


def reader(lookups: FakeLookups, **options: str) -> StreamReader:
    parsed = parse_source_options(
        {
            "kafka.bootstrap.servers": "127.0.0.1:1",
            "subscribe": "a",
            "startingOffsets": "earliest",
            **options,
        },
        streaming=True,
    )
    stream = StreamReader(parsed)
    stream._offset_reader = lookups  # type: ignore[assignment]
    return stream


def test_initial_offset_is_memoized_and_canonical() -> None:
    lookups = FakeLookups({A1: 5, A0: 3})
    stream = reader(lookups)
    first = stream.initialOffset()
    lookups.log_start[A0] = 2
    assert stream.initialOffset() == first == {"a": {"0": 0, "1": 0}}


def test_read_all_available_and_rate_limited() -> None:
    lookups = FakeLookups({A0: 300, A1: 100})
    stream = reader(lookups, maxOffsetsPerTrigger="100")
    assert stream.getDefaultReadLimit() == ReadMaxRows(100)
    start = stream.initialOffset()
    assert stream.latestOffset(start, ReadMaxRows(100)) == {"a": {"0": 75, "1": 25}}
    assert stream.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 300, "1": 100}}


def test_min_offsets_per_trigger_waits_until_the_delay_is_over() -> None:
    lookups = FakeLookups({A0: 5})
    stream = reader(lookups, minOffsetsPerTrigger="10", maxTriggerDelay="1h")
    start = stream.initialOffset()
    assert stream.latestOffset(start, ReadAllAvailable()) == start  # 5 < 10: wait
    lookups.log_end[A0] = 12
    assert stream.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 12}}
    patient = reader(FakeLookups({A0: 5}), minOffsetsPerTrigger="10", maxTriggerDelay="0ms")
    assert patient.latestOffset(patient.initialOffset(), ReadAllAvailable()) == {"a": {"0": 5}}


def test_available_now_stops_at_the_offsets_latest_when_prepared() -> None:
    lookups = FakeLookups({A0: 10})
    stream = reader(lookups)
    start = stream.initialOffset()
    stream.prepareForTriggerAvailableNow()
    lookups.log_end[A0] = 50
    lookups.log_end[A1] = 7  # a partition born after the target: not read by this run
    end = stream.latestOffset(start, ReadAllAvailable())
    assert end == {"a": {"0": 10}}
    assert stream.latestOffset(end, ReadAllAvailable()) == end


def test_new_partitions_join_at_their_earliest_offset() -> None:
    lookups = FakeLookups({A0: 10})
    stream = reader(lookups)
    start = stream.initialOffset()
    lookups.log_end[A1] = 4
    lookups.log_start[A1] = 1
    end = stream.latestOffset(start, ReadAllAvailable())
    assert end == {"a": {"0": 10, "1": 4}}
    ranges = [p.value for p in stream.partitions(start, end)]
    assert ranges == [OffsetRange("a", 0, 0, 10), OffsetRange("a", 1, 1, 4)]


def test_a_partition_gone_is_data_loss() -> None:
    lookups = FakeLookups({A0: 10, A1: 10})
    strict = reader(lookups)
    start = to_json({A0: 3, A1: 4})
    del lookups.log_end[A1]
    with pytest.raises(DataLossError, match=r"partitions \['a-1'\] are gone"):
        strict.latestOffset(start, ReadAllAvailable())
    lenient = reader(lookups, failOnDataLoss="false")
    assert lenient.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 10}}


def test_a_log_that_now_ends_earlier_is_data_loss() -> None:
    lookups = FakeLookups({A0: 2})
    with pytest.raises(DataLossError, match="the log now ends at 2"):
        reader(lookups).latestOffset(to_json({A0: 8}), ReadAllAvailable())
    lenient = reader(lookups, failOnDataLoss="false")
    assert lenient.latestOffset(to_json({A0: 8}), ReadAllAvailable()) == {"a": {"0": 2}}


def test_group_offsets_follow_finished_batches_forward_only() -> None:
    lookups = FakeLookups({A0: 10, A1: 10})
    stream = reader(lookups, groupId="g")
    stream.latestOffset(to_json({A0: 3, A1: 4}), ReadAllAvailable())
    stream.latestOffset(to_json({A0: 3, A1: 4}), ReadAllAvailable())  # nothing new: no commit
    stream.latestOffset(to_json({A0: 10, A1: 4}), ReadAllAvailable())
    stream.commit(to_json({A0: 3, A1: 4}))  # Spark's late commit changes nothing
    assert lookups.commits == [{A0: 3, A1: 4}, {A0: 10}]


def test_the_reader_pickles_without_its_connections() -> None:
    stream = reader(FakeLookups({A0: 1}))
    copy = pickle.loads(pickle.dumps(stream))
    assert copy._offset_reader is None

"""A 10,000-partition topic is created, and deleted, while another client's Produce and
Metadata requests keep being answered (the log creation runs off the event loop), and Metadata
never lists a partition whose log directory does not exist (a topic is published once all its
logs exist). In between, the broker holds the 10,000 partitions with few file descriptors (an
idle partition holds none) and restarts with every partition and its data in place.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.broker._wire import Wire

from odradek import Broker
from odradek.protocol.api_keys import ApiKey
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

#: Partitions of the large topic (see the module docstring).
LARGE_TOPIC_PARTITIONS = 10_000
#: Every this many partitions, one gets a record before the restart and is read after it.
SAMPLE_EVERY = 500
#: Descriptors the whole test process may hold with the large topic in place: far below one
#: per partition (before segment files were opened lazily, each partition held about five).
MAX_OPEN_FDS = 1_000
#: Probes that must be answered while the change is under way: a broker whose event loop
#: were held by the change would answer at most the one sent before it.
MIN_PROBES_DURING_CHANGE = 5
TOPIC = "large"
PROBE_TOPIC = "probe"


class Probe:
    """Another client: a Produce to a small topic and a Metadata of every topic, in turn, each
    checked: the Produce acknowledged, and each partition Metadata lists of the large topic
    backed by its log directory."""

    def __init__(self, broker: Broker) -> None:
        self.wire = Wire(broker.port, client_id="probe")
        self.data_dir = Path(broker.data_dir)
        self.rounds = 0
        self.listed: set[int] = set()  # partition counts of the large topic seen

    def round(self) -> None:
        batch = build_batch([SimpleRecord(1_700_000_000_000 + self.rounds, None, b"probe")])
        produced = self.wire.request(
            ApiKey.PRODUCE,
            3,
            {
                "transactional_id": None,
                "acks": 1,
                "timeout": 10_000,
                "topic_data": [
                    {"name": PROBE_TOPIC, "partition_data": [{"index": 0, "records": batch}]}
                ],
            },
        )
        [topic] = produced["responses"]
        assert topic["partition_responses"][0]["error_code"] == 0
        for described in self.wire.metadata(None)["topics"]:
            if described["name"] != TOPIC:
                continue
            indexes = [p["partition_index"] for p in described["partitions"]]
            self.listed.add(len(indexes))
            missing = [i for i in indexes if not (self.data_dir / f"{TOPIC}-{i}").is_dir()]
            assert missing == [], f"Metadata lists partitions without a log: {missing[:10]}"
        self.rounds += 1

    def run_until(self, finished: threading.Event) -> int:
        """Probes until ``finished``; returns how many rounds were answered before it."""
        start = self.rounds
        while not finished.is_set():
            self.round()
        return self.rounds - start


def in_background(
    wire: Wire, api_key: int, version: int, fields: dict[str, Any]
) -> tuple[threading.Thread, threading.Event, list[dict[str, Any]]]:
    """Sends a request and reads its response on a thread; the event is set once it came."""
    correlation_id = wire.send(api_key, version, fields)
    finished = threading.Event()
    responses: list[dict[str, Any]] = []

    def receive() -> None:
        try:
            responses.append(wire.receive(api_key, version, correlation_id))
        finally:
            finished.set()

    thread = threading.Thread(target=receive, name="admin-response", daemon=True)
    thread.start()
    return thread, finished, responses


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def produce_samples(wire: Wire) -> None:
    """One record into every ``SAMPLE_EVERY``-th partition of the large topic."""
    batch = build_batch([SimpleRecord(1_700_000_000_000, None, b"sample")])
    partition_data = [
        {"index": index, "records": batch}
        for index in range(0, LARGE_TOPIC_PARTITIONS, SAMPLE_EVERY)
    ]
    produced = wire.request(
        ApiKey.PRODUCE,
        3,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 10_000,
            "topic_data": [{"name": TOPIC, "partition_data": partition_data}],
        },
    )
    [topic] = produced["responses"]
    assert [p["error_code"] for p in topic["partition_responses"]] == [0] * len(partition_data)


def sample_log_end_offsets(wire: Wire) -> list[int]:
    """The log end offset of every sampled partition, by ListOffsets(latest)."""
    listed = wire.request(
        ApiKey.LIST_OFFSETS,
        1,
        {
            "replica_id": -1,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": index, "timestamp": -1}
                        for index in range(0, LARGE_TOPIC_PARTITIONS, SAMPLE_EVERY)
                    ],
                }
            ],
        },
    )
    [topic] = listed["topics"]
    assert [p["error_code"] for p in topic["partitions"]] == [0] * len(topic["partitions"])
    return [p["offset"] for p in topic["partitions"]]


@pytest.mark.slow
def test_large_topic_is_created_held_restarted_and_deleted_while_others_are_served(
    tmp_path: Path,
) -> None:
    config = {"max.partitions.per.request": str(max(10_000, LARGE_TOPIC_PARTITIONS))}
    data_dir = str(tmp_path / "broker")
    samples = len(range(0, LARGE_TOPIC_PARTITIONS, SAMPLE_EVERY))
    with Broker(data_dir, config=config) as broker:
        admin = Wire(broker.port, client_id="admin", timeout_s=600)
        probe = Probe(broker)
        try:
            assert admin.create_topics({PROBE_TOPIC: 1}) == {PROBE_TOPIC: 0}
            probe.round()
            create = {
                "topics": [
                    {
                        "name": TOPIC,
                        "num_partitions": LARGE_TOPIC_PARTITIONS,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 600_000,
                "validate_only": False,
            }

            thread, created, responses = in_background(admin, ApiKey.CREATE_TOPICS, 3, create)
            during_creation = probe.run_until(created)
            thread.join()

            [result] = responses[0]["topics"]
            assert result["error_code"] == 0
            assert during_creation >= MIN_PROBES_DURING_CHANGE
            probe.round()
            assert probe.listed <= {0, LARGE_TOPIC_PARTITIONS}  # all at once, never part
            assert admin.partitions_of(TOPIC) == list(range(LARGE_TOPIC_PARTITIONS))
            produce_samples(admin)
            assert sample_log_end_offsets(admin) == [1] * samples
            assert open_fds() <= MAX_OPEN_FDS
        finally:
            admin.close()
            probe.wire.close()

    with Broker(data_dir, config=config) as broker:  # the restart: a clean shutdown before it
        admin = Wire(broker.port, client_id="admin", timeout_s=600)
        probe = Probe(broker)
        try:
            assert admin.partitions_of(TOPIC) == list(range(LARGE_TOPIC_PARTITIONS))
            assert sample_log_end_offsets(admin) == [1] * samples
            assert open_fds() <= MAX_OPEN_FDS

            delete = {"topic_names": [TOPIC], "timeout": 600_000}
            thread, deleted, responses = in_background(admin, ApiKey.DELETE_TOPICS, 1, delete)
            during_deletion = probe.run_until(deleted)
            thread.join()

            [result] = responses[0]["responses"]
            assert result["error_code"] == 0
            assert during_deletion >= MIN_PROBES_DURING_CHANGE
            assert admin.partitions_of(TOPIC) is None
        finally:
            admin.close()
            probe.wire.close()

"""A large topic is created, and deleted, while another client's Produce and Metadata requests
keep being answered (the log creation runs off the event loop), and Metadata never lists a
partition whose log directory does not exist (a topic is published once all its logs exist).

``LARGE_TOPIC_PARTITIONS`` is 2,000 while every partition holds ~5 file descriptors (the
default ``ulimit -n`` here is 20,000); it goes to 10,000 once segment descriptors are opened
lazily.
"""

from __future__ import annotations

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
LARGE_TOPIC_PARTITIONS = 2_000
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


@pytest.mark.slow
def test_large_topic_is_created_and_deleted_while_others_are_served() -> None:
    config = {"max.partitions.per.request": str(max(10_000, LARGE_TOPIC_PARTITIONS))}
    with Broker(config=config) as broker:
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

"""Bounded topic changes against a live broker: absurd partition counts are refused at once
(POLICY_VIOLATION, nothing created, the broker answering the next request on another
connection), the per-broker and cluster totals hold with creations under way counted, a
request whose work outlasts its timeout answers REQUEST_TIMED_OUT and the topic still appears,
a storage failure part-way undoes the creation (no topic, no metadata, no live log directory),
and the controller mutation quota throttles a client (KIP-599)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.broker._wire import Wire, wait_for

from odradek import Broker
from odradek._types import TopicPartition
from odradek.broker.topic_manager import AUTO_CREATE_INLINE_PARTITIONS
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

POLICY_VIOLATION = int(ErrorCode.POLICY_VIOLATION)


@pytest.fixture
def broker() -> Iterator[Broker]:
    config = {"max.partitions.per.request": "100", "max.broker.partitions": "150"}
    with Broker(config=config) as running:
        yield running


@pytest.fixture
def wire(broker: Broker) -> Iterator[Wire]:
    connection = Wire(broker.port)
    yield connection
    connection.close()


def live_dirs(broker: Broker, topic: str) -> list[str]:
    """The partition directories of ``topic`` not being deleted."""
    return sorted(
        path.name
        for path in Path(broker.data_dir).iterdir()
        if path.name.startswith(f"{topic}-") and not path.name.endswith("-delete")
    )


def test_absurd_create_partitions_is_refused_at_once(broker: Broker, wire: Wire) -> None:
    assert wire.create_topics({"grow": 1}) == {"grow": 0}

    assert wire.create_partitions({"grow": 16_777_215}) == {"grow": POLICY_VIOLATION}

    [result] = wire.last_response["results"]
    assert "max.partitions.per.request" in result["error_message"]
    other = Wire(broker.port)
    try:
        assert other.partitions_of("grow") == [0]
    finally:
        other.close()
    assert live_dirs(broker, "grow") == ["grow-0"]


def test_a_request_over_the_cap_fails_every_topic_of_it(broker: Broker, wire: Wire) -> None:
    assert wire.create_topics({"small": 1, "large": 100}) == {
        "small": POLICY_VIOLATION,
        "large": POLICY_VIOLATION,
    }  # 101 together: nothing is created, as Kafka refuses the whole request

    assert wire.partitions_of("small") is None
    assert live_dirs(broker, "small") == []
    assert wire.create_topics({"huge": 2**31 - 1}) == {"huge": POLICY_VIOLATION}
    assert wire.create_topics({"small": 1, "large": 99}) == {"small": 0, "large": 0}
    assert len(live_dirs(broker, "large")) == 99


def test_per_broker_total_counts_what_exists(broker: Broker, wire: Wire) -> None:
    assert wire.create_topics({"first": 100}) == {"first": 0}

    assert wire.create_topics({"second": 51}) == {"second": POLICY_VIOLATION}
    [result] = wire.last_response["topics"]
    assert "max.broker.partitions" in result["error_message"]
    assert wire.create_partitions({"first": 151}) == {"first": POLICY_VIOLATION}
    assert wire.create_topics({"second": 50}) == {"second": 0}
    assert wire.create_partitions({"second": 51}) == {"second": POLICY_VIOLATION}
    assert wire.partitions_of("second") == list(range(50))


def test_creations_under_way_count_and_deleted_partitions_are_given_back(
    broker: Broker, wire: Wire
) -> None:
    release = threading.Event()
    held = broker.app.topics._worker().submit(release.wait, 30)
    try:
        assert wire.create_topics({"pending": 100}, timeout_ms=1) == {
            "pending": int(ErrorCode.REQUEST_TIMED_OUT)
        }
        assert wire.create_topics({"more": 51}) == {"more": POLICY_VIOLATION}
    finally:
        release.set()
        held.result(10)
    wait_for(lambda: wire.partitions_of("pending"), "the pending topic")
    assert wire.create_topics({"more": 51}) == {"more": POLICY_VIOLATION}

    assert wire.delete_topics(["pending"]) == {"pending": 0}

    assert wire.create_topics({"more": 100}) == {"more": 0}
    assert broker.app.topics.statistics()["partitions"] == 100


def test_the_topics_of_one_request_are_stored_in_one_write(broker: Broker, wire: Wire) -> None:
    store = broker.app.store
    controller = broker.app.controller
    assert store is not None
    assert controller is not None
    # The controller election writes /controller_epoch on its own thread after the start:
    # measure once it is done.
    wait_for(lambda: controller.active, "the controller election")
    before = store.statistics().file_writes

    assert wire.create_topics({f"many-{i}": 2 for i in range(20)}) == {
        f"many-{i}": 0 for i in range(20)
    }

    assert store.statistics().file_writes - before == 1
    assert all(wire.partitions_of(f"many-{i}") == [0, 1] for i in range(20))


def test_timeout_answers_request_timed_out_and_the_topic_still_appears(
    broker: Broker, wire: Wire
) -> None:
    release = threading.Event()
    # Hold the manager's worker so the creation cannot finish within its timeout.
    held = broker.app.topics._worker().submit(release.wait, 30)
    try:
        assert wire.create_topics({"slow": 5}, timeout_ms=50) == {
            "slow": int(ErrorCode.REQUEST_TIMED_OUT)
        }
        assert wire.partitions_of("slow") is None  # not published while not done
        assert wire.create_topics({"slow": 5}) == {"slow": int(ErrorCode.TOPIC_ALREADY_EXISTS)}
    finally:
        release.set()
        held.result(10)

    assert wait_for(lambda: wire.partitions_of("slow"), "the slow topic") == list(range(5))
    assert len(live_dirs(broker, "slow")) == 5


def test_storage_failure_part_way_undoes_the_creation(
    broker: Broker, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_manager = broker.app.log_manager
    assert log_manager is not None
    real = log_manager.get_or_create_log
    made: list[TopicPartition] = []

    def fail_after_five(topic_partition: TopicPartition, config: LogConfig | None = None) -> Log:
        if topic_partition.topic == "doomed" and len(made) == 5:
            raise OSError(24, "Too many open files")
        made.append(topic_partition)
        return real(topic_partition, config)

    monkeypatch.setattr(log_manager, "get_or_create_log", fail_after_five)

    assert wire.create_topics({"doomed": 20}) == {"doomed": int(ErrorCode.KAFKA_STORAGE_ERROR)}

    assert len(made) == 5
    assert wire.partitions_of("doomed") is None
    assert "doomed" not in broker.app.topics.metadata.topics()
    assert live_dirs(broker, "doomed") == []
    monkeypatch.undo()
    assert wire.create_topics({"doomed": 20}) == {"doomed": 0}
    assert wire.partitions_of("doomed") == list(range(20))


def test_create_partitions_failure_keeps_the_old_partitions(
    broker: Broker, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert wire.create_topics({"kept": 2}) == {"kept": 0}
    log_manager = broker.app.log_manager
    assert log_manager is not None
    real = log_manager.get_or_create_log

    def fail_on_partition_3(tp: TopicPartition, config: LogConfig | None = None) -> Log:
        if tp == TopicPartition("kept", 3):
            raise OSError(28, "No space left on device")
        return real(tp, config)

    monkeypatch.setattr(log_manager, "get_or_create_log", fail_on_partition_3)

    assert wire.create_partitions({"kept": 6}) == {"kept": int(ErrorCode.KAFKA_STORAGE_ERROR)}

    assert wire.partitions_of("kept") == [0, 1]
    assert sorted(broker.app.topics.metadata.assignment("kept")) == [0, 1]
    assert live_dirs(broker, "kept") == ["kept-0", "kept-1"]
    monkeypatch.undo()
    assert wire.create_partitions({"kept": 6}) == {"kept": 0}
    assert wire.partitions_of("kept") == list(range(6))


def throttle_time(response: dict[str, Any]) -> int:
    return int(response["throttle_time"])


def test_controller_mutation_quota_throttles_a_client() -> None:
    config = {
        "controller.mutation.rate": "1",
        "controller.quota.window.num": "1",
        "controller.quota.window.size.seconds": "5",
    }  # 5 partitions of burst, refilled at 1 a second
    with Broker(config=config) as broker:
        greedy = Wire(broker.port, client_id="greedy")
        polite = Wire(broker.port, client_id="polite")
        try:
            assert greedy.create_topics({"q1": 20}) == {"q1": 0}  # admitted whole, in debt

            assert greedy.create_partitions({"q1": 21}, version=3) == {
                "q1": int(ErrorCode.THROTTLING_QUOTA_EXCEEDED)
            }
            assert throttle_time(greedy.last_response) > 10_000
            # An older version is admitted and told how long to wait (Kafka does the same).
            assert greedy.create_partitions({"q1": 21}, version=1) == {"q1": 0}
            assert throttle_time(greedy.last_response) > 10_000
            assert polite.create_partitions({"q1": 22}, version=3) == {"q1": 0}
            assert throttle_time(polite.last_response) == 0
        finally:
            greedy.close()
            polite.close()


def test_delete_topic_leaves_metadata_and_disk(broker: Broker, wire: Wire) -> None:
    assert wire.create_topics({"gone": 30}) == {"gone": 0}

    assert wire.delete_topics(["gone", "never"]) == {
        "gone": 0,
        "never": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    }

    assert wire.partitions_of("gone") is None
    assert live_dirs(broker, "gone") == []
    assert "gone" not in broker.app.topics.metadata.topics()
    assert wire.create_topics({"gone": 3}) == {"gone": 0}
    assert wire.partitions_of("gone") == [0, 1, 2]


def test_creation_cut_by_a_stop_is_finished_by_the_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = str(tmp_path / "data")
    broker = Broker(data_dir).start()
    log_manager = broker.app.log_manager
    assert log_manager is not None
    real = log_manager.get_or_create_log
    made: list[TopicPartition] = []
    release = threading.Event()
    holding = threading.Event()

    def block_after_three(tp: TopicPartition, config: LogConfig | None = None) -> Log:
        if tp.topic == "cut" and len(made) == 3:
            holding.set()
            release.wait(30)
        made.append(tp)
        return real(tp, config)

    monkeypatch.setattr(log_manager, "get_or_create_log", block_after_three)
    wire = Wire(broker.port)
    try:
        assert wire.create_topics({"cut": 40}, timeout_ms=1) == {
            "cut": int(ErrorCode.REQUEST_TIMED_OUT)
        }
        wait_for(holding.is_set, "three logs made, the fourth held")
        stopping = threading.Thread(target=broker.stop, name="stop")
        stopping.start()
        wait_for(broker.app.topics._stopping.is_set, "the stop to reach the topic manager")
        release.set()
        stopping.join(30)
        assert not stopping.is_alive()
    finally:
        wire.close()
        release.set()
    assert len(made) == 4  # the one under way when the stop came, then no more
    assert len(list((tmp_path / "data").glob("cut-*"))) == 4

    with Broker(data_dir) as restarted:
        again = Wire(restarted.port)
        try:
            assert again.partitions_of("cut") == list(range(40))
        finally:
            again.close()
        assert len(list((tmp_path / "data").glob("cut-*"))) == 40


def test_metadata_naming_many_new_topics_creates_the_rest_off_the_loop(
    broker: Broker, wire: Wire
) -> None:
    names = [f"auto-{i}" for i in range(30)]
    response = wire.request(
        ApiKey.METADATA,
        4,
        {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": True},
    )

    codes = {t["name"]: int(t["error_code"]) for t in response["topics"]}
    inline = [n for n in names if codes[n] == 0]
    assert inline == names[:AUTO_CREATE_INLINE_PARTITIONS]
    assert {codes[n] for n in names[len(inline) :]} == {int(ErrorCode.LEADER_NOT_AVAILABLE)}
    for name in names:
        assert wait_for(lambda name=name: wire.partitions_of(name), name) == [0]

"""Incremental fetch sessions (KIP-227) against a live broker, over the wire: a full fetch
creates a session and answers every partition; an incremental one answers only the
partitions with news (new records, a moved high watermark) and reads the ones it does not
name at their cached offsets; forgotten partitions leave the session; a wrong epoch or id is
the response's top-level error; epoch -1 stays sessionless."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.broker._wire import Wire

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.records.codec import SimpleRecord, build_batch

TOPIC = "sessions"
PARTITIONS = 4
VERSION = 11


@pytest.fixture
def wire() -> Iterator[Wire]:
    with Broker(config={"auto.create.topics.enable": "false"}) as running:
        connection = Wire(running.port)
        try:
            assert connection.create_topics({TOPIC: PARTITIONS}) == {TOPIC: 0}
            yield connection
        finally:
            connection.close()


def produce(wire: Wire, partition: int, value: bytes) -> None:
    batch = build_batch([SimpleRecord(1_000, None, value)], base_offset=0)
    answer = wire.request(
        ApiKey.PRODUCE,
        3,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 10_000,
            "topic_data": [
                {"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}
            ],
        },
    )
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0


def fetch(
    wire: Wire,
    session_id: int,
    epoch: int,
    offsets: dict[int, int],
    forgotten: list[int] | None = None,
) -> dict[str, Any]:
    partitions = [
        {
            "partition": index,
            "current_leader_epoch": -1,
            "fetch_offset": offset,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
        for index, offset in offsets.items()
    ]
    return wire.request(
        ApiKey.FETCH,
        VERSION,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 22,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": [{"topic": TOPIC, "partitions": partitions}] if partitions else [],
            "forgotten_topics_data": [{"topic": TOPIC, "partitions": forgotten}]
            if forgotten
            else [],
            "rack_id": "",
        },
    )


def answered(body: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition_index"]: p for t in body["responses"] for p in t["partitions"]}


def test_full_then_incremental_answers_only_partitions_with_news(wire: Wire) -> None:
    for index in range(PARTITIONS):
        produce(wire, index, b"first")
    first = fetch(wire, 0, 0, {0: 0, 1: 0, 2: 1, 3: 1})
    assert first["error_code"] == 0
    session_id = first["session_id"]
    assert session_id != 0
    # A full fetch answers every partition, with records or not.
    assert sorted(answered(first)) == list(range(PARTITIONS))
    assert [bool(answered(first)[i]["records"]) for i in range(PARTITIONS)] == [1, 1, 0, 0]

    # Partitions 0 and 1 move their fetch offset past their record; nothing is new: no news.
    second = fetch(wire, session_id, 1, {0: 1, 1: 1})
    assert second["error_code"] == 0
    assert second["session_id"] == session_id
    assert answered(second) == {}

    # A record on partition 2, read from its cached offset 1 (not named): only it answers.
    produce(wire, 2, b"second")
    third = answered(fetch(wire, session_id, 2, {}))
    assert sorted(third) == [2]
    assert third[2]["high_watermark"] == 2
    assert third[2]["records"]


def test_unchanged_offsets_with_new_records_come_back(wire: Wire) -> None:
    produce(wire, 0, b"a")
    session_id = fetch(wire, 0, 0, {0: 1, 1: 0})["session_id"]
    assert answered(fetch(wire, session_id, 1, {})) == {}
    produce(wire, 1, b"b")
    third = answered(fetch(wire, session_id, 2, {}))
    assert sorted(third) == [1]
    assert third[1]["records"]


def test_forgotten_partitions_leave_the_session_and_added_ones_answer(wire: Wire) -> None:
    session_id = fetch(wire, 0, 0, {0: 0, 1: 0})["session_id"]
    second = fetch(wire, session_id, 1, {3: 0}, forgotten=[0])
    assert sorted(answered(second)) == [3]  # just added: nothing was sent for it yet
    produce(wire, 0, b"forgotten")
    produce(wire, 3, b"kept")
    third = answered(fetch(wire, session_id, 2, {}))
    assert sorted(third) == [3]


def test_session_errors_are_top_level(wire: Wire) -> None:
    session_id = fetch(wire, 0, 0, {0: 0})["session_id"]
    wrong_epoch = fetch(wire, session_id, 5, {0: 0})
    assert wrong_epoch["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert wrong_epoch["responses"] == []
    unknown = fetch(wire, session_id + 1, 1, {0: 0})
    assert unknown["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    # The session survived the wrong epoch.
    assert fetch(wire, session_id, 1, {})["error_code"] == 0


def test_sessionless_fetch_answers_every_partition(wire: Wire) -> None:
    for _ in range(2):
        body = fetch(wire, 0, -1, dict.fromkeys(range(PARTITIONS), 0))
        assert body["session_id"] == 0
        assert body["error_code"] == 0
        assert sorted(answered(body)) == list(range(PARTITIONS))


def test_zero_cache_slots_keep_every_fetch_sessionless() -> None:
    config = {
        "auto.create.topics.enable": "false",
        "max.incremental.fetch.session.cache.slots": "0",
    }
    with Broker(config=config) as running:
        connection = Wire(running.port)
        try:
            assert connection.create_topics({TOPIC: 1}) == {TOPIC: 0}
            body = fetch(connection, 0, 0, {0: 0})
            assert (body["error_code"], body["session_id"]) == (0, 0)
            assert sorted(answered(body)) == [0]
        finally:
            connection.close()

"""``cli._wire_client`` without a broker: a scripted session answers, the tests check the requests
sent and the records returned (positions, partial and control batches, resets, errors)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from odradek.cli._wire_client import WireConsumer, WireSession
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol.api_keys import ApiKey
from odradek.records.batch import CompressionType
from odradek.records.codec import SimpleRecord, build_batch


class ScriptedSession:
    """Records each call and answers with the next scripted response for its API."""

    def __init__(self, **answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[ApiKey, dict[str, Any]]] = []

    def call(self, api_key: ApiKey, fields: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((api_key, fields))
        return self.answers[api_key.name].pop(0)


def session(scripted: ScriptedSession) -> WireSession:
    return cast(WireSession, scripted)


def batch(base_offset: int, *values: bytes, control: bool = False, gzip: bool = False) -> bytes:
    return build_batch(
        [SimpleRecord(1_000 + i, None, value) for i, value in enumerate(values)],
        base_offset=base_offset,
        control=control,
        compression=CompressionType.GZIP if gzip else CompressionType.NONE,
    )


def fetched(*partitions: tuple[int, int, bytes]) -> dict[str, Any]:
    return {
        "error_code": 0,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {"partition_index": p, "error_code": code, "records": records}
                    for p, code, records in partitions
                ],
            }
        ],
    }


def test_poll_skips_earlier_records_control_batches_and_a_partial_tail() -> None:
    data = batch(0, b"a", b"b", b"c", gzip=True) + batch(3, b"marker", control=True)
    tail = batch(4, b"d")
    scripted = ScriptedSession(
        FETCH=[fetched((0, 0, data + tail[:20])), fetched((0, 0, tail))],
    )
    consumer = WireConsumer(session(scripted), "t")
    consumer.assign([0])
    consumer.seek(0, 1)
    assert [(r.offset, r.value) for r in consumer.poll(100)] == [(1, b"b"), (2, b"c")]
    assert consumer.position(0) == 4  # past the control batch, at the partial one
    assert [(r.offset, r.value) for r in consumer.poll(100)] == [(4, b"d")]
    assert consumer.position(0) == 5
    offsets = [
        p["fetch_offset"] for _, fields in scripted.calls for p in fields["topics"][0]["partitions"]
    ]
    assert offsets == [1, 4]


def test_poll_rotates_the_partition_order() -> None:
    scripted = ScriptedSession(FETCH=[fetched(), fetched(), fetched()])
    consumer = WireConsumer(session(scripted), "t")
    consumer.assign([0, 1, 2])
    for partition in range(3):
        consumer.seek(partition, 0)
    for _ in range(3):
        consumer.poll(0)
    orders = [[p["partition"] for p in f["topics"][0]["partitions"]] for _, f in scripted.calls]
    assert orders == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]


def test_out_of_range_resets_to_earliest_and_notes_it() -> None:
    listed = {
        "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "error_code": 0, "offset": 7}]}
        ]
    }
    scripted = ScriptedSession(
        FETCH=[fetched((0, ErrorCode.OFFSET_OUT_OF_RANGE, b""))], LIST_OFFSETS=[listed]
    )
    notes: list[str] = []
    consumer = WireConsumer(session(scripted), "t", on_note=notes.append)
    consumer.assign([0])
    consumer.seek(0, 99)
    assert consumer.poll(0) == []
    assert consumer.position(0) == 7
    assert notes == ["offset 99 is out of range for t-0; resetting to the earliest offset 7"]
    assert scripted.calls[1][1]["topics"][0]["partitions"] == [
        {"partition_index": 0, "timestamp": -2}
    ]


def test_other_fetch_errors_raise() -> None:
    scripted = ScriptedSession(FETCH=[fetched((0, ErrorCode.NOT_LEADER_OR_FOLLOWER, b""))])
    consumer = WireConsumer(session(scripted), "t")
    consumer.assign([0])
    consumer.seek(0, 0)
    with pytest.raises(KafkaError, match="cannot fetch t-0") as raised:
        consumer.poll(0)
    assert raised.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

"""Connection admission against a live broker (``broker.server`` with ``broker.limits``): the
connection past ``max.connections`` or ``max.connections.per.ip`` (and its overrides) is closed
at once while the admitted ones stay served, a slot freed is reusable, and a connection idle
for ``connections.max.idle.ms`` is closed while one waiting for a long-poll Fetch is not.

Every client connects from 127.0.0.1, so the per-address limits are told apart from
``max.connections`` by the broker's refusal counters and by an override larger than the
default per-address limit.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.broker._wire import Wire, wait_for

from odradek import Broker
from odradek.protocol.api_keys import ApiKey


@pytest.fixture
def wires() -> Iterator[list[Wire]]:
    opened: list[Wire] = []
    yield opened
    for wire in opened:
        wire.close()


def connect(broker: Broker, wires: list[Wire]) -> Wire:
    wire = Wire(broker.port)
    wires.append(wire)
    return wire


def refusals(broker: Broker) -> tuple[int, int]:
    stats = broker.app.server.statistics() if broker.app.server else {}
    return stats["refused_total"], stats["refused_per_ip"]


def test_connection_past_max_connections_is_closed_and_the_others_served(
    wires: list[Wire],
) -> None:
    with Broker(config={"max.connections": "3"}) as broker:
        admitted = [connect(broker, wires) for _ in range(3)]
        assert [wire.api_versions() for wire in admitted] == [0, 0, 0]

        extra = connect(broker, wires)

        assert extra.is_closed_by_broker()
        assert refusals(broker) == (1, 0)
        assert [wire.api_versions() for wire in admitted] == [0, 0, 0]
        admitted[0].close()
        wait_for(lambda: broker.app.server.quotas.count() == 2, "the freed slot")  # type: ignore[union-attr]
        assert connect(broker, wires).api_versions() == 0


def test_connection_past_max_connections_per_ip_is_closed(wires: list[Wire]) -> None:
    with Broker(config={"max.connections.per.ip": "2"}) as broker:
        admitted = [connect(broker, wires) for _ in range(2)]
        assert [wire.api_versions() for wire in admitted] == [0, 0]

        assert connect(broker, wires).is_closed_by_broker()

        assert refusals(broker) == (0, 1)
        assert admitted[1].metadata()["brokers"][0]["node_id"] == 0


def test_per_ip_override_raises_the_limit_of_one_address(wires: list[Wire]) -> None:
    config = {"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "127.0.0.1:3"}
    with Broker(config=config) as broker:
        admitted = [connect(broker, wires) for _ in range(3)]
        assert [wire.api_versions() for wire in admitted] == [0, 0, 0]

        assert connect(broker, wires).is_closed_by_broker()

        assert refusals(broker) == (0, 1)


def test_per_ip_override_by_host_name(wires: list[Wire]) -> None:
    config = {"max.connections.per.ip": "5", "max.connections.per.ip.overrides": "localhost:1"}
    with Broker(config=config) as broker:
        assert connect(broker, wires).api_versions() == 0

        assert connect(broker, wires).is_closed_by_broker()


def test_idle_connection_is_closed_and_a_waiting_one_is_not(wires: list[Wire]) -> None:
    config = {"connections.max.idle.ms": "300", "num.partitions": "1"}
    with Broker(config=config) as broker:
        idle = connect(broker, wires)
        assert idle.api_versions() == 0
        waiting = connect(broker, wires)
        assert waiting.create_topics({"idle-topic": 1}) == {"idle-topic": 0}
        # A long poll on an empty partition: nothing moves on this connection for 1.5 s, which
        # is five idle times, but a request is in flight.
        correlation_id = waiting.send(
            ApiKey.FETCH,
            4,
            {
                "replica_id": -1,
                "max_wait": 1500,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "topics": [
                    {
                        "topic": "idle-topic",
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            },
        )

        assert idle.is_closed_by_broker()

        fetched = waiting.receive(ApiKey.FETCH, 4, correlation_id)
        [topic] = fetched["responses"]
        assert topic["partitions"][0]["error_code"] == 0
        assert waiting.is_closed_by_broker()  # then idle in its turn


def test_reading_pauses_past_queued_max_request_bytes_and_resumes(wires: list[Wire]) -> None:
    config = {"queued.max.request.bytes": "1", "num.partitions": "1"}
    with Broker(config=config) as broker:
        server = broker.app.server
        assert server is not None
        waiting = connect(broker, wires)
        assert waiting.create_topics({"queued-topic": 1}) == {"queued-topic": 0}
        correlation_id = waiting.send(
            ApiKey.FETCH,
            4,
            {
                "replica_id": -1,
                "max_wait": 1500,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "topics": [
                    {
                        "topic": "queued-topic",
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            },
        )
        # The long poll holds more than the bound: the broker stops reading this connection.
        wait_for(lambda: server.statistics()["queued_request_bytes"] > 0, "the queued bytes")
        wait_for(lambda: server._paused_for_bytes, "the connection to be paused")
        other = connect(broker, wires)
        assert other.api_versions() == 0  # a connection adding nothing is still read
        metadata_id = waiting.send(ApiKey.METADATA, 4, {"topics": None})

        assert waiting.receive(ApiKey.FETCH, 4, correlation_id)["responses"]

        # Answered, the bytes are released and reading resumes: the Metadata is read and answered.
        assert waiting.receive(ApiKey.METADATA, 4, metadata_id)["brokers"]
        assert server.statistics()["queued_request_bytes"] == 0
        assert not server._paused_for_bytes

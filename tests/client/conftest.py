"""Fixtures for the client tests: an embedded broker on 127.0.0.1 (ephemeral port, temp dir),
and a way to write record batches to it without the producer under test."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest

from odradek import Broker
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.batch import CompressionType
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

#: ``produce(topic, partition, records, compression=...) -> base offset``: one batch, acks=all.
Produce = Callable[..., int]


@pytest.fixture
def broker() -> Iterator[Broker]:
    """A started embedded broker, stopped (and its data removed) after the test."""
    with Broker() as started:
        yield started


@pytest.fixture
def produce(broker: Broker) -> Iterator[Produce]:
    """Writes one batch per call straight over the wire (acks=all) and returns its base offset."""
    network = NetworkClient(ClientConfig(bootstrap_servers=broker.bootstrap_servers))

    def write(
        topic: str,
        partition: int,
        records: Sequence[SimpleRecord],
        *,
        compression: CompressionType = CompressionType.NONE,
    ) -> int:
        batch = build_batch(records, compression=compression)
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout": 5_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }
        future = network.send(-1, ApiKey.PRODUCE, body, versions=VersionRange(3, 7))
        assert network.wait([future], network.clock.monotonic_ms() + 10_000)
        [result] = future.result()["responses"][0]["partition_responses"]
        assert result["error_code"] == ErrorCode.NONE, result
        return int(result["base_offset"])

    yield write
    network.close()

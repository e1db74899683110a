"""One record produced with confluent-kafka, for the fault tests: the delivery error, or
``None`` once acknowledged."""

from __future__ import annotations

from confluent_kafka import KafkaError, Producer


def produce_one(
    bootstrap_servers: str,
    topic: str,
    partition: int,
    *,
    acks: str,
    timeout_s: float = 10.0,
    value: bytes = b"value",
) -> KafkaError | None:
    """Produces one record (``value``) to ``topic``-``partition``; returns its delivery error
    (``None``: acknowledged). Retriable errors are retried until ``timeout_s``."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "acks": acks,
            "message.timeout.ms": int(timeout_s * 1000),
            "socket.connection.setup.timeout.ms": 3000,
        }
    )
    outcome: list[KafkaError | None] = []
    producer.produce(
        topic, value, partition=partition, on_delivery=lambda error, _: outcome.append(error)
    )
    producer.flush(timeout_s + 10)
    assert outcome, "no delivery report"
    return outcome[0]

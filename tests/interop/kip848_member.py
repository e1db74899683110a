"""A confluent-kafka group consumer for the KIP-848 interop test, run as a subprocess (so the
test can SIGKILL it).

    python kip848_member.py PROTOCOL BOOTSTRAP TOPIC GROUP

PROTOCOL is ``consumer`` (KIP-848's ConsumerGroupHeartbeat) or ``classic`` (JoinGroup /
SyncGroup, eager range). Prints one JSON object a line, each with ``t`` (wall-clock seconds):
``{"assigned": [partitions]}`` on entering the assign callback (before consuming them),
``{"revoked": [partitions]}`` at the end of the revoke or lost callback (after the last
record of them was handled and committed), ``{"record": [partition, offset]}`` per record,
``{"committed": {partition: offset}}`` after each synchronous commit. Runs until killed;
SIGTERM closes the consumer (it leaves the group) and exits.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition


def emit(**event: Any) -> None:
    event["t"] = time.time()
    print(json.dumps(event), flush=True)


def main() -> None:
    protocol, bootstrap, topic, group = sys.argv[1:5]
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    else:
        config.update(
            {
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "partition.assignment.strategy": "range",
            }
        )
    consumer = Consumer(config)
    positions: dict[int, int] = {}

    def commit() -> None:
        if not positions:
            return
        offsets = [TopicPartition(topic, p, o) for p, o in positions.items()]
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except Exception as error:  # fenced or rebalanced meanwhile: the next owner re-reads
            emit(commit_failed=str(error))
        else:
            emit(committed=dict(positions))
        positions.clear()

    def on_assign(_consumer: Any, partitions: list[TopicPartition]) -> None:
        emit(assigned=sorted(tp.partition for tp in partitions))

    def on_revoke(_consumer: Any, partitions: list[TopicPartition]) -> None:
        commit()
        emit(revoked=sorted(tp.partition for tp in partitions))

    def on_lost(_consumer: Any, partitions: list[TopicPartition]) -> None:
        positions.clear()
        emit(revoked=sorted(tp.partition for tp in partitions), lost=True)

    stopping = False

    def stop(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not stopping:
        for message in consumer.consume(100, 0.1):
            if message.error():
                continue
            emit(record=[message.partition(), message.offset()])
            positions[message.partition()] = message.offset() + 1
        commit()
    consumer.close()
    emit(closed=True)


if __name__ == "__main__":
    main()

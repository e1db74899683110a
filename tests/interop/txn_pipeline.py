"""A consume-transform-produce loop with confluent-kafka transactions, run as a subprocess by
test_transactions.py: reads ``in_topic`` in group ``group`` (read_committed), writes
``out-<value>`` for each record to ``out_topic`` and commits the consumed offsets in the same
transaction (``send_offsets_to_transaction``).

Prints ``READY`` once its producer is initialised, ``COMMITTED <n>`` after each transaction,
``PAUSED`` when ``--pause-after N`` transactions have committed and a further one has its
records and offsets sent but not committed (it then waits to be killed), and ``DONE`` when it
has consumed up to the end of ``in_topic``.

With ``--odradek`` (first option) the loop uses odradek's own ``Consumer`` and transactional
``Producer`` instead of confluent-kafka's.

Usage: python txn_pipeline.py BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP TRANSACTIONAL_ID
       [--odradek] [--pause-after N]
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from odradek import Consumer as OdradekConsumer
from odradek import Producer as OdradekProducer
from odradek import SimpleConsumer
from odradek import TopicPartition as OdradekTopicPartition


def main(argv: list[str]) -> int:
    bootstrap, in_topic, out_topic, group, transactional_id = argv[:5]
    options = argv[5:]
    pause_after = (
        int(options[options.index("--pause-after") + 1]) if "--pause-after" in options else -1
    )
    if "--odradek" in options:
        return with_odradek(bootstrap, in_topic, out_topic, group, transactional_id, pause_after)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    )
    producer.init_transactions(60)
    print("READY", flush=True)
    consumer.subscribe([in_topic])
    committed = 0
    while True:
        messages = [m for m in consumer.consume(num_messages=7, timeout=0.5) if not m.error()]
        if not messages:
            assignment = consumer.assignment()
            if assignment and all(
                consumer.position([tp])[0].offset
                >= consumer.get_watermark_offsets(tp, timeout=10)[1]
                for tp in assignment
            ):
                print("DONE", flush=True)
                time.sleep(3600)
            continue
        producer.begin_transaction()
        for message in messages:
            producer.produce(out_topic, value=b"out-" + (message.value() or b""), partition=0)
        positions = consumer.position(
            [
                TopicPartition(t, p)
                for t, p in sorted({(m.topic(), m.partition()) for m in messages})
            ]
        )
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        if committed == pause_after:
            producer.flush(30)
            print("PAUSED", flush=True)
            time.sleep(3600)
        producer.commit_transaction(30)
        committed += 1
        print(f"COMMITTED {committed}", flush=True)


def with_odradek(
    bootstrap: str,
    in_topic: str,
    out_topic: str,
    group: str,
    transactional_id: str,
    pause_after: int,
) -> int:
    consumer = OdradekConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    producer = OdradekProducer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    )
    producer.init_transactions()
    print("READY", flush=True)
    with SimpleConsumer({"bootstrap.servers": bootstrap}) as offsets:
        end = offsets.latest_offset(in_topic, 0)
    consumer.subscribe([in_topic])
    committed = 0
    while True:
        records = consumer.poll(timeout_ms=500, max_records=7)
        if not records:
            tp = OdradekTopicPartition(in_topic, 0)
            if tp in consumer.assignment() and consumer.position(tp) >= end:
                print("DONE", flush=True)
                time.sleep(3600)
            continue
        producer.begin_transaction()
        for record in records:
            producer.send(out_topic, b"out-" + (record.value or b""), partition=0)
        positions = {tp: consumer.position(tp) for tp in consumer.assignment()}
        producer.send_offsets_to_transaction(positions, group)
        if committed == pause_after:
            producer.flush()
            print("PAUSED", flush=True)
            time.sleep(3600)
        producer.commit_transaction()
        committed += 1
        print(f"COMMITTED {committed}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

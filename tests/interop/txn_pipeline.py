"""A consume-transform-produce loop with confluent-kafka transactions, run as a subprocess by
test_transactions.py: reads ``in_topic`` in group ``group`` (read_committed), writes
``out-<value>`` for each record to ``out_topic`` and commits the consumed offsets in the same
transaction (``send_offsets_to_transaction``).

Prints ``READY`` once its producer is initialised, ``COMMITTED <n>`` after each transaction,
``PAUSED`` when ``--pause-after N`` transactions have committed and a further one has its
records and offsets sent but not committed (it then waits to be killed), and ``DONE`` when it
has consumed up to the end of ``in_topic``.

Usage: python txn_pipeline.py BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP TRANSACTIONAL_ID [--pause-after N]
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def main(argv: list[str]) -> int:
    bootstrap, in_topic, out_topic, group, transactional_id = argv[:5]
    pause_after = int(argv[6]) if len(argv) > 6 and argv[5] == "--pause-after" else -1
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

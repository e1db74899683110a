"""What transactions cost a producer: confluent-kafka committing a transaction every 100 ms
against the same producer idempotent only, measured in the same run.

Each round produces ``--records`` × 100 B to one partition of an embedded broker over
127.0.0.1 with acks=all, ``enable.idempotence`` true and 5 requests in flight for both; the
transactional producer also calls ``begin_transaction`` / ``commit_transaction`` every
``--commit-ms`` (100 by default), so each transaction adds AddPartitionsToTxn, EndTxn, the
``__transaction_state`` appends and a marker per partition. Records/s of both, one after the
other in each round (alternating which goes first), and the median ratio transactional /
idempotent (1.00 = free).

    .venv/bin/python bench/transactional_produce.py [--records 200000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from confluent_kafka import Producer

from odradek import Broker


def produce_rate(
    bootstrap: str, topic: str, records: int, transactional_id: str | None, commit_ms: int
) -> tuple[float, int]:
    """Records/s and how many transactions committed (0 for the idempotent producer)."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "max.in.flight.requests.per.connection": 5,
        "linger.ms": 5,
        "batch.size": 1_000_000,
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    producer = Producer(config)
    value = os.urandom(100)
    failed: list[Any] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failed.append(error)

    if transactional_id is not None:
        producer.init_transactions(30)
        producer.begin_transaction()
    producer.produce(topic, value, partition=0)  # metadata and producer id before timing
    if transactional_id is not None:
        producer.commit_transaction(30)
        producer.begin_transaction()
    producer.flush(30)
    commits = 0
    start = time.perf_counter()
    next_commit = start + commit_ms / 1000
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        if transactional_id is not None and time.perf_counter() >= next_commit:
            producer.commit_transaction(60)
            commits += 1
            producer.begin_transaction()
            next_commit = time.perf_counter() + commit_ms / 1000
    if transactional_id is not None:
        producer.commit_transaction(60)
        commits += 1
    producer.flush(120)
    elapsed = time.perf_counter() - start
    assert not failed, failed[:3]
    return records / elapsed, commits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--commit-ms", type=int, default=100)
    args = parser.parse_args()
    print(
        f"confluent-kafka → embedded broker, {args.records} × 100 B, records/s "
        f"(transactional: a commit every {args.commit_ms} ms)"
    )
    with Broker(config={"num.partitions": 1, "transaction.state.log.num.partitions": 4}) as broker:
        ratios = []
        for round_ in range(args.rounds):
            runs: dict[str, tuple[float, int]] = {}
            # Alternate which goes first: the first run of a round pays for warming up.
            order = ("idem", "txn") if round_ % 2 == 0 else ("txn", "idem")
            for kind in order:
                runs[kind] = produce_rate(
                    broker.bootstrap_servers,
                    f"{kind}-{round_}",
                    args.records,
                    f"bench-{round_}" if kind == "txn" else None,
                    args.commit_ms,
                )
            idempotent = runs["idem"][0]
            transactional, commits = runs["txn"]
            ratios.append(transactional / idempotent)
            print(
                f"  round {round_}: idempotent {idempotent:10,.0f}  transactional "
                f"{transactional:10,.0f} ({commits} commits)"
            )
        print(f"  median ratio transactional / idempotent {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()

"""An odradek group consumer with ``group.protocol=consumer`` for the KIP-848 tests, run as a
subprocess (so a test can SIGKILL it); the odradek twin of ``kip848_member.py``.

    python odradek_kip848_member.py BOOTSTRAP TOPIC GROUP

Prints the same JSON lines as ``kip848_member.py`` (``assigned`` on entering the assign
callback, ``revoked`` at the end of the revoke or lost callback after committing what was
read, ``record``, ``committed``), each with ``t`` (wall-clock seconds). Runs until killed;
SIGTERM closes the consumer (it leaves the group) and exits.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

from odradek import Consumer, OffsetAndMetadata, TopicPartition


def emit(**event: Any) -> None:
    event["t"] = time.time()
    print(json.dumps(event), flush=True)


def main() -> None:
    bootstrap, topic, group = sys.argv[1:4]
    consumer = Consumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        group_protocol="consumer",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    positions: dict[int, int] = {}

    def commit() -> None:
        if not positions:
            return
        offsets = {TopicPartition(topic, p): OffsetAndMetadata(o) for p, o in positions.items()}
        try:
            consumer.commit_sync(offsets)
        except Exception as error:  # fenced meanwhile: the next owner re-reads
            emit(commit_failed=str(error))
        else:
            emit(committed=dict(positions))
        positions.clear()

    class Listener:
        def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
            emit(assigned=sorted(tp.partition for tp in partitions))

        def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
            commit()
            emit(revoked=sorted(tp.partition for tp in partitions))

        def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
            positions.clear()
            emit(revoked=sorted(tp.partition for tp in partitions), lost=True)

    stopping = False

    def stop(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    consumer.subscribe([topic], listener=Listener())
    while not stopping:
        for record in consumer.poll(100):
            emit(record=[record.partition, record.offset])
            positions[record.partition] = record.offset + 1
        commit()
    consumer.close()
    emit(closed=True)


if __name__ == "__main__":
    main()

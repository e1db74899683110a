"""An idempotent producer across leader failures on 3 ``odradek serve`` brokers and a real
ZooKeeper: confluent-kafka with ``enable.idempotence=true`` produces while the partition
leader is killed with SIGKILL (and restarted) twice. Batches in flight to the dead leader are
resent to the new one with their sequences; the new leader knows them from the producer state
it rebuilt as a follower, so each record is stored exactly once: no duplicate, no loss, and
every acknowledged record at the offset its acknowledgement gave."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.testing.cluster import Cluster

from .test_replication_acceptance import SETTINGS, _create, _producer, _read_all, _state, _wait

pytestmark = pytest.mark.cluster


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(3, zookeeper_chroot, tmp_path, settings=SETTINGS) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def test_an_idempotent_producer_survives_kill_of_the_leader_without_duplicates(
    cluster: Cluster,
) -> None:
    _create(cluster, "exactly", partitions=1, configs={"min.insync.replicas": "2"})
    # Small batches: a failover leaves thousands of records queued, and librdkafka 2.16 then
    # sometimes cannot rebuild a 10,000-record batch for its retry ("Unable to reconstruct
    # MessageSet", a fatal client-side _INCONSISTENT, as in its issue 4736).
    producer = _producer(
        cluster, **{"enable.idempotence": True, "linger.ms": 2, "batch.num.messages": 200}
    )
    acknowledged: dict[bytes, int] = {}
    errors: list[Any] = []
    sent: list[bytes] = []
    stop = threading.Event()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acknowledged[message.value()] = message.offset()
        else:
            errors.append(error)

    def produce() -> None:
        index = 0
        while not stop.is_set():
            value = f"r-{index}".encode()
            producer.produce("exactly", value, partition=0, on_delivery=delivered)
            sent.append(value)
            index += 1
            producer.poll(0.002)
        producer.flush(90)

    thread = threading.Thread(target=produce, name="producer")
    thread.start()
    try:
        for _ in range(2):
            count = len(acknowledged)
            _wait(lambda c=count: len(acknowledged) > c + 300, "acknowledgements")
            leader = _state(cluster, "exactly")["leader"]
            cluster.kill(leader)
            _wait(
                lambda old=leader: _state(cluster, "exactly")["leader"] not in (old, -1),
                "a new leader",
            )
            count = len(acknowledged)
            _wait(lambda c=count: len(acknowledged) > c + 300, "acknowledgements after failover")
            cluster.restart(leader)
            _wait(
                lambda: sorted(_state(cluster, "exactly")["isr"]) == [0, 1, 2],
                "the restarted broker back in the ISR",
            )
    finally:
        stop.set()
        thread.join(120)
    assert not thread.is_alive()
    assert errors == [], "an idempotent producer retries through a leader change"
    records = _read_all(cluster, "exactly", 1)
    copies = Counter(records.values())
    duplicated = {value: n for value, n in copies.items() if n > 1}
    assert duplicated == {}, f"{len(duplicated)} records stored more than once"
    assert set(copies) == set(sent), "every record sent is stored (none lost)"
    moved = {v: at for v, at in acknowledged.items() if records.get((0, at)) != v}
    assert moved == {}
    assert len(acknowledged) == len(sent) > 1_200

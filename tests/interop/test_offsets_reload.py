"""``__consumer_offsets`` compaction and reload with real clients: a group commits the same
partitions many times (confluent-kafka), another group commits and is deleted (DeleteGroups);
the offsets partitions are cleaned; the broker restarts on the same data directory; then the
kept group's committed offsets are exactly its last ones (kafka-python's
``KafkaConsumer.committed``, an OffsetFetch) and the deleted group stays deleted.

The broker has no ``offsets.topic.segment.bytes`` setting (the topic is created with Kafka's
100 MiB segments), so the test shrinks the segments with IncrementalAlterConfigs on
``__consumer_offsets`` (which Kafka allows too), so the commits spread over several segments.
The active segment is never cleaned: the test rolls each offsets log (embedded broker) so every
record is cleanable, and runs the cleaner by hand (``log.cleaner.enable=false``) until no log
needs cleaning.
"""

from __future__ import annotations

import socket
import tempfile
import time
import warnings
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from odradek import Broker
from odradek._types import TopicPartition as LogPartition
from odradek.broker.group.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_key,
    decode_offset_commit_value,
    partition_for_group,
)
from odradek.broker.group.runtime import OFFSETS_TOPIC, read_coordinator_records
from odradek.storage.log import Log

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

pytestmark = pytest.mark.interop

OFFSETS_PARTITIONS = 3
TOPIC_PARTITIONS = 4
COMMIT_ROUNDS = 150
SEGMENT_BYTES = 4096
CONFIG = {
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.enable": "false",
}
TOPIC = "reload"
KEPT = "reload-kept"
DELETED = "reload-deleted"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def offsets_logs(broker: Broker) -> list[Log]:
    manager = broker.app.log_manager
    assert manager is not None
    logs = [manager.get_log(LogPartition(OFFSETS_TOPIC, p)) for p in range(OFFSETS_PARTITIONS)]
    return [log for log in logs if log is not None]


def offsets_log(broker: Broker, partition: int) -> Log:
    manager = broker.app.log_manager
    assert manager is not None
    log = manager.get_log(LogPartition(OFFSETS_TOPIC, partition))
    assert log is not None
    return log


def stored(broker: Broker) -> tuple[int, Counter[object], dict[OffsetCommitKey, int | None]]:
    """(bytes, records per key, last committed offset per key: None for a tombstone) of the
    offsets partitions, read from their logs."""
    size = 0
    per_key: Counter[object] = Counter()
    last: dict[OffsetCommitKey, int | None] = {}
    for log in offsets_logs(broker):
        size += log.size_bytes
        for key_bytes, value in read_coordinator_records(log, log.log_end_offset):
            assert key_bytes is not None
            key = decode_key(key_bytes)
            per_key[key] += 1
            if isinstance(key, OffsetCommitKey):
                last[key] = None if value is None else decode_offset_commit_value(value).offset
    return size, per_key, last


def commit(consumer: Consumer, offset: int) -> None:
    offsets = [TopicPartition(TOPIC, p, offset + p) for p in range(TOPIC_PARTITIONS)]
    consumer.commit(offsets=offsets, asynchronous=False)


def joined(bootstrap: str, group: str) -> Consumer:
    """A member of ``group`` subscribed to the topic, holding its assignment."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 20
    while not consumer.assignment():
        assert time.monotonic() < deadline, f"{group}: no assignment"
        consumer.poll(0.05)
    return consumer


def alter_offsets_topic(bootstrap: str, name: str, value: str) -> None:
    """Sets one topic config of ``__consumer_offsets`` (IncrementalAlterConfigs)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, OFFSETS_TOPIC, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)


def committed_after_restart(bootstrap: str, group: str) -> dict[int, int | None]:
    """The group's committed offsets (OffsetFetch through kafka-python)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {
            p: consumer.committed(KafkaTopicPartition(TOPIC, p)) for p in range(TOPIC_PARTITIONS)
        }
    finally:
        consumer.close()


def test_cleaned_offsets_reload_to_the_last_commits_and_deleted_groups_stay_deleted() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="odradek-offsets-reload-") as data_dir:
        with Broker(data_dir, port=port, config=CONFIG) as broker:
            bootstrap = broker.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(TOPIC, TOPIC_PARTITIONS, 1)])[TOPIC].result(10)

            # The deleted group: a member commits, leaves, and the group is deleted.
            member = joined(bootstrap, DELETED)
            # __consumer_offsets exists by now: small segments, tombstones kept for 0 ms after
            # the pass that first keeps them.
            alter_offsets_topic(bootstrap, "segment.bytes", str(SEGMENT_BYTES))
            alter_offsets_topic(bootstrap, "delete.retention.ms", "0")
            for offset in range(1, 21):
                commit(member, offset)
            member.close()
            admin.delete_consumer_groups([DELETED])[DELETED].result(10)

            # The kept group: many commits of the same four partitions, then it leaves.
            member = joined(bootstrap, KEPT)
            for offset in range(1, COMMIT_ROUNDS + 1):
                commit(member, offset)
            member.close()
            last = {p: COMMIT_ROUNDS + p for p in range(TOPIC_PARTITIONS)}

            size_before, per_key_before, _ = stored(broker)
            kept_keys = {OffsetCommitKey(KEPT, TOPIC, p) for p in range(TOPIC_PARTITIONS)}
            deleted_keys = {OffsetCommitKey(DELETED, TOPIC, p) for p in range(TOPIC_PARTITIONS)}
            assert all(per_key_before[key] == COMMIT_ROUNDS for key in kept_keys)
            assert all(per_key_before[key] == 21 for key in deleted_keys)  # 20 + the tombstone
            kept_log = offsets_log(broker, partition_for_group(KEPT, OFFSETS_PARTITIONS))
            assert len(kept_log.segments()) > 3, "the commits should span several segments"

            # Every record cleanable (the active segment never is), then clean until done.
            for log in offsets_logs(broker):
                log.roll()
            assert broker.app.log_manager is not None
            cleaner = broker.app.log_manager.cleaner
            passes = 0
            while cleaner.clean_once() is not None:
                passes += 1
                assert passes <= 10 * OFFSETS_PARTITIONS, "the cleaner never finished"
            assert passes >= 1

            size_after, per_key_after, last_stored = stored(broker)
            assert size_after < size_before / 4, (size_before, size_after)
            # Superseded records are gone: one record per key, the last value; of the deleted
            # group's keys at most their tombstones are left (they go in the pass after the one
            # that first kept them).
            assert all(count == 1 for count in per_key_after.values()), per_key_after
            assert {key: last_stored[key] for key in kept_keys} == {
                OffsetCommitKey(KEPT, TOPIC, p): o for p, o in last.items()
            }
            assert all(last_stored.get(key) is None for key in deleted_keys)
            assert GroupMetadataKey(KEPT) in per_key_after

            # The first pass stamped the tombstones with their delete horizon (KIP-534: now +
            # delete.retention.ms, 0 here); the next pass drops them. A pass needs something
            # dirty: a few more commits of the kept group (same offsets partition).
            member = joined(bootstrap, KEPT)
            for offset in range(COMMIT_ROUNDS + 1, COMMIT_ROUNDS + 11):
                commit(member, offset)
            member.close()
            last = {p: COMMIT_ROUNDS + 10 + p for p in range(TOPIC_PARTITIONS)}
            for log in offsets_logs(broker):
                log.roll()
            while cleaner.clean_once() is not None:
                passes += 1
                assert passes <= 20 * OFFSETS_PARTITIONS, "the cleaner never finished"
            _, per_key_after, last_stored = stored(broker)
            assert not deleted_keys & set(last_stored), "the tombstones should be gone"
            assert GroupMetadataKey(DELETED) not in per_key_after
            assert {key: last_stored[key] for key in kept_keys} == {
                OffsetCommitKey(KEPT, TOPIC, p): o for p, o in last.items()
            }

        with Broker(data_dir, port=port, config=CONFIG) as broker:
            assert committed_after_restart(bootstrap, KEPT) == last
            assert committed_after_restart(bootstrap, DELETED) == dict.fromkeys(
                range(TOPIC_PARTITIONS)
            )
            listed = admin_groups(bootstrap)
            assert KEPT in listed
            assert DELETED not in listed
            # What was cleaned stays cleaned: nothing replayed back into the logs.
            assert stored(broker)[1] == per_key_after


def admin_groups(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = admin.list_consumer_groups().result(10)
    return {listing.group_id for listing in result.valid}

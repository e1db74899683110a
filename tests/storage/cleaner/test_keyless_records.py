"""A compacted topic refuses records without a key (INVALID_RECORD), as Kafka does: on the
leader's append path of the log, and end to end through a produce request."""

from __future__ import annotations

import uuid
import warnings
from typing import TYPE_CHECKING

import pytest

from odradek.errors import ErrorCode, InvalidRecordError
from odradek.records.batch import CompressionType
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord

if TYPE_CHECKING:
    from tests.storage.conftest import LogHarness

T = 1_700_000_000_000


def records(*keys: bytes | None) -> list[SimpleRecord]:
    return [SimpleRecord(T, key, b"v") for key in keys]


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD])
def test_a_leader_append_with_a_keyless_record_is_refused(
    logs: LogHarness, policy: str, codec: CompressionType
) -> None:
    log = logs.open(cleanup_policy=policy)
    log.append(build_batch(records(b"a"), compression=codec))
    with pytest.raises(InvalidRecordError, match="without a key") as raised:
        log.append(build_batch(records(b"b", None, b"c"), compression=codec))
    assert raised.value.error_code == ErrorCode.INVALID_RECORD
    # KIP-467: the keyless record is named by its index in the batch.
    assert [index for index, _ in raised.value.record_errors] == [1]
    # Nothing of the batch went in; the next append carries on at the same offset.
    assert log.log_end_offset == 1
    assert log.append(build_batch(records(b"d"), compression=codec)).first_offset == 1


def test_only_compacted_logs_and_leader_appends_check_keys(logs: LogHarness) -> None:
    deleting = logs.open()
    assert deleting.append(build_batch(records(None))).records_count == 1
    compacted = logs.open(directory=str(logs.root / "other-0"), cleanup_policy="compact")
    # A follower copies the leader's log as it is.
    follower_batch = build_batch(records(None), base_offset=0)
    assert compacted.append(follower_batch, assign_offsets=False).records_count == 1
    # Control batches carry keys of their own; they are not checked as data.
    control = build_batch(records(b"\x00\x00\x00\x01"), control=True, base_offset=1)
    assert compacted.append(control, assign_offsets=False).first_offset == 1


def test_produce_of_a_keyless_record_to_a_compacted_topic_answers_invalid_record() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaProducer  # noqa: PLC0415
        from kafka.admin import KafkaAdminClient, NewTopic  # noqa: PLC0415
        from kafka.errors import InvalidRecordError as ClientInvalidRecordError  # noqa: PLC0415

    from odradek.broker.embedded import Broker  # noqa: PLC0415

    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    with Broker() as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, retries=0)
        try:
            admin.create_topics(
                [NewTopic(topic, 1, 1, topic_configs={"cleanup.policy": "compact"})]
            )
            assert producer.send(topic, key=b"k", value=b"v").get(timeout=10).offset == 0
            with pytest.raises(ClientInvalidRecordError):
                producer.send(topic, value=b"no key").get(timeout=10)
            assert producer.send(topic, key=b"k", value=b"w").get(timeout=10).offset == 1
        finally:
            producer.close()
            admin.close()

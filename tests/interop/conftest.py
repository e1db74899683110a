"""Shared parts of the interop tests: one embedded broker per module, the records every client
produces, and the checks every client's read-back goes through.

Each client module produces ``make_records(...)`` (keyed and unkeyed records, several headers
including a repeated name and an empty value, explicit create timestamps, some records sent to
an explicit partition), reads the topic back from offset 0 by explicit partition assignment
and hands what it read, as ``Consumed`` values, to ``verify_round_trip``. That check compares
every key, value, header and timestamp with what was produced, and the order and offsets within
each partition; ``expected_offset_for_time`` then gives the answer ListOffsets must give for a
timestamp, computed from the verified read-back.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from odradek import Broker
from odradek.records.batch import CompressionType, iter_batches
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import SecureBroker, add_scram_user, broker_settings

INTEROP_DIR = Path(__file__).parent
REPO_ROOT = INTEROP_DIR.parent.parent
VENV_BIN = REPO_ROOT / ".venv" / "bin"

#: Partitions of an auto-created topic (kcat's: no admin API); admin-created: ``PARTITIONS``.
DEFAULT_PARTITIONS = 3
PARTITIONS = 4
#: Create timestamps of produced records: ``BASE_TIMESTAMP_MS + 1000 * sequence``.
BASE_TIMESTAMP_MS = 1_700_000_000_000
RECORD_COUNT = 40

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True, slots=True)
class Produced:
    """One record as a client was asked to send it (``partition`` None: the partitioner's)."""

    seq: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int
    partition: int | None


@dataclass(frozen=True, slots=True)
class Consumed:
    """One record as a client read it back."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


def make_records(
    tag: str, partitions: int, count: int = RECORD_COUNT, *, with_timestamps: bool = True
) -> list[Produced]:
    """``count`` distinct records: even sequences keyed (five keys, so several records share a
    key), odd ones unkeyed; every third unkeyed record goes to an explicit partition; headers
    vary (none, one, a repeated name, an empty value, non-ASCII bytes)."""
    records = []
    for seq in range(count):
        key = f"key-{seq % 5}".encode() if seq % 2 == 0 else None
        header_shapes: list[tuple[tuple[str, bytes], ...]] = [
            (),
            (("trace", f"t{seq}".encode()),),
            (("dup", b"first"), ("dup", b"second"), ("seq", str(seq).encode())),
            (("empty", b""), ("bin", bytes([0, 255, seq % 256]))),
        ]
        partition = (seq // 2) % partitions if seq % 6 == 1 else None
        records.append(
            Produced(
                seq=seq,
                key=key,
                value=f"{tag}|{seq:05d}|".encode() + b"x" * (64 + seq * 7 % 50),
                headers=header_shapes[seq % len(header_shapes)],
                timestamp_ms=BASE_TIMESTAMP_MS + 1000 * seq if with_timestamps else -1,
                partition=partition,
            )
        )
    return records


def _seq_of(value: bytes | None) -> int:
    assert value is not None, "a record came back with a null value"
    return int(value.split(b"|")[1])


def verify_round_trip(
    produced: Sequence[Produced],
    consumed: Sequence[Consumed],
    *,
    partitions: int,
    timestamps: tuple[int, int] | None = None,
    check_headers: bool = True,
) -> dict[int, list[Consumed]]:
    """Checks that ``consumed`` is exactly ``produced``: the same records, none missing, none
    twice; each one's key, value, headers and timestamp as sent; explicit partitions honoured;
    one key in one partition (when the partitioner chose it); within each partition offsets 0,
    1, 2, ... in send order.

    Args:
        timestamps: ``(low, high)`` when the client cannot set timestamps (kcat): each record's
            timestamp must then lie in that window instead of matching exactly.
        check_headers: False only for clients whose output cannot carry headers.

    Returns:
        The consumed records by partition, in offset order.
    """
    by_seq = {record.seq: record for record in produced}
    seen = [_seq_of(record.value) for record in consumed]
    duplicated = sorted({seq for seq in seen if seen.count(seq) > 1})
    assert not duplicated, f"records read more than once: {duplicated}"
    missing = sorted(set(by_seq) - set(seen))
    assert not missing, f"records never read back: {missing}"
    assert len(consumed) == len(produced)

    by_partition: dict[int, list[Consumed]] = defaultdict(list)
    partition_of_key: dict[bytes, int] = {}
    for record in consumed:
        sent = by_seq[_seq_of(record.value)]
        assert 0 <= record.partition < partitions
        assert (record.key, record.value) == (sent.key, sent.value), sent
        if check_headers:
            assert record.headers == sent.headers, sent
        if timestamps is None:
            assert record.timestamp_ms == sent.timestamp_ms, sent
        else:
            low, high = timestamps
            assert low <= record.timestamp_ms <= high, (record.timestamp_ms, timestamps)
        if sent.partition is not None:
            assert record.partition == sent.partition, sent
        if sent.key is not None and sent.partition is None:
            # The partitioner sends one key to one partition.
            assert partition_of_key.setdefault(sent.key, record.partition) == record.partition
        by_partition[record.partition].append(record)

    for partition, records in by_partition.items():
        records.sort(key=lambda record: record.offset)
        offsets = [record.offset for record in records]
        assert offsets == list(range(len(records))), (partition, offsets)
        seqs = [_seq_of(record.value) for record in records]
        assert seqs == sorted(seqs), f"partition {partition} out of send order: {seqs}"
    return dict(by_partition)


def expected_offset_for_time(records: Sequence[Consumed], timestamp_ms: int) -> int | None:
    """The offset ListOffsets must answer for ``timestamp_ms`` in a partition whose records
    are ``records`` (offset order, timestamps not decreasing): the first with a timestamp at or
    after it, None when there is none."""
    for record in records:
        if record.timestamp_ms >= timestamp_ms:
            return record.offset
    return None


def stored_codecs(broker: Broker, topic: str) -> set[str]:
    """The codecs of the record batches the broker stored for ``topic`` (read from its segment
    files), so a codec case proves the client really compressed with that codec."""
    codecs = set()
    for segment in sorted(Path(broker.data_dir).glob(f"{topic}-*/*.log")):
        for _position, header in iter_batches(segment.read_bytes()):
            codecs.add(CompressionType(header.compression).name.lower())
    return codecs


def wait_until(condition: Callable[[], bool], timeout_s: float = 15.0, what: str = "") -> None:
    """Polls ``condition`` until it holds, failing the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what or condition}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    """One embedded broker for the whole module (auto-created topics get 3 partitions)."""
    with Broker(config={"num.partitions": str(DEFAULT_PARTITIONS)}) as running:
        yield running


def node_env() -> dict[str, str]:
    """The environment for node scripts (kafkajs quiet unless a test asks for logs)."""
    env = dict(os.environ)
    env.setdefault("KAFKAJS_NO_PARTITIONER_WARNING", "1")
    return env


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """One secured broker per module (``odradek.testing.secure_broker``: six listeners, test
    certificates, the PLAIN and SCRAM users)."""
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    with Broker(config=broker_settings(certificates)) as running:
        add_scram_user(running)
        yield SecureBroker(running, certificates)

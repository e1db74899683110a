"""Per-partition producer state: what the log knows of each idempotent producer (KIP-98).

For each producer id that appended to the partition this keeps its epoch, the metadata of its
last five batches (first/last sequence, first/last offset, max timestamp) and the time of its
last append. The leader checks every idempotent batch against it before the append
(``check``); leader and followers then record each appended batch (``update``). Followers never
check: they take what their leader appended, which is how the state travels with the log and is
there when a follower becomes leader.

Rules kept on the leader (Kafka's ``ProducerAppendInfo``, KIP-98 and KIP-360):

- a batch whose epoch and sequence range equal one of the producer's last five batches is a
  duplicate (a retry whose response was lost): ``check`` returns that batch's metadata and the
  caller answers with its original offsets, appending nothing;
- an epoch below the producer's current one is fenced: INVALID_PRODUCER_EPOCH (the Produce
  answer since Kafka 2.7, KIP-588; PRODUCER_FENCED belongs to the transactional APIs);
- a new epoch must start at sequence 0, and the same epoch must continue at last sequence + 1
  (after 2^31-1 comes 0): OUT_OF_ORDER_SEQUENCE_NUMBER otherwise, nothing appended;
- a producer the partition does not know whose batch does not start at sequence 0 gets
  UNKNOWN_PRODUCER_ID (its state expired, or was never here): librdkafka then resets its
  producer id when no earlier message of the batch can have been written, and raises a fatal
  error otherwise, so the answer never leads to a duplicate. The state of a producer whose
  records went with retention or DeleteRecords is kept until it expires (KIP-360), so that
  case does not arise from moving the log start offset.

Entries expire ``producer.id.expiration.ms`` after their last append by the broker's clock
(``remove_expired``). Kafka counts from the batch's max timestamp, which is the producer's
CreateTime: a producer writing records with timestamps over a day old (a replay, a backfill)
would lose its state at every expiry check and get UNKNOWN_PRODUCER_ID; the append time cannot
be set by a client. State rebuilt by scanning the log counts its producers as appended at load
time (the scan does not know when they were).

Snapshots: the whole state as bytes (``encode_snapshot`` / ``decode_snapshot``), stored by
``producer_snapshots`` as ``<offset>.snapshot`` where the offset is the log end offset the
state covers. Byte layout (big-endian)::

    int16  version = 1
    uint32 crc32c of everything after this field
    int32  entry count
    per entry:
        int64 producer_id   int16 producer_epoch   int64 last_timestamp   int8 batch count
        per batch (oldest first):
            int32 first_sequence  int32 last_sequence  int64 first_offset  int64 last_offset
            int64 max_timestamp

Sans-I/O: headers and ``now_ms`` in, values out. Not thread-safe: its partition calls it from
the broker's event loop.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from odradek._compiled import compiled_attr
from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError, ErrorCode, KafkaError
from odradek.records.batch import CONTROL_BIT, HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, BatchHeader
from odradek.records.crc import crc32c

__all__ = [
    "MAX_CACHED_BATCHES",
    "BatchMetadata",
    "ProducerEntry",
    "ProducerState",
    "decode_snapshot",
    "encode_snapshot",
    "last_sequence",
]

#: How many batches per producer are remembered for duplicate detection (Kafka's 5: a client
#: keeps at most ``max.in.flight.requests.per.connection`` = 5 batches in flight).
MAX_CACHED_BATCHES = 5
MAX_SEQUENCE = 2**31 - 1
NO_PRODUCER_EPOCH = -1
SNAPSHOT_VERSION = 1

_new_tuple = tuple.__new__
_SNAPSHOT_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhqb")
_BATCH = struct.Struct(">iiqqq")
#: A batch header from its length field on (``records.batch``'s layout): length, leader epoch,
#: magic, CRC, attributes, last offset delta, base and max timestamp, producer id, producer
#: epoch, base sequence, records count.
_LENGTH_OFFSET = 8
_FROM_LENGTH = struct.Struct(">iibIhiqqqhii")
#: The last offset delta and, 26 bytes on, the base sequence.
_DELTA_OFFSET = 23
_DELTA_AND_SEQUENCE = struct.Struct(">i26xi")
#: Attribute bits 4 and 5: a transactional or a control batch (``check`` and ``update``).
_NOT_PLAIN_DATA = 0x30


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The sequence of a batch's last record: sequences wrap from 2^31-1 to 0."""
    return (base_sequence + last_offset_delta) % (MAX_SEQUENCE + 1)


def _next_sequence(sequence: int) -> int:
    return 0 if sequence == MAX_SEQUENCE else sequence + 1


class BatchMetadata(NamedTuple):
    """One appended batch of a producer (a NamedTuple, as ``BatchHeader``: one is built per
    idempotent append)."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    max_timestamp: int


class ProducerEntry(NamedTuple):
    """A producer as the partition knows it: its epoch and its last batches, oldest first
    (a NamedTuple: one is built per idempotent append)."""

    producer_id: int
    producer_epoch: int
    batches: tuple[BatchMetadata, ...]
    last_timestamp: int

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        """The cached batch ``header`` repeats (same epoch, same sequence range), or None."""
        if header.producer_epoch != self.producer_epoch:
            return None
        last = last_sequence(header.base_sequence, header.last_offset_delta)
        for batch in self.batches:
            if batch.first_sequence == header.base_sequence and batch.last_sequence == last:
                return batch
        return None


class ProducerState:
    """The producer state of one partition, up to ``end_offset`` (see the module docstring).

    Args:
        end_offset: the log offset the state covers up to (exclusive); appends move it.
    """

    __slots__ = ("_producers", "end_offset")

    def __init__(self, end_offset: int = 0, entries: Iterable[ProducerEntry] = ()) -> None:
        self._producers: dict[int, ProducerEntry] = {e.producer_id: e for e in entries}
        self.end_offset = end_offset

    def __len__(self) -> int:
        return len(self._producers)

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def entries(self) -> list[ProducerEntry]:
        """Every producer, by producer id."""
        return [self._producers[pid] for pid in sorted(self._producers)]

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validates a leader's idempotent batch (``producer_id`` ≥ 0) before its append.

        Returns:
            The original batch when ``header`` is a duplicate of one of the producer's last
            five (append nothing, answer with its offsets); None when it may be appended.
        Raises:
            KafkaError: INVALID_PRODUCER_EPOCH (an older epoch), OUT_OF_ORDER_SEQUENCE_NUMBER
                (a gap, a repeat older than the cached batches, a new epoch not at sequence
                0), UNKNOWN_PRODUCER_ID (an unknown producer not at sequence 0).
        """
        producer_id = header.producer_id
        epoch = header.producer_epoch
        sequence = header.base_sequence
        entry = self._producers.get(producer_id)
        if entry is not None and epoch == entry.producer_epoch and entry.batches:
            # The common case first: the next batch in order (it cannot also repeat one of
            # the five cached batches, whose sequences all come before it).
            last = entry.batches[-1].last_sequence
            if sequence == (0 if last == MAX_SEQUENCE else last + 1):
                return None
        if entry is None or (epoch == entry.producer_epoch and not entry.batches):
            # Unknown, or known only from a marker (no batch of this epoch yet).
            if sequence != 0:
                raise KafkaError(
                    f"producer {producer_id} is unknown here and its batch starts at sequence "
                    f"{sequence}, not 0",
                    code=ErrorCode.UNKNOWN_PRODUCER_ID,
                )
            return None
        duplicate = entry.find_duplicate(header)
        if duplicate is not None:
            return duplicate
        if epoch < entry.producer_epoch:
            raise KafkaError(
                f"producer {producer_id} epoch {epoch} is older than its current epoch "
                f"{entry.producer_epoch}",
                code=ErrorCode.INVALID_PRODUCER_EPOCH,
            )
        if epoch > entry.producer_epoch:
            if sequence != 0:
                raise KafkaError(
                    f"producer {producer_id}: the first batch of epoch {epoch} starts at "
                    f"sequence {sequence}, not 0",
                    code=ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                )
            return None
        expected = _next_sequence(entry.last_sequence)
        if sequence != expected:
            raise KafkaError(
                f"producer {producer_id} epoch {epoch}: sequence {sequence}, expected {expected}",
                code=ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            )
        return None

    def next_in_order(self, data: ReadableBuffer) -> ProducerEntry | None:
        """The leader's common case, read from the bytes (no ``BatchHeader``): the producer's
        entry when ``data`` is one whole v2 data batch (neither transactional nor control)
        of a producer known here, at its epoch, starting at the sequence after its last
        batch — the batch ``check`` answers None for with no error possible (append it,
        then ``record_next``). None: ``check`` decides. Compiled when
        ``odradek._producer_state`` is built (``py_next_in_order``)."""
        return _next_in_order(self._producers, data)

    def record_next(
        self,
        entry: ProducerEntry,
        data: ReadableBuffer,
        base_offset: int,
        max_timestamp: int,
        now_ms: int,
    ) -> None:
        """``update`` for the batch ``data`` that ``next_in_order`` answered ``entry`` for,
        appended at ``base_offset``, nothing changed in between: the same outcome, with fewer
        steps (``py_record_next``, compiled when built)."""
        end_offset = _record_next(
            self._producers,
            entry,
            data,
            base_offset,
            max_timestamp,
            now_ms,
            BatchMetadata,
            ProducerEntry,
        )
        self.end_offset = max(self.end_offset, end_offset)

    def update(
        self, header: BatchHeader, base_offset: int, max_timestamp: int, now_ms: int
    ) -> None:
        """Records an appended batch: its header, and the base offset and max timestamp it
        was stored with (a leader's are assigned by the append; a follower's are in the
        header), appended at ``now_ms`` (the broker's clock: the entry expires by it).
        Batches without a producer id leave no entry; a control batch (a transaction
        marker) only raises its producer's epoch to the marker's (``_mark``). No check: a
        follower takes its leader's batches as they are, and a leader calls ``check``
        first."""
        last_offset = base_offset + header.last_offset_delta
        if last_offset >= self.end_offset:
            self.end_offset = last_offset + 1
        producer_id = header.producer_id
        if producer_id < 0:
            return
        if header.attributes & CONTROL_BIT:
            self._mark(producer_id, header.producer_epoch, now_ms)
            return
        base_sequence = header.base_sequence
        # tuple.__new__ skips the NamedTuples' Python-level __new__ (as ``Log.append`` does).
        batch = _new_tuple(
            BatchMetadata,
            (
                base_sequence,
                (base_sequence + header.last_offset_delta) & MAX_SEQUENCE,
                base_offset,
                last_offset,
                max_timestamp,
            ),
        )
        entry = self._producers.get(producer_id)
        if entry is None:
            self._producers[producer_id] = _new_tuple(
                ProducerEntry, (producer_id, header.producer_epoch, (batch,), now_ms)
            )
            return
        if entry.producer_epoch == header.producer_epoch:
            batches = entry.batches
            batches = (
                (*batches[1:], batch) if len(batches) >= MAX_CACHED_BATCHES else (*batches, batch)
            )
        else:
            batches = (batch,)
        self._producers[producer_id] = _new_tuple(
            ProducerEntry,
            (
                producer_id,
                header.producer_epoch,
                batches,
                now_ms,
            ),
        )

    def _mark(self, producer_id: int, epoch: int, now_ms: int) -> None:
        """A transaction marker of ``producer_id`` at ``epoch``: a newer epoch than the
        producer's (the coordinator fenced it, KIP-98) becomes its epoch, with no batches,
        so its older epoch is refused from now on."""
        entry = self._producers.get(producer_id)
        if entry is None or epoch > entry.producer_epoch:
            self._producers[producer_id] = ProducerEntry(producer_id, epoch, (), now_ms)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forgets the producers whose last batch is ``expiration_ms`` or more old
        (``producer.id.expiration.ms``); returns their ids."""
        expired = [
            pid
            for pid, entry in self._producers.items()
            if now_ms - entry.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self._producers[pid]
        return expired

    def clear(self, end_offset: int) -> None:
        """Forgets every producer (the log was emptied and restarts at ``end_offset``)."""
        self._producers.clear()
        self.end_offset = end_offset


def py_next_in_order(producers: dict[int, ProducerEntry], data: ReadableBuffer) -> Any:
    """``ProducerState.next_in_order`` over its producers (the reference of the compiled
    ``odradek._producer_state.producer_next_in_order``)."""
    if len(data) < HEADER_SIZE:
        return None
    (
        batch_length,
        _,
        magic,
        _,
        attributes,
        last_offset_delta,
        _,
        _,
        producer_id,
        epoch,
        sequence,
        records_count,
    ) = _FROM_LENGTH.unpack_from(data, _LENGTH_OFFSET)
    if (
        magic != MAGIC_V2
        or batch_length + LOG_OVERHEAD != len(data)
        or attributes & _NOT_PLAIN_DATA
        or last_offset_delta < 0
        or records_count < 0
    ):
        return None
    entry = producers.get(producer_id)
    if entry is None or epoch != entry.producer_epoch or not entry.batches:
        return None
    return entry if sequence == _next_sequence(entry.batches[-1].last_sequence) else None


def py_record_next(
    producers: dict[int, Any],
    entry: Any,
    data: ReadableBuffer,
    base_offset: int,
    max_timestamp: int,
    now_ms: int,
    batch_type: Any,
    entry_type: Any,
) -> int:
    """``ProducerState.record_next`` over its producers, the NamedTuple types passed in;
    returns the offset after the batch (the reference of the compiled
    ``odradek._producer_state.producer_record_next``)."""
    if len(data) < HEADER_SIZE:
        raise ValueError("producer_record_next: not a whole batch header")
    last_offset_delta, base_sequence = _DELTA_AND_SEQUENCE.unpack_from(data, _DELTA_OFFSET)
    last_offset: int = base_offset + last_offset_delta
    batch = _new_tuple(
        batch_type,
        (
            base_sequence,
            last_sequence(base_sequence, last_offset_delta),
            base_offset,
            last_offset,
            max_timestamp,
        ),
    )
    batches = entry[2]
    producer_id = entry[0]
    producers[producer_id] = _new_tuple(
        entry_type,
        (
            producer_id,
            entry[1],
            (*batches[1:], batch) if len(batches) >= MAX_CACHED_BATCHES else (*batches, batch),
            now_ms,
        ),
    )
    return last_offset + 1


#: The compiled shortcut when ``odradek._producer_state`` is built, else the references.
_next_in_order: Callable[[dict[int, ProducerEntry], ReadableBuffer], ProducerEntry | None] = (
    compiled_attr("odradek._producer_state", "producer_next_in_order") or py_next_in_order
)
_record_next: Callable[..., int] = (
    compiled_attr("odradek._producer_state", "producer_record_next") or py_record_next
)


def encode_snapshot(state: ProducerState) -> bytes:
    """The state as snapshot bytes (layout in the module docstring)."""
    entries = state.entries()
    parts = [_COUNT.pack(len(entries))]
    for entry in entries:
        parts.append(
            _ENTRY.pack(
                entry.producer_id, entry.producer_epoch, entry.last_timestamp, len(entry.batches)
            )
        )
        parts.extend(
            _BATCH.pack(
                b.first_sequence, b.last_sequence, b.first_offset, b.last_offset, b.max_timestamp
            )
            for b in entry.batches
        )
    body = b"".join(parts)
    return _SNAPSHOT_HEAD.pack(SNAPSHOT_VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes, end_offset: int) -> ProducerState:
    """The state a snapshot holds, covering the log up to ``end_offset`` (its file's name).

    Raises:
        CorruptRecordError: a truncated file, an unknown version or a CRC mismatch.
    """
    try:
        version, crc = _SNAPSHOT_HEAD.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise CorruptRecordError(f"producer snapshot version {version} is not supported")
        body = memoryview(data)[_SNAPSHOT_HEAD.size :]
        if crc32c(body) != crc:
            raise CorruptRecordError("producer snapshot CRC mismatch")
        (count,) = _COUNT.unpack_from(body, 0)
        position = _COUNT.size
        entries = []
        for _ in range(count):
            producer_id, epoch, last_timestamp, batch_count = _ENTRY.unpack_from(body, position)
            position += _ENTRY.size
            batches = []
            for _ in range(batch_count):
                batches.append(BatchMetadata(*_BATCH.unpack_from(body, position)))
                position += _BATCH.size
            entries.append(ProducerEntry(producer_id, epoch, tuple(batches), last_timestamp))
        if position != len(body):
            raise CorruptRecordError("producer snapshot has trailing bytes")
    except struct.error as error:
        raise CorruptRecordError(f"truncated producer snapshot: {error}") from None
    return ProducerState(end_offset, entries)

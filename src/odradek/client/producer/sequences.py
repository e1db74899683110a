"""``ProducerSequences``: an idempotent producer's id, epoch and per-partition sequence numbers
(KIP-98), and the rules that keep its batches in order across retries.

One implementation for both kinds of idempotent producer: a plain one (``enable.idempotence``,
its id from the sender's InitProducerId) and a transactional one (its id from
``TransactionManager.init``).

Stamping (``stamp``, once per batch, on the sender thread when the batch is first drained):
the built batch gets the producer id, epoch and the partition's next base sequence (and, for a
transactional producer, the transactional attribute); its CRC is recomputed. The cost is one
copy and one CRC of the batch — per batch, never per record. A retried batch keeps its
sequence.

Per partition, the *incomplete* stamped batches are kept in stamping order. Rules:

- ``may_drain``: a stamped batch (a retry) goes only when it is the partition's oldest
  incomplete one, so retries reach the broker in sequence order even with up to 5 requests in
  flight; an unstamped batch goes only when the producer has an id and no incomplete batch of
  the partition carries an older id or epoch (a new sequence run must not overtake the old one).
- ``is_first_incomplete``: an OUT_OF_ORDER_SEQUENCE_NUMBER answer for a batch that is *not* the
  oldest incomplete one only means an earlier batch has not been written yet: the batch is
  retried. For the oldest one it means the broker lost or skipped sequences.
- ``break_run``: a stamped batch failed to the application (a real sequence gap,
  UNKNOWN_PRODUCER_ID, a non-retriable error, retries or ``delivery.timeout.ms`` exhausted):
  the broker may or may not hold it, so the partition's later sequences of that id and epoch
  mean nothing any more. Its other batches of that run fail too (``is_broken``) instead of
  being resent out of order, and a plain idempotent producer asks for a new epoch (KIP-360:
  InitProducerId naming its current id and epoch, where the broker serves v3+; a broker that
  keeps no epochs for non-transactional ids answers with a new id, as Kafka's does). Batches
  stamped afterwards start at sequence 0 under the new id or epoch.

Thread safety: stamping, completions and drain checks run on the sender thread;
``set_producer`` may run on another (``init_transactions``); one lock guards the state.
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass, field
from typing import Final

from odradek._types import TopicPartition
from odradek.client.producer.batch import ProducerBatch
from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    PRODUCER_ID_OFFSET,
    TRANSACTIONAL_BIT,
    compute_crc,
)

__all__ = ["ProducerSequences", "stamp_batch"]

_HEAD: Final = struct.Struct(">qhi")  # producer id, epoch, base sequence
_ATTRIBUTES: Final = struct.Struct(">h")
_CRC: Final = struct.Struct(">I")
_SEQUENCE_MODULUS: Final = 2**31


def stamp_batch(
    data: bytes, producer_id: int, epoch: int, base_sequence: int, *, transactional: bool
) -> bytes:
    """A built v2 batch as an idempotent producer's: producer id, epoch and base sequence
    written in (and the transactional attribute set when ``transactional``), CRC recomputed."""
    patched = bytearray(data)
    _HEAD.pack_into(patched, PRODUCER_ID_OFFSET, producer_id, epoch, base_sequence)
    if transactional:
        (attributes,) = _ATTRIBUTES.unpack_from(patched, ATTRIBUTES_OFFSET)
        _ATTRIBUTES.pack_into(patched, ATTRIBUTES_OFFSET, attributes | TRANSACTIONAL_BIT)
    _CRC.pack_into(patched, CRC_OFFSET, compute_crc(patched, 0, len(patched)))
    return bytes(patched)


@dataclass(slots=True)
class _Partition:
    """One partition's sequence run and its incomplete stamped batches (stamping order)."""

    producer_id: int = -1
    epoch: int = -1
    next_sequence: int = 0
    incomplete: list[ProducerBatch] = field(default_factory=list)
    broken: set[tuple[int, int]] = field(default_factory=set)


class ProducerSequences:
    """See the module docstring.

    Args:
        transactional: set the transactional attribute on stamped batches (and never ask for
            an id here: ``TransactionManager`` sets it).
    """

    def __init__(self, *, transactional: bool = False) -> None:
        self.transactional = transactional
        self._lock = threading.Lock()
        self.producer_id = -1
        self.epoch = -1
        #: A plain idempotent producer waits for InitProducerId while this is set.
        self.needs_producer_id = not transactional
        self._partitions: dict[TopicPartition, _Partition] = {}
        self._stamps = 0
        self._bumps = 0

    # -- the producer id

    def set_producer(self, producer_id: int, epoch: int) -> None:
        """A new producer id or epoch: partitions start new sequence runs at 0."""
        with self._lock:
            if self.producer_id >= 0 and (producer_id, epoch) != (self.producer_id, self.epoch):
                self._bumps += 1
            self.producer_id = producer_id
            self.epoch = epoch
            self.needs_producer_id = False

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0 and not self.needs_producer_id

    # -- the sender's side

    def stamp(self, batch: ProducerBatch) -> None:
        """Stamps a closed, unstamped batch as the partition's next (see the module docstring)."""
        with self._lock:
            state = self._partitions.get(batch.tp)
            if state is None:
                state = self._partitions[batch.tp] = _Partition()
            if (state.producer_id, state.epoch) != (self.producer_id, self.epoch):
                state.producer_id, state.epoch = self.producer_id, self.epoch
                state.next_sequence = 0
            sequence = state.next_sequence
            state.next_sequence = (sequence + batch.batch_size) % _SEQUENCE_MODULUS
            self._stamps += 1
            state.incomplete.append(batch)
            order = self._stamps
            producer_id, epoch = self.producer_id, self.epoch
        batch.stamp(
            stamp_batch(
                batch.records, producer_id, epoch, sequence, transactional=self.transactional
            ),
            producer_id,
            epoch,
            sequence,
            order,
        )

    def may_drain(self, batch: ProducerBatch) -> bool:
        """Whether the partition's first queued batch may be sent now (the accumulator asks,
        under its lock; see the module docstring)."""
        state = self._partitions.get(batch.tp)
        if batch.stamped:
            return state is None or not state.incomplete or state.incomplete[0] is batch
        if self.needs_producer_id or self.producer_id < 0:
            return False
        if state is None or not state.incomplete:
            return True
        last = state.incomplete[-1]
        return (last.producer_id, last.producer_epoch) == (self.producer_id, self.epoch)

    def is_first_incomplete(self, batch: ProducerBatch) -> bool:
        state = self._partitions.get(batch.tp)
        return state is not None and bool(state.incomplete) and state.incomplete[0] is batch

    def completed(self, batch: ProducerBatch) -> None:
        """A stamped batch completed (acknowledged, or failed to the application)."""
        with self._lock:
            state = self._partitions.get(batch.tp)
            if state is not None and batch in state.incomplete:
                state.incomplete.remove(batch)

    def break_run(self, batch: ProducerBatch) -> bool:
        """The sequence run of ``batch`` on its partition is broken (see the module
        docstring). Returns whether that is news (the caller then fails the run's queued
        batches); a plain idempotent producer then needs a new epoch when the run is the
        current one."""
        with self._lock:
            state = self._partitions.get(batch.tp)
            run = (batch.producer_id, batch.producer_epoch)
            if state is None or run in state.broken:
                return False
            state.broken.add(run)
            if not self.transactional and run == (self.producer_id, self.epoch):
                self.needs_producer_id = True
            return True

    def is_broken(self, batch: ProducerBatch) -> bool:
        state = self._partitions.get(batch.tp)
        return (
            state is not None
            and bool(state.broken)
            and (batch.producer_id, batch.producer_epoch) in state.broken
        )

    def statistics(self) -> dict[str, int]:
        with self._lock:
            return {
                "producer_id": self.producer_id,
                "producer_epoch": self.epoch,
                "stamped_batches": self._stamps,
                "producer_id_changes": self._bumps,
                "incomplete_stamped_batches": sum(
                    len(s.incomplete) for s in self._partitions.values()
                ),
            }

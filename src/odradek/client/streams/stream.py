"""``MessageStream``: a blocking iterator over the records of the partitions routed to it,
fed through a bounded queue by the connector's poll thread.

The stream owns its queue and keeps these rules:

- **Chunks.** The poll thread ``offer``s the records of one partition from one poll as a
  chunk; the queue holds at most ``max_chunks`` chunks (``queued.max.message.chunks``) and
  ``offer`` refuses one when full, so the poll thread pauses that partition (backpressure) and
  never blocks. Records of a partition are handed out in offset order.
- **Handed out.** Taking a record records ``offset + 1`` for its partition in the connector's
  ``ConsumedOffsets`` *before* the stream's lock is released, so ``purge`` (on a revocation)
  and the record of what was handed out never disagree: after ``purge(tp)`` returns, no
  record of ``tp`` is handed out from this stream.
- **Timeout.** With ``consumer.timeout.ms`` ≥ 0, ``next`` raises ``ConsumerTimeoutError``
  when no record arrives within that time (the classic behaviour); the stream stays usable, and
  a later ``next`` waits again. With -1 (the default) it waits until a record or the end.
- **End.** ``end`` (from ``ConsumerConnector.shutdown``) drops the queued records, which were
  not handed out and so are not committed, and makes ``next`` raise ``StopIteration`` (after
  the failure that ended the poll thread, if any, raised once).

Thread-safety: ``next`` may be called from any thread (normally one user thread per stream);
``offer``, ``purge`` and ``end`` are called by the connector. One lock guards the state.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Self

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.client.consumer import ConsumerRecord
from odradek.client.streams.message import ConsumerTimeoutError, MessageAndMetadata

__all__ = ["ConsumedOffsets", "MessageStream"]


class ConsumedOffsets:
    """The next offset to read of each partition, as far as the streams handed records out.

    Thread-safe (its own lock, taken while a stream's lock is held, never the other way).
    """

    __slots__ = ("_lock", "_offsets")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offsets: dict[TopicPartition, int] = {}

    def handed_out(self, tp: TopicPartition, next_offset: int) -> None:
        with self._lock:
            self._offsets[tp] = next_offset

    def snapshot(self) -> dict[TopicPartition, int]:
        with self._lock:
            return dict(self._offsets)

    def discard(self, tp: TopicPartition) -> None:
        with self._lock:
            self._offsets.pop(tp, None)


class _Chunk:
    __slots__ = ("index", "records", "tp")

    def __init__(self, tp: TopicPartition, records: Sequence[ConsumerRecord]) -> None:
        self.tp = tp
        self.records = records
        self.index = 0


class MessageStream(Iterator[MessageAndMetadata]):
    """An iterator of ``MessageAndMetadata`` (see the module docstring).

    Built by ``ConsumerConnector``; users only iterate it.
    """

    def __init__(
        self,
        name: str,
        consumed: ConsumedOffsets,
        *,
        max_chunks: int,
        consumer_timeout_ms: int = -1,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._name = name
        self._consumed = consumed
        self._max_chunks = max_chunks
        self._timeout_ms = consumer_timeout_ms
        self._clock = clock
        self._cond = threading.Condition()
        self._chunks: deque[_Chunk] = deque()
        self._ended = False
        self._failure: BaseException | None = None
        self._handed_out = 0

    @property
    def name(self) -> str:
        return self._name

    # ------------------------------------------------------------------ user threads

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> MessageAndMetadata:
        """The next record, blocking (see the module docstring).

        Raises:
            StopIteration: the connector was shut down.
            ConsumerTimeoutError: nothing arrived within ``consumer.timeout.ms``.
            Exception: the error that stopped the connector's poll thread (once).
        """
        timeout = self._timeout_ms
        deadline = self._clock.monotonic_ms() + timeout if timeout >= 0 else None
        with self._cond:
            while True:
                if self._failure is not None:
                    failure, self._failure = self._failure, None
                    raise failure
                if self._ended:
                    raise StopIteration
                if self._chunks:
                    chunk = self._chunks[0]
                    record = chunk.records[chunk.index]
                    chunk.index += 1
                    if chunk.index == len(chunk.records):
                        self._chunks.popleft()
                    self._consumed.handed_out(chunk.tp, record.offset + 1)
                    self._handed_out += 1
                    return MessageAndMetadata.from_record(record)
                if deadline is None:
                    self._cond.wait()
                    continue
                remaining = deadline - self._clock.monotonic_ms()
                if remaining <= 0:
                    raise ConsumerTimeoutError(
                        f"stream {self._name}: no message within {timeout} ms"
                    )
                self._cond.wait(remaining / 1000.0)

    # ------------------------------------------------------------------ connector

    def offer(self, tp: TopicPartition, records: Sequence[ConsumerRecord]) -> bool:
        """Queues one chunk of ``tp``'s records; ``False`` (nothing queued) when full or ended."""
        if not records:
            return True
        with self._cond:
            if self._ended or len(self._chunks) >= self._max_chunks:
                return False
            self._chunks.append(_Chunk(tp, records))
            self._cond.notify()
            return True

    def has_room(self) -> bool:
        with self._cond:
            return len(self._chunks) < self._max_chunks

    def purge(self, tp: TopicPartition) -> int:
        """Drops ``tp``'s queued records (not handed out); returns how many were dropped."""
        with self._cond:
            kept: deque[_Chunk] = deque()
            dropped = 0
            for chunk in self._chunks:
                if chunk.tp == tp:
                    dropped += len(chunk.records) - chunk.index
                else:
                    kept.append(chunk)
            self._chunks = kept
            return dropped

    def end(self, failure: BaseException | None = None) -> None:
        """Ends iteration (queued records are dropped); ``failure`` is raised once first."""
        with self._cond:
            if self._ended:
                return
            self._ended = True
            self._failure = failure
            self._chunks.clear()
            self._cond.notify_all()

    @property
    def ended(self) -> bool:
        with self._cond:
            return self._ended

    def statistics(self) -> dict[str, int]:
        """A snapshot: queued chunks and records, records handed out so far."""
        with self._cond:
            queued = sum(len(c.records) - c.index for c in self._chunks)
            return {
                "queued_chunks": len(self._chunks),
                "queued_records": queued,
                "handed_out": self._handed_out,
            }

    def __repr__(self) -> str:
        return f"<MessageStream {self._name}>"

"""Dropping the batches of aborted transactions from fetched bytes: what a read_committed
consumer does with a Fetch response's ``aborted_transactions`` (KIP-98).

The broker lists, for what it returned, each aborted transaction as (producer id, first
offset). Walking the batches in offset order, a producer becomes *aborted* once a batch at or
past its first offset is reached; its transactional data batches are then dropped until its
control batch (the ABORT marker) ends the transaction. Other batches are kept as they are,
control batches included (readers skip those anyway), and bytes after the last whole batch (a
batch cut off at the fetch size) are kept too, so a reader's rules for them do not change.

Sans-I/O: bytes in, bytes out.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from odradek._types import ReadableBuffer
from odradek.records.batch import LOG_OVERHEAD, parse_header, read_prefix

__all__ = ["drop_aborted", "drop_aborted_batches"]


def drop_aborted(data: ReadableBuffer, aborted: Iterable[tuple[int, int]] | None) -> bytes:
    """``data`` without the batches of the ``aborted`` (producer id, first offset)
    transactions (``data`` itself, as bytes, when there are none)."""
    pending = [(first_offset, producer_id) for producer_id, first_offset in aborted or ()]
    if not pending:
        return bytes(memoryview(data).cast("B"))
    return drop_aborted_batches(data, aborted)[0]


def drop_aborted_batches(
    data: ReadableBuffer, aborted: Iterable[tuple[int, int]] | None
) -> tuple[bytes, int]:
    """Like ``drop_aborted``, and also the offset after the last whole batch of ``data``
    (dropped or not; -1 when there is none): where a reader goes on from, even when every
    batch it fetched belonged to an aborted transaction whose marker it has not reached."""
    pending = [(first_offset, producer_id) for producer_id, first_offset in aborted or ()]
    view = memoryview(data).cast("B")
    heapq.heapify(pending)
    ongoing: set[int] = set()
    kept: list[memoryview] = []
    end = len(view)
    pos = 0
    next_offset = -1
    while end - pos >= LOG_OVERHEAD:
        _base, size = read_prefix(view, pos)
        if size <= LOG_OVERHEAD or pos + size > end:
            break
        header = parse_header(view, pos)
        next_offset = header.last_offset + 1
        while pending and pending[0][0] <= header.last_offset:
            ongoing.add(heapq.heappop(pending)[1])
        drop = False
        if header.is_transactional and header.producer_id in ongoing:
            if header.is_control:
                ongoing.discard(header.producer_id)  # its marker: the transaction ended
            else:
                drop = True
        if not drop:
            kept.append(view[pos : pos + size])
        pos += size
    kept.append(view[pos:])
    return b"".join(kept), next_offset

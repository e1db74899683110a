"""Transaction markers: the control batch that ends a transaction on a partition (KIP-98).

A marker is a v2 batch with attribute bit 5 (control) and bit 4 (transactional) set, the
producer id and epoch of the transaction it ends, no sequence, and exactly one record:

    key   = int16 version (0)  int16 type (0 = ABORT, 1 = COMMIT)
    value = int16 version (0)  int32 coordinator_epoch

(Kafka's ``EndTransactionMarker``.) Other control types exist (KRaft's leader change,
snapshot records): ``control_type`` reports them, and readers of transactions ignore them.

Sans-I/O: values in, bytes out.
"""

from __future__ import annotations

import enum
import struct

from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError
from odradek.records.batch import BatchHeader
from odradek.records.codec import SimpleRecord, build_batch, decode_records

__all__ = [
    "ControlType",
    "build_marker_batch",
    "control_type",
    "marker_coordinator_epoch",
]

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlType(enum.IntEnum):
    """The control record types transactions use."""

    ABORT = 0
    COMMIT = 1


def build_marker_batch(
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    *,
    coordinator_epoch: int,
    timestamp_ms: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """The marker batch ending ``producer_id``'s transaction (base offset 0: the log assigns
    it)."""
    kind = ControlType.COMMIT if commit else ControlType.ABORT
    record = SimpleRecord(timestamp_ms, _KEY.pack(0, int(kind)), _VALUE.pack(0, coordinator_epoch))
    return build_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
        transactional=True,
        control=True,
    )


def control_type(buf: ReadableBuffer, header: BatchHeader, pos: int = 0) -> int:
    """The type of the control batch at ``pos`` (whose validated ``header`` is given): 0 =
    ABORT, 1 = COMMIT, others are not transaction markers.

    Raises:
        CorruptRecordError: the batch holds no record or a key shorter than 4 bytes.
    """
    records = decode_records(buf, header, pos)
    if not records or records[0].key is None or len(records[0].key) < _KEY.size:
        raise CorruptRecordError("a control batch without a control record key")
    _, kind = _KEY.unpack_from(records[0].key, 0)
    return int(kind)


def marker_coordinator_epoch(buf: ReadableBuffer, header: BatchHeader, pos: int = 0) -> int:
    """The coordinator epoch a marker batch carries (-1 when its value is missing)."""
    records = decode_records(buf, header, pos)
    value = records[0].value if records else None
    if value is None or len(value) < _VALUE.size:
        return -1
    return int(_VALUE.unpack_from(value, 0)[1])

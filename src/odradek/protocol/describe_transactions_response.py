"""DescribeTransactions v0 responses (KIP-664) read by hand, for the client.

kio types ``transaction_start_time`` as a timestamp and refuses a negative one, but Kafka's
coordinators answer -1 there for a transactional id with no open transaction (state Empty,
CompleteCommit, CompleteAbort) — so that answer could not be read through the generic codec.
This reader keeps the start time a plain int (-1: none).

Layout (flexible: compact strings and arrays store ``length + 1`` as an unsigned varint, and
every struct ends with tagged fields)::

    throttle_time_ms int32
    transaction_states: compact array of (error_code int16, transactional_id compact string,
        transaction_state compact string, transaction_timeout int32,
        transaction_start_time int64, producer_id int64, producer_epoch int16,
        topics: compact array of (topic compact string, partitions compact array of int32))

A frame that is truncated, announces counts past its end or has trailing bytes raises
``ValueError`` (``client_codec`` turns it into ``ProtocolError``).
"""

from __future__ import annotations

import struct
from typing import Any

from odradek.protocol.wire import read_uvarint

__all__ = ["decode_describe_transactions_v0"]

_INT32 = struct.Struct(">i")
_STATE_FIXED = struct.Struct(">iqqh")  # timeout, start time, producer id, producer epoch
_ERROR_CODE = struct.Struct(">h")


def decode_describe_transactions_v0(frame: bytes, offset: int) -> dict[str, Any]:
    """The response body at ``frame[offset:]`` as the plain mapping ``decode_response``
    returns (field names of kio's schema; ints for durations and times)."""
    reader = _Reader(frame, offset)
    throttle_time = reader.fixed(_INT32)[0]
    states = []
    for _ in range(reader.count(min_item_bytes=_STATE_FIXED.size + 5)):
        (error_code,) = reader.fixed(_ERROR_CODE)
        transactional_id = reader.string()
        state = reader.string()
        timeout, start_time, producer_id, producer_epoch = reader.fixed(_STATE_FIXED)
        topics = []
        for _ in range(reader.count(min_item_bytes=3)):
            topic = reader.string()
            partitions = [reader.fixed(_INT32)[0] for _ in range(reader.count(_INT32.size))]
            reader.tagged_fields()
            topics.append({"topic": topic, "partitions": partitions})
        reader.tagged_fields()
        states.append(
            {
                "error_code": error_code,
                "transactional_id": transactional_id,
                "transaction_state": state,
                "transaction_timeout": timeout,
                "transaction_start_time": start_time,
                "producer_id": producer_id,
                "producer_epoch": producer_epoch,
                "topics": topics,
            }
        )
    reader.tagged_fields()
    if reader.offset != len(frame):
        raise ValueError(f"{len(frame) - reader.offset} bytes after the response")
    return {"throttle_time": throttle_time, "transaction_states": states}


class _Reader:
    """A cursor over the frame that checks every length against the bytes left."""

    def __init__(self, frame: bytes, offset: int) -> None:
        self.frame = frame
        self.offset = offset

    def fixed(self, layout: struct.Struct) -> tuple[Any, ...]:
        self._need(layout.size)
        values = layout.unpack_from(self.frame, self.offset)
        self.offset += layout.size
        return values

    def count(self, min_item_bytes: int) -> int:
        """A compact array's length (null read as empty), checked against the bytes left."""
        encoded, self.offset = read_uvarint(self.frame, self.offset)
        count = max(encoded - 1, 0)
        self._need(count * min_item_bytes)
        return count

    def string(self) -> str:
        encoded, self.offset = read_uvarint(self.frame, self.offset)
        if encoded == 0:
            raise ValueError("null string where the schema has none")
        size = encoded - 1
        self._need(size)
        value = bytes(self.frame[self.offset : self.offset + size]).decode()
        self.offset += size
        return value

    def tagged_fields(self) -> None:
        fields, self.offset = read_uvarint(self.frame, self.offset)
        for _ in range(fields):
            _tag, self.offset = read_uvarint(self.frame, self.offset)
            size, self.offset = read_uvarint(self.frame, self.offset)
            self._need(size)
            self.offset += size

    def _need(self, size: int) -> None:
        if self.offset + size > len(self.frame):
            raise ValueError("the response is truncated")

"""Random request frames of any implemented API version, written straight from kio's schema.

This module owns the fuzzer's templates: ``RequestSampler.frame(api_key, api_version, ...)``
walks the request schema kio generated from Kafka's message JSON and writes a body field by
field, in wire order, with values a broker can act on (topic and group names from the
caller's pools, partition 0 or 1, short timeouts, a valid record batch for ``records``). It
writes the bytes itself rather than through kio so that it can also write what kio never
would: with ``fault_rate`` > 0, each length, count and fixed-width value is, with that
probability, replaced by a fault — a null where the schema says non-nullable, a negative
length other than -1, a count of 2**31 - 1 or one off by one, the extreme of an integer type.

The byte forms are the protocol guide's (see ``bounds``): non-flexible strings have an int16
length, bytes and records an int32 length, arrays an int32 count (-1 = null); flexible
versions write uvarint ``n + 1`` for all three (0 = null) and end every struct with tagged
fields (this writer never sends optional tagged fields: an empty set). Nullable structs have a
leading int8 (-1 = null).

Deterministic: the same ``random.Random`` state gives the same bytes. Not thread-safe.
"""

from __future__ import annotations

import dataclasses
import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass
from types import NoneType, UnionType
from typing import Any, Final, Union, get_args, get_origin

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
)

from odradek.protocol.header import request_header_version
from odradek.protocol.inter_broker import load_request_schema
from odradek.protocol.wire import nullable_string, uvarint

__all__ = ["RequestSampler", "SampleNames"]

_FIXED: Final = {
    "int8": struct.Struct(">b"),
    "uint8": struct.Struct(">B"),
    "bool": struct.Struct(">?"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "error_code": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "timedelta_i32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint64": struct.Struct(">Q"),
    "float64": struct.Struct(">d"),
    "timedelta_i64": struct.Struct(">q"),
    "datetime_i64": struct.Struct(">q"),
}
_EXTREMES: Final = {
    "b": (-128, 127, -1),
    "B": (0, 255),
    "h": (-32768, 32767, -1),
    "H": (0, 65535),
    "i": (-(2**31), 2**31 - 1, -1),
    "I": (0, 2**32 - 1),
    "q": (-(2**63), 2**63 - 1, -1),
    "Q": (0, 2**64 - 1),
}
_INT16 = struct.Struct(">h")
_PRODUCE: Final = 0
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">ihhi")  # size, api_key, api_version, correlation_id

_TOPIC_FIELDS: Final = frozenset({"topic", "topic_name", "topic_names", "resource_name"})
_GROUP_FIELDS: Final = frozenset({"group_id", "groups", "groups_names", "key"})
_PARTITION_FIELDS: Final = frozenset(
    {"partition", "partition_index", "index", "partitions", "partition_indexes"}
)
_CONFIG_NAMES: Final = ("retention.ms", "cleanup.policy", "segment.bytes", "no.such.config")


@dataclass(frozen=True, slots=True)
class SampleNames:
    """What the sampler puts where a broker looks things up.

    ``topics`` and ``groups`` are the names requests refer to (never put a topic here whose
    data must survive the run: requests include DeleteTopics, DeleteRecords and config
    changes); ``records`` are valid record batches for Produce.
    """

    topics: Sequence[str]
    groups: Sequence[str]
    records: Sequence[bytes]


class RequestSampler:
    """Writes random request bodies and frames (see the module docstring).

    Args:
        rng: the only source of randomness.
        names: topic and group names and record batches to use.
    """

    def __init__(self, rng: random.Random, names: SampleNames) -> None:
        self._rng = rng
        self._names = names
        self._fault_rate = 0.0

    def body(self, api_key: int, api_version: int, *, fault_rate: float = 0.0) -> bytes:
        """A request body of this key and version; ``fault_rate`` as in the module docstring.

        Raises:
            LookupError: kio has no schema for this key and version.
        """
        self._fault_rate = fault_rate
        out: list[bytes] = []
        if api_key == _PRODUCE and api_version < 3:
            # Produce v0-v2 are v3 without the leading transactional_id (kio, following
            # Kafka 4, has no schema for them): write v3 and drop that field.
            self._entity(load_request_schema(_PRODUCE, 3), out, "")
            body = b"".join(out)
            (length,) = _INT16.unpack_from(body)
            return body[2 + max(length, 0) :]
        self._entity(load_request_schema(api_key, api_version), out, "")
        return b"".join(out)

    def frame(
        self,
        api_key: int,
        api_version: int,
        correlation_id: int,
        client_id: str | None = "odradek-fuzz",
        *,
        fault_rate: float = 0.0,
    ) -> bytes:
        """A whole request frame: size prefix, request header (v1 or v2), ``body``."""
        body = self.body(api_key, api_version, fault_rate=fault_rate)
        header_version = request_header_version(api_key, api_version)
        rest = nullable_string(client_id) if header_version >= 1 else b""
        if header_version == 2:
            rest += b"\x00"  # no tagged fields
        size = 8 + len(rest) + len(body)
        return _HEADER.pack(size, api_key, api_version, correlation_id) + rest + body

    # ------------------------------------------------------------------ the walk

    def _fault(self) -> bool:
        return self._fault_rate > 0.0 and self._rng.random() < self._fault_rate

    def _entity(self, schema: type[Any], out: list[bytes], context: str) -> None:
        flexible = bool(schema.__flexible__)
        for field in dataclasses.fields(schema):
            if get_field_tag(field) is not None:
                continue  # optional tagged fields are never sent
            self._field(field, flexible, out, schema.__name__)
        if flexible:
            out.append(b"\x00")

    def _field(self, field: Field[Any], flexible: bool, out: list[bytes], owner: str) -> None:
        rng = self._rng
        field_class = classify_field(field)
        nullable = _is_nullable(field.type)
        name = field.name
        if isinstance(field_class, PrimitiveTupleField | EntityTupleField):
            if nullable and rng.random() < 0.1:
                out.append(self._count(None, flexible))
                return
            count = rng.choice((1, 1, 1, 2, 0))
            out.append(self._count(count, flexible))
            for _ in range(count):
                if isinstance(field_class, EntityTupleField):
                    self._entity(field_class.type_, out, owner)
                else:
                    kafka_type = get_schema_field_type(field)
                    out.append(self._primitive(kafka_type, name, owner, flexible, False))
            return
        if isinstance(field_class, EntityField):
            if nullable:
                if rng.random() < 0.2:
                    out.append(b"\xff")
                    return
                out.append(b"\x01")
            self._entity(field_class.type_, out, owner)
            return
        assert isinstance(field_class, PrimitiveField)
        kafka_type = get_schema_field_type(field)
        out.append(self._primitive(kafka_type, name, owner, flexible, nullable))

    def _count(self, count: int | None, flexible: bool) -> bytes:
        if self._fault():
            count = self._rng.choice((None, 2**31 - 1, -2, (count or 0) + 1, 1_000_000))
        if flexible:
            if count is None or count < 0:
                return b"\x00" if count is None or self._rng.random() < 0.5 else uvarint(2**32 - 1)
            return uvarint(count + 1)
        return _INT32.pack(-1 if count is None else count)

    def _primitive(
        self, kafka_type: str, name: str, owner: str, flexible: bool, nullable: bool
    ) -> bytes:
        fixed = _FIXED.get(kafka_type)
        if fixed is not None:
            if self._fault() and fixed.format[-1] in _EXTREMES:
                return fixed.pack(self._rng.choice(_EXTREMES[fixed.format[-1]]))
            return fixed.pack(self._number(kafka_type, name))
        if kafka_type == "uuid":
            return bytes(16) if self._rng.random() < 0.8 else self._rng.randbytes(16)
        value: bytes | None
        if kafka_type == "string":
            text = self._string(name, owner, nullable)
            value = None if text is None else text.encode()
        elif kafka_type == "records":
            value = self._records(nullable)
        else:
            value = None if nullable and self._rng.random() < 0.2 else self._rng.randbytes(8)
        return self._sized(value, flexible, short=kafka_type == "string")

    def _sized(self, value: bytes | None, flexible: bool, *, short: bool) -> bytes:
        length = None if value is None else len(value)
        if self._fault():
            length = self._rng.choice((None, -2, 2**15 - 1, (length or 0) + 1, -1000))
        if flexible:
            if length is None or length < 0:
                head = b"\x00" if length is None or length == -1 else uvarint(2**32 - 1)
            else:
                head = uvarint(length + 1)
        else:
            width = _INT16 if short else _INT32
            head = width.pack(-1 if length is None else length)
        return head + (value or b"")

    def _number(self, kafka_type: str, name: str) -> Any:
        rng = self._rng
        if kafka_type == "bool":
            return rng.random() < 0.5
        if kafka_type == "float64":
            return 0.0
        if kafka_type in ("timedelta_i32", "timedelta_i64"):
            if "session" in name:
                return rng.choice((6_000, 10_000, 100))
            return rng.choice((0, 0, 10, 100))
        if kafka_type == "datetime_i64":
            return rng.choice((-1, 0, 1_700_000_000_000))
        if kafka_type == "error_code":
            return 0
        if name in _PARTITION_FIELDS:
            return rng.choice((0, 0, 1))
        chooser = _NUMBERS.get(name)
        if chooser is not None:
            return chooser(rng)
        if kafka_type.startswith("uint"):
            return rng.choice((0, 1, 2))
        return rng.choice((0, 1, -1, 2))

    def _string(self, name: str, owner: str, nullable: bool) -> str | None:
        rng = self._rng
        if nullable and rng.random() < 0.3:
            return None
        names = self._names
        if name in _TOPIC_FIELDS or (name == "name" and "Topic" in owner):
            return rng.choice(names.topics)
        if name in _GROUP_FIELDS:
            return rng.choice(names.groups)
        if name == "name" and "Config" in owner:
            return rng.choice(_CONFIG_NAMES)
        if name == "name" and "Protocol" in owner:
            return rng.choice(("range", "roundrobin"))
        if name == "protocol_type":
            return "consumer"
        if name == "client_software_name":
            return "odradek-fuzz"
        if name == "client_software_version":
            return "1.0"
        if name in ("member_id", "group_instance_id"):
            return rng.choice(("", "member-1"))
        return "".join(rng.choices("abcxyz.-_09", k=rng.randrange(0, 9)))

    def _records(self, nullable: bool) -> bytes | None:
        rng = self._rng
        draw = rng.random()
        if draw < 0.8 and self._names.records:
            return rng.choice(self._names.records)
        if draw < 0.9 and nullable:
            return None
        return rng.randbytes(rng.randrange(0, 80))


def _is_nullable(annotation: Any) -> bool:
    return get_origin(annotation) in (UnionType, Union) and NoneType in get_args(annotation)


_NUMBERS: Final[dict[str, Callable[[random.Random], int]]] = {
    "replica_id": lambda rng: -1,
    "acks": lambda rng: rng.choice((1, -1, 0)),
    "num_partitions": lambda rng: rng.choice((1, 2, -1)),
    "count": lambda rng: rng.choice((2, 3)),
    "replication_factor": lambda rng: rng.choice((1, -1)),
    "generation_id": lambda rng: rng.choice((-1, 0, 1)),
    "generation_id_or_member_epoch": lambda rng: rng.choice((-1, 0, 1)),
    "fetch_offset": lambda rng: rng.choice((0, 1, 5, -1)),
    "committed_offset": lambda rng: rng.choice((0, 1, 5, -1)),
    "offset": lambda rng: rng.choice((0, 1, 5, -1)),
    "timestamp": lambda rng: rng.choice((-1, -2, 0)),
    "max_bytes": lambda rng: rng.choice((1, 1024, 1 << 20)),
    "partition_max_bytes": lambda rng: rng.choice((1, 1024, 1 << 20)),
    "min_bytes": lambda rng: rng.choice((0, 1)),
    "isolation_level": lambda rng: rng.choice((0, 1)),
    "key_type": lambda rng: rng.choice((0, 0, 1)),
    "resource_type": lambda rng: rng.choice((2, 2, 4)),
    "config_operation": lambda rng: rng.choice((0, 1, 2, 3)),
    "session_id": lambda rng: 0,
    "session_epoch": lambda rng: -1,
    "producer_id": lambda rng: -1,
    "producer_epoch": lambda rng: -1,
    "current_leader_epoch": lambda rng: -1,
    "log_start_offset": lambda rng: -1,
    "max_num_offsets": lambda rng: 1,
    "endpoint_type": lambda rng: rng.choice((1, 1, 2)),
}

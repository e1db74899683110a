"""Key and value serializers: the built-in ones by name, and how a configured value becomes one.

A serializer is any object with ``serialize(topic, data) -> bytes | None``; it may also have
``configure(configs, is_key)`` (called once, when the producer is built) and ``close()``
(called once, by ``Producer.close``). ``None`` data is a null key or value and is passed
through as ``None`` by every built-in serializer, as Kafka's do.

Built-in serializers (``key.serializer`` / ``value.serializer`` names; Java class names are
accepted as aliases):

============  ======================================================  =====================
name          encoding                                                Java equivalent
============  ======================================================  =====================
``bytes``     bytes, bytearray or memoryview, unchanged               ByteArraySerializer
``str``       UTF-8                                                   StringSerializer
``int32``     4 bytes, big-endian, signed                             IntegerSerializer
``int64``     8 bytes, big-endian, signed                             LongSerializer
``int``       = ``int64``: a Python int has no width, and 8 bytes     LongSerializer
              hold every value a Java consumer can read as a long
``json``      ``json.dumps`` (compact, non-ASCII kept) as UTF-8       (none)
============  ======================================================  =====================

``resolve_serializer`` turns a configured value into a serializer: a name above, a dotted
import path ``package.module.Class`` (instantiated with no arguments), a class (likewise), an
object with ``serialize``, or a plain callable ``f(data) -> bytes`` (kafka-python's style,
wrapped). Anything else is a ConfigError naming the key.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

from odradek.client.producer._plugins import instantiate
from odradek.errors import ConfigError

__all__ = [
    "BUILTIN_SERIALIZERS",
    "BytesSerializer",
    "Int32Serializer",
    "Int64Serializer",
    "JsonSerializer",
    "Serializer",
    "StringSerializer",
    "resolve_serializer",
]


@runtime_checkable
class Serializer(Protocol):
    """Turns a key or a value into bytes (``configure`` and ``close`` are optional)."""

    def serialize(self, topic: str, data: Any) -> bytes | None: ...


class BytesSerializer:
    """bytes-like data unchanged (a ``bytearray`` or ``memoryview`` is copied to ``bytes``)."""

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None or type(data) is bytes:
            return data
        if isinstance(data, bytes | bytearray | memoryview):
            return bytes(data)
        raise TypeError(f"the bytes serializer takes bytes, got {type(data).__name__}")


class StringSerializer:
    """A ``str`` as UTF-8 (Java's StringSerializer with its default encoding)."""

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, str):
            raise TypeError(f"the str serializer takes str, got {type(data).__name__}")
        return data.encode()


class _FixedIntSerializer:
    _format: struct.Struct
    _bits: int

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        if isinstance(data, bool) or not isinstance(data, int):
            raise TypeError(f"the int{self._bits} serializer takes int, got {type(data).__name__}")
        try:
            return self._format.pack(data)
        except struct.error:
            raise ValueError(f"{data} does not fit in a signed {self._bits}-bit integer") from None


class Int32Serializer(_FixedIntSerializer):
    """A signed 32-bit int, 4 bytes big-endian (Java's IntegerSerializer)."""

    _format = struct.Struct(">i")
    _bits = 32


class Int64Serializer(_FixedIntSerializer):
    """A signed 64-bit int, 8 bytes big-endian (Java's LongSerializer)."""

    _format = struct.Struct(">q")
    _bits = 64


class JsonSerializer:
    """Any JSON-serializable value as compact UTF-8 JSON (``None`` stays a null record)."""

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


BUILTIN_SERIALIZERS: Final[Mapping[str, Callable[[], Serializer]]] = {
    "bytes": BytesSerializer,
    "str": StringSerializer,
    "string": StringSerializer,
    "int32": Int32Serializer,
    "int64": Int64Serializer,
    "int": Int64Serializer,
    "json": JsonSerializer,
    "org.apache.kafka.common.serialization.ByteArraySerializer": BytesSerializer,
    "org.apache.kafka.common.serialization.StringSerializer": StringSerializer,
    "org.apache.kafka.common.serialization.IntegerSerializer": Int32Serializer,
    "org.apache.kafka.common.serialization.LongSerializer": Int64Serializer,
}


class _CallableSerializer:
    """Wraps ``f(data) -> bytes`` (kafka-python's serializer style)."""

    def __init__(self, function: Callable[[Any], bytes | None]) -> None:
        self._function = function

    def serialize(self, topic: str, data: Any) -> bytes | None:
        return self._function(data)

    def __repr__(self) -> str:
        return f"<serializer {self._function!r}>"


def resolve_serializer(value: Any, key: str, configs: Mapping[str, Any]) -> Serializer:
    """Builds the serializer configured as ``value`` for ``key`` (``key.serializer`` or
    ``value.serializer``) and calls its ``configure(configs, is_key)`` if it has one.

    Raises:
        ConfigError: ``value`` names nothing usable; the message names ``key``.
        Exception: whatever ``configure`` or the class's constructor raises.
    """
    serializer = instantiate(value, key, BUILTIN_SERIALIZERS)
    if not hasattr(serializer, "serialize"):
        if not callable(serializer):
            raise ConfigError(
                f"{key}: {value!r} is not a serializer (no serialize(topic, data) and not callable)"
            )
        serializer = _CallableSerializer(serializer)
    configure = getattr(serializer, "configure", None)
    if callable(configure):
        configure(dict(configs), key == "key.serializer")
    return serializer  # type: ignore[no-any-return]

"""Key and value deserializers: the built-in ones by name, and how a configured value becomes one.

A deserializer is any object with ``deserialize(topic, data) -> object`` (``data`` is ``bytes``
or ``None``); it may also have ``configure(configs, is_key)`` (called once, when the consumer is
built) and ``close()`` (called by ``Consumer.close``). ``None`` (a null key or value) is passed
through as ``None`` by every built-in deserializer.

Built-in names (Java class names accepted as aliases): ``bytes`` (unchanged), ``str`` /
``string`` (UTF-8), ``int32`` (4 bytes big-endian signed), ``int64`` / ``int`` (8 bytes), and
``json``. ``resolve_deserializer`` also takes a dotted import path, a class, an object with
``deserialize``, or a plain callable ``f(data)`` (kafka-python's style). It returns ``None``
for ``bytes``, which tells the decoder to skip the call altogether (the fast path).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

from odradek.client.producer._plugins import instantiate
from odradek.errors import ConfigError, SerializationError

__all__ = [
    "BUILTIN_DESERIALIZERS",
    "BytesDeserializer",
    "Deserializer",
    "Int32Deserializer",
    "Int64Deserializer",
    "JsonDeserializer",
    "StringDeserializer",
    "resolve_deserializer",
]


@runtime_checkable
class Deserializer(Protocol):
    """Turns a key's or value's bytes into an object (``configure``/``close`` optional)."""

    def deserialize(self, topic: str, data: bytes | None) -> Any: ...


class BytesDeserializer:
    """bytes unchanged (Java's ByteArrayDeserializer)."""

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return data


class StringDeserializer:
    """UTF-8 text (Java's StringDeserializer)."""

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return None if data is None else data.decode()


class _FixedIntDeserializer:
    _format: struct.Struct

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        if len(data) != self._format.size:
            raise SerializationError(
                f"{type(self).__name__}: expected {self._format.size} bytes, got {len(data)}"
            )
        return self._format.unpack(data)[0]


class Int32Deserializer(_FixedIntDeserializer):
    """A signed 32-bit big-endian int (Java's IntegerDeserializer)."""

    _format = struct.Struct(">i")


class Int64Deserializer(_FixedIntDeserializer):
    """A signed 64-bit big-endian int (Java's LongDeserializer)."""

    _format = struct.Struct(">q")


class JsonDeserializer:
    """UTF-8 JSON to Python values."""

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return None if data is None else json.loads(data)


_PREFIX: Final = "org.apache.kafka.common.serialization."
BUILTIN_DESERIALIZERS: Final[Mapping[str, Callable[[], Deserializer]]] = {
    "bytes": BytesDeserializer,
    "str": StringDeserializer,
    "string": StringDeserializer,
    "int32": Int32Deserializer,
    "int64": Int64Deserializer,
    "int": Int64Deserializer,
    "json": JsonDeserializer,
    _PREFIX + "ByteArrayDeserializer": BytesDeserializer,
    _PREFIX + "StringDeserializer": StringDeserializer,
    _PREFIX + "IntegerDeserializer": Int32Deserializer,
    _PREFIX + "LongDeserializer": Int64Deserializer,
}


class _CallableDeserializer:
    """Wraps ``f(data) -> object`` (kafka-python's style)."""

    def __init__(self, function: Callable[[bytes | None], Any]) -> None:
        self._function = function

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return self._function(data)


def resolve_deserializer(value: Any, key: str, configs: Mapping[str, Any]) -> Deserializer | None:
    """The deserializer configured as ``value`` for ``key`` (``key.deserializer`` or
    ``value.deserializer``), configured; ``None`` for plain bytes (see the module docstring).

    Raises:
        ConfigError: ``value`` names nothing usable; the message names ``key``.
    """
    if value is None or value == "bytes" or value is BytesDeserializer:
        return None
    deserializer = instantiate(value, key, BUILTIN_DESERIALIZERS)
    if isinstance(deserializer, BytesDeserializer):
        return None
    if not hasattr(deserializer, "deserialize"):
        if not callable(deserializer):
            raise ConfigError(
                f"{key}: {value!r} is not a deserializer "
                "(no deserialize(topic, data) and not callable)"
            )
        deserializer = _CallableDeserializer(deserializer)
    configure = getattr(deserializer, "configure", None)
    if callable(configure):
        configure(dict(configs), key == "key.deserializer")
    return deserializer  # type: ignore[no-any-return]

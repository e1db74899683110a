"""``producer.serializers``: the built-in encodings (Java-compatible widths and byte order),
null pass-through, and how a configured value becomes a serializer."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from odradek.client.producer.serializers import (
    BytesSerializer,
    Int32Serializer,
    Int64Serializer,
    JsonSerializer,
    StringSerializer,
    resolve_serializer,
)
from odradek.errors import ConfigError


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("bytes", b"\x00\xff", b"\x00\xff"),
        ("bytes", bytearray(b"ab"), b"ab"),
        ("bytes", memoryview(b"ab"), b"ab"),
        ("str", "héllo", "héllo".encode()),
        ("int32", 1, b"\x00\x00\x00\x01"),
        ("int32", -1, b"\xff\xff\xff\xff"),
        ("int32", 2**31 - 1, b"\x7f\xff\xff\xff"),
        ("int64", -2, b"\xff" * 7 + b"\xfe"),
        ("int", 2**40, struct.pack(">q", 2**40)),
        ("json", {"b": [1, 2], "a": "é"}, '{"b":[1,2],"a":"é"}'.encode()),
        ("org.apache.kafka.common.serialization.StringSerializer", "x", b"x"),
        ("org.apache.kafka.common.serialization.IntegerSerializer", 7, b"\x00\x00\x00\x07"),
        ("org.apache.kafka.common.serialization.LongSerializer", 7, struct.pack(">q", 7)),
    ],
)
def test_builtin_encodings(name: str, data: Any, expected: bytes) -> None:
    serializer = resolve_serializer(name, "value.serializer", {})
    assert serializer.serialize("t", data) == expected


@pytest.mark.parametrize(
    "serializer",
    [BytesSerializer(), StringSerializer(), Int32Serializer(), Int64Serializer(), JsonSerializer()],
)
def test_none_is_a_null_record(serializer: Any) -> None:
    assert serializer.serialize("t", None) is None


@pytest.mark.parametrize(
    ("serializer", "data", "error"),
    [
        (BytesSerializer(), "text", TypeError),
        (StringSerializer(), b"bytes", TypeError),
        (Int32Serializer(), 2**31, ValueError),
        (Int32Serializer(), True, TypeError),
        (Int64Serializer(), 1.5, TypeError),
        (Int64Serializer(), 2**63, ValueError),
        (JsonSerializer(), object(), TypeError),
    ],
)
def test_wrong_data_raises(serializer: Any, data: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        serializer.serialize("t", data)


def test_object_class_path_and_callable() -> None:
    class Upper:
        configured: tuple[dict[str, Any], bool] | None = None

        def configure(self, configs: dict[str, Any], is_key: bool) -> None:
            self.configured = (configs, is_key)

        def serialize(self, topic: str, data: Any) -> bytes:
            return f"{topic}:{data}".upper().encode()

    instance = Upper()
    assert resolve_serializer(instance, "key.serializer", {"a": 1}) is instance
    assert instance.configured == ({"a": 1}, True)
    from_class = resolve_serializer(Upper, "value.serializer", {})
    assert from_class.serialize("t", "v") == b"T:V"
    assert from_class.configured == ({}, False)  # type: ignore[attr-defined]

    by_path = resolve_serializer(
        "odradek.client.producer.serializers.Int32Serializer", "key.serializer", {}
    )
    assert isinstance(by_path, Int32Serializer)

    wrapped = resolve_serializer(lambda data: data[::-1], "value.serializer", {})
    assert wrapped.serialize("t", b"abc") == b"cba"


@pytest.mark.parametrize("value", ["no-such-name", "no.such.module.Serializer", 42])
def test_unusable_values_name_the_key(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"value\.serializer"):
        resolve_serializer(value, "value.serializer", {})

"""Version-agnostic construction of responses and reading of requests.

Handlers describe a response once, as plain nested mappings with the field names of the
newest version (``{"throttle_time": 0, "topics": [{"name": ..., "partitions": [...]}]}``) and
plain Python values: ints for error codes and durations in milliseconds, ``bytes``, ``str``,
``None``. ``build_response(api_key, version, fields)`` turns that into the kio object of the
requested version: fields the version lacks are dropped, fields it has but the mapping omits
take their schema default (a missing field without one raises ``KeyError``), and values are
converted by their Kafka type (error codes, ``timedelta`` durations, UUIDs, timestamps).

Requests go the other way with ``request_value``: durations come back as milliseconds and
error codes as ints, so handlers never touch kio types. This keeps kio behind the protocol
package.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.codec import response_class

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kafka_type: str
    entity: type[Any] | None  # the nested entity class for arrays/structs of entities
    is_array: bool
    required: bool


_FIELDS: dict[type[Any], tuple[_Field, ...]] = {}


def _fields(cls: type[Any]) -> tuple[_Field, ...]:
    cached = _FIELDS.get(cls)
    if cached is None:
        cached = _FIELDS[cls] = _describe(cls)
    return cached


def _describe(cls: type[Any]) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    result = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        entity, is_array = _entity_of(hint)
        required = (
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        )
        kafka_type = str(field.metadata.get("kafka_type", ""))
        result.append(_Field(field.name, kafka_type, entity, is_array, required))
    return tuple(result)


def _entity_of(hint: Any) -> tuple[type[Any] | None, bool]:
    origin = typing.get_origin(hint)
    if origin is tuple:
        args = typing.get_args(hint)
        inner = args[0] if args else None
        if isinstance(inner, type) and dataclasses.is_dataclass(inner):
            return inner, True
        return None, True
    if origin in (typing.Union, types.UnionType):
        # Nullable: ``X | None``, where X may be an entity or a tuple of them.
        for arg in typing.get_args(hint):
            if arg is not type(None):
                found = _entity_of(arg)
                if found != (None, False):
                    return found
        return None, False
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint, False
    return None, False


def _convert(kafka_type: str, value: Any) -> Any:
    if value is None:
        return None
    if kafka_type == "error_code":
        return KioErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=int(value))
    if kafka_type == "uuid":
        return value if isinstance(value, uuid.UUID) else uuid.UUID(int=int(value))
    if kafka_type == "datetime_i64":
        return _EPOCH + datetime.timedelta(milliseconds=int(value))
    return value


def build_entity(cls: type[Any], fields: Mapping[str, Any]) -> Any:
    """Builds an instance of kio entity class ``cls`` from a plain mapping (see module)."""
    kwargs: dict[str, Any] = {}
    for field in _fields(cls):
        if field.name not in fields:
            if field.required:
                raise KeyError(f"{cls.__qualname__} v{cls.__version__} needs {field.name!r}")
            continue
        value = fields[field.name]
        if value is None:
            pass  # null: a nullable field (kio checks the rest)
        elif field.entity is not None:
            if field.is_array:
                value = tuple(build_entity(field.entity, item) for item in value)
            else:
                value = build_entity(field.entity, value)
        elif field.is_array:
            value = tuple(_convert(field.kafka_type, item) for item in value)
        else:
            value = _convert(field.kafka_type, value)
        kwargs[field.name] = value
    return cls(**kwargs)


def build_response(api_key: int, api_version: int, fields: Mapping[str, Any]) -> ResponsePayload:
    """The kio response object of ``api_key`` at ``api_version`` built from ``fields``."""
    return typing.cast(ResponsePayload, build_entity(response_class(api_key, api_version), fields))


def request_value(value: Any) -> Any:
    """Converts a value read from a kio request to plain Python (ms for durations)."""
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, KioErrorCode):
        return int(value.value)
    if isinstance(value, datetime.datetime):
        return int((value - _EPOCH) / datetime.timedelta(milliseconds=1))
    return value


def has_field(obj: Any, name: str) -> bool:
    """Whether a kio request or entity of this version has the field ``name``."""
    return any(field.name == name for field in _fields(type(obj)))

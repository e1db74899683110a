"""Client configuration by Kafka's property names, checked against per-client-type key sets.

This module owns the question "is this setting legal for this kind of client, and what is its
value?". The rules it keeps:

- settings are named as Kafka names them (``bootstrap.servers``, ``linger.ms``); they may be
  given as a mapping and as keyword arguments in which underscores stand for dots
  (``linger_ms=5`` is ``"linger.ms": 5``); a keyword argument wins over the mapping;
- every client type accepts the common keys (``COMMON_KEYS``) plus the keys registered for it
  (``register_keys``; the producer and consumer modules register theirs); any other key fails
  with ``ConfigError`` naming it (and the closest known key);
- values are coerced once, when the configuration is built, to the key's type: ``"5"`` is
  accepted for an int, ``"true"``/``"false"`` for a bool, ``"a:1,b:2"`` for a list; an
  unconvertible value or one outside the key's bounds or choices fails with ``ConfigError``;
- unset keys take Kafka's default for that client type (a type's registration may override a
  common key's default, as the admin client does for ``connections.max.idle.ms``).

Registration happens at import time; a ``ClientConfig`` is immutable once built and so may be
read from any thread.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, TypeVar

from odradek.client.security import SECURITY_KEYS
from odradek.errors import ConfigError

__all__ = [
    "ADMIN",
    "COMMON",
    "COMMON_KEYS",
    "CONSUMER",
    "PRODUCER",
    "SIMPLE_CONSUMER",
    "ClientConfig",
    "ConfigKey",
    "keys_for",
    "register_keys",
]

COMMON: Final = "common"
ADMIN: Final = "admin"
PRODUCER: Final = "producer"
CONSUMER: Final = "consumer"
SIMPLE_CONSUMER: Final = "simple_consumer"

T = TypeVar("T")

#: The value kinds a key may have; ``object`` keys (serializers, callbacks) are kept as given.
_KINDS: Final = (int, float, bool, str, list, object)
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One configuration key.

    Args:
        name: Kafka's property name.
        kind: ``int``, ``float``, ``bool``, ``str``, ``list`` (of str) or ``object`` (any
            value, kept as given: serializers, partitioners, callbacks).
        default: the value when unset (``None``: no value; nullable keys only).
        doc: one line for error messages and ``describe``.
        min_value, max_value: inclusive bounds for numbers.
        choices: the legal values of a ``str`` key (compared case-sensitively, as Kafka does).
        nullable: whether ``None`` is a legal value.
    """

    name: str
    kind: type
    default: Any
    doc: str = ""
    min_value: float | None = None
    max_value: float | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise TypeError(f"config key {self.name}: unsupported kind {self.kind!r}")

    def coerce(self, value: Any) -> Any:
        """Returns ``value`` converted to this key's kind.

        Raises:
            ConfigError: the value cannot be converted, or is out of bounds or choices; the
                message names the key.
        """
        if value is None:
            if self.nullable or self.default is None:
                return None
            raise ConfigError(f"{self.name}: a value is required, got None")
        kind = self.kind
        try:
            if kind is object:
                return value
            if kind is bool:
                converted: Any = _to_bool(value)
            elif kind is int:
                converted = _to_int(value)
            elif kind is float:
                if isinstance(value, bool):
                    raise ValueError("a bool is not a number")
                converted = float(value)
            elif kind is str:
                if not isinstance(value, str):
                    raise ValueError(f"expected a string, got {type(value).__name__}")
                converted = value
            else:
                converted = _to_list(value)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{self.name}: invalid value {value!r} ({error})") from None
        if isinstance(converted, int | float) and not isinstance(converted, bool):
            if self.min_value is not None and converted < self.min_value:
                raise ConfigError(f"{self.name}: {converted} is below {self.min_value:g}")
            if self.max_value is not None and converted > self.max_value:
                raise ConfigError(f"{self.name}: {converted} is above {self.max_value:g}")
        if self.choices is not None and converted not in self.choices:
            raise ConfigError(
                f"{self.name}: invalid value {converted!r}, expected one of "
                + ", ".join(self.choices)
            )
        return converted


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    raise ValueError("expected true or false")


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a bool is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise ValueError(f"expected an integer, got {type(value).__name__}")


def _to_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, Sequence | set | frozenset):
        items = [str(item).strip() for item in value]
        return [item for item in items if item]
    raise ValueError(f"expected a list or a comma-separated string, got {type(value).__name__}")


_MAX_INT32: Final = 2**31 - 1

#: Keys every client type accepts, with Kafka's defaults (CommonClientConfigs, and the
#: librdkafka global properties that a Python user may carry over: ``api.version.request``).
COMMON_KEYS: Final[tuple[ConfigKey, ...]] = (
    ConfigKey("bootstrap.servers", list, [], "host:port pairs to learn the cluster from"),
    ConfigKey("client.id", str, "", "sent in every request header (logs, quotas)"),
    ConfigKey(
        "client.dns.lookup",
        str,
        "use_all_dns_ips",
        "how host names resolve",
        choices=("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
    ),
    ConfigKey("request.timeout.ms", int, 30_000, "longest wait for a response", 1, _MAX_INT32),
    ConfigKey("metadata.max.age.ms", int, 300_000, "refresh metadata at least this often", 0),
    ConfigKey("reconnect.backoff.ms", int, 50, "first wait before reconnecting", 0),
    ConfigKey("reconnect.backoff.max.ms", int, 1000, "longest wait before reconnecting", 0),
    ConfigKey("retry.backoff.ms", int, 100, "wait before retrying a failed request", 0),
    ConfigKey("retry.backoff.max.ms", int, 1000, "longest wait before retrying", 0),
    ConfigKey(
        "connections.max.idle.ms", int, 540_000, "close connections idle this long (-1: never)", -1
    ),
    ConfigKey("socket.connection.setup.timeout.ms", int, 10_000, "first connect timeout", 1),
    ConfigKey("socket.connection.setup.timeout.max.ms", int, 30_000, "longest connect timeout", 1),
    ConfigKey("send.buffer.bytes", int, 131_072, "SO_SNDBUF (-1: the OS default)", -1),
    ConfigKey("receive.buffer.bytes", int, 65_536, "SO_RCVBUF (-1: the OS default)", -1),
    ConfigKey(
        "security.protocol",
        str,
        "PLAINTEXT",
        "transport security (client.security)",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    ),
    # TLS and SASL settings, read by client.security (None: unset).
    *(
        ConfigKey(name, str, None, "TLS / SASL setting (client.security)", nullable=True)
        for name in SECURITY_KEYS
    ),
    ConfigKey("api.version.request", bool, True, "negotiate versions with ApiVersions"),
    ConfigKey("api.version.request.timeout.ms", int, 10_000, "longest wait for ApiVersions", 1),
    ConfigKey(
        "max.in.flight.requests.per.connection",
        int,
        5,
        "unanswered requests per connection before sending waits",
        1,
    ),
    ConfigKey(
        "socket.max.frame.bytes",
        int,
        104_857_600,
        "largest response frame accepted (odradek)",
        1,
    ),
)

_lock = threading.Lock()
_REGISTERED: dict[str, dict[str, ConfigKey]] = {COMMON: {}}


def register_keys(client_type: str, keys: Iterable[ConfigKey]) -> None:
    """Adds ``keys`` to the set ``client_type`` accepts (called at import by client modules).

    A key named like a common key replaces it for this type only (a different default).
    Registering the same key again replaces it (idempotent on re-import).
    """
    with _lock:
        table = _REGISTERED.setdefault(client_type, {})
        for key in keys:
            table[key.name] = key


def keys_for(client_type: str) -> Mapping[str, ConfigKey]:
    """The keys ``client_type`` accepts: the common ones, then its registered ones.

    Raises:
        ConfigError: no key was ever registered for ``client_type`` (and it is not
            ``COMMON``).
    """
    with _lock:
        if client_type not in _REGISTERED:
            raise ConfigError(f"unknown client type {client_type!r}")
        keys = {key.name: key for key in COMMON_KEYS}
        keys.update(_REGISTERED[client_type])
    return MappingProxyType(keys)


register_keys(
    ADMIN,
    (
        ConfigKey("connections.max.idle.ms", int, 300_000, "close idle connections", -1),
        ConfigKey("default.api.timeout.ms", int, 60_000, "timeout of an admin call", 1),
        ConfigKey("retries", int, _MAX_INT32, "retries of a retriable admin request", 0),
    ),
)


class ClientConfig(Mapping[str, Any]):
    """An immutable, checked configuration for one client type.

    ``config["linger.ms"]`` (and ``get``) return the given value or the default. Typed
    getters (``get_int``, ...) also check the kind, so a caller's mistake shows up at once.

    Args:
        config: settings by Kafka name (or another ``ClientConfig``: its given values).
        client_type: ``COMMON``, ``ADMIN``, ``PRODUCER``, ``CONSUMER``, ``SIMPLE_CONSUMER``
            or any type registered with ``register_keys``.
        **kwargs: more settings, underscores for dots; they win over ``config``.

    Raises:
        ConfigError: an unknown key (named), or an invalid value.
    """

    __slots__ = ("_client_type", "_given", "_keys", "_values")

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        /,
        *,
        client_type: str = COMMON,
        **kwargs: Any,
    ) -> None:
        self._client_type = client_type
        self._keys = keys_for(client_type)
        given: dict[str, Any] = {}
        source = config.given if isinstance(config, ClientConfig) else (config or {})
        for name, value in source.items():
            given[self._known(str(name))] = value
        for name, value in kwargs.items():
            given[self._known(name.replace("_", "."))] = value
        values = {name: key.default for name, key in self._keys.items()}
        for name, value in given.items():
            values[name] = self._keys[name].coerce(value)
        self._given: Mapping[str, Any] = MappingProxyType(given)
        self._values: Mapping[str, Any] = MappingProxyType(values)

    def _known(self, name: str) -> str:
        if name in self._keys:
            return name
        hint = difflib.get_close_matches(name, self._keys, n=1)
        suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise ConfigError(
            f"unknown configuration {name!r} for a {self._client_type.replace('_', ' ')} "
            f"client{suggestion}"
        )

    @property
    def client_type(self) -> str:
        return self._client_type

    @property
    def given(self) -> Mapping[str, Any]:
        """The settings as the user gave them (after key-name normalisation)."""
        return self._given

    def with_overrides(
        self, overrides: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> ClientConfig:
        """A copy with more settings (same rules as the constructor)."""
        merged = dict(self._given)
        merged.update(overrides or {})
        return ClientConfig(merged, client_type=self._client_type, **kwargs)

    def for_type(self, client_type: str) -> ClientConfig:
        """The given settings re-checked for another client type (keys it lacks are dropped).

        For a client that runs an inner client of another kind (a consumer's admin calls).
        """
        keys = keys_for(client_type)
        kept = {name: value for name, value in self._given.items() if name in keys}
        return ClientConfig(kept, client_type=client_type)

    # -- Mapping

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            self._known(name)
            raise

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name!r}: {value!r}" for name, value in sorted(self._given.items()))
        return f"ClientConfig({{{shown}}}, client_type={self._client_type!r})"

    # -- typed getters

    def _typed(self, name: str, kind: type[T], check: Callable[[Any], bool]) -> T:
        value = self[name]
        if not check(value):
            raise ConfigError(f"{name} is a {self._keys[name].kind.__name__}, not {kind.__name__}")
        return value  # type: ignore[no-any-return]

    def get_int(self, name: str) -> int:
        return self._typed(name, int, lambda v: isinstance(v, int) and not isinstance(v, bool))

    def get_float(self, name: str) -> float:
        value = self._typed(
            name, float, lambda v: isinstance(v, int | float) and not isinstance(v, bool)
        )
        return float(value)

    def get_bool(self, name: str) -> bool:
        return self._typed(name, bool, lambda v: isinstance(v, bool))

    def get_str(self, name: str) -> str:
        return self._typed(name, str, lambda v: isinstance(v, str))

    def get_optional_str(self, name: str) -> str | None:
        value = self[name]
        if value is None:
            return None
        return self.get_str(name)

    def get_list(self, name: str) -> list[str]:
        return list(self._typed(name, list, lambda v: isinstance(v, list)))

    def get_object(self, name: str) -> Any:
        return self[name]

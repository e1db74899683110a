"""Kafka's inline JAAS configuration (``sasl.jaas.config``), parsed into login-module entries.

The text is one or more ``<LoginModuleClass> <flag> key=value ... ;`` entries; a value is a
double-quoted string (``\\"`` and ``\\\\`` escapes) or a bare token. The broker reads PLAIN's
users (``user_<name>="<password>"``) and the credentials a broker uses to authenticate itself
(``username`` / ``password``) from it; odradek's client reads ``username`` / ``password``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from odradek.errors import ConfigError

__all__ = ["JaasEntry", "parse_jaas_config", "plain_users"]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})
_TOKEN = re.compile(
    r'\s*(?:(?P<semi>;)|(?P<key>[A-Za-z0-9_.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"'
    r"|(?P<bare>[^\s;\"]+))|(?P<word>[A-Za-z0-9_.$]+))",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class JaasEntry:
    """One login module: its class name, control flag and options (in the order given)."""

    login_module: str
    flag: str
    options: tuple[tuple[str, str], ...]

    def option(self, name: str) -> str | None:
        for key, value in self.options:
            if key == name:
                return value
        return None


def parse_jaas_config(text: str, *, setting: str = "sasl.jaas.config") -> list[JaasEntry]:
    """Parses the entries of a JAAS configuration.

    Raises:
        ConfigError: malformed text (no flag, no closing ``;``, an unterminated quote), naming
            ``setting``.
    """
    entries: list[JaasEntry] = []
    module: str | None = None
    flag: str | None = None
    options: list[tuple[str, str]] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ConfigError(f"invalid {setting}: cannot parse at {text[position:][:20]!r}")
        position = match.end()
        if match["semi"]:
            if module is None or flag is None:
                raise ConfigError(f"invalid {setting}: an entry needs a login module and a flag")
            entries.append(JaasEntry(module, flag, tuple(options)))
            module, flag, options = None, None, []
        elif match["key"]:
            if flag is None:
                raise ConfigError(f"invalid {setting}: option before the control flag")
            quoted = match["quoted"]
            value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else match["bare"]
            options.append((match["key"], value))
        elif module is None:
            module = match["word"]
        elif flag is None:
            if match["word"] not in _FLAGS:
                raise ConfigError(
                    f"invalid {setting}: control flag {match['word']!r} is not one of "
                    f"{sorted(_FLAGS)}"
                )
            flag = match["word"]
        else:
            raise ConfigError(f"invalid {setting}: unexpected {match['word']!r}")
        while position < len(text) and text[position].isspace():
            position += 1
    if module is not None:
        raise ConfigError(f"invalid {setting}: an entry must end with ';'")
    if not entries:
        raise ConfigError(f"invalid {setting}: no login module")
    return entries


def plain_users(entries: list[JaasEntry]) -> dict[str, str]:
    """PLAIN's users: the ``user_<name>`` options of the entries (name → password)."""
    users: dict[str, str] = {}
    for entry in entries:
        for key, value in entry.options:
            if key.startswith("user_") and len(key) > len("user_"):
                users[key[len("user_") :]] = value
    return users

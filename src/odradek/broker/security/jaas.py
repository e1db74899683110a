"""Kafka's JAAS configuration, parsed into login-module entries: inline (``sasl.jaas.config``)
and the static JAAS file a Kafka broker is started with (``-Djava.security.auth.login.config``).

Inline text is one or more ``<LoginModuleClass> <flag> key=value ... ;`` entries; a value is a
double-quoted string (``\\"`` and ``\\\\`` escapes) or a bare token. A file holds named sections
of such entries, ``<name> { <entries> };``, with ``//`` and ``/* */`` comments, as Java's
``ConfigFile`` reads it; a broker reads ``<listener, lower case>.KafkaServer`` and then
``KafkaServer``. The broker reads PLAIN's users (``user_<name>="<password>"``) and the
credentials a broker uses to authenticate itself (``username`` / ``password``) from the
entries; odradek's client reads ``username`` / ``password``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from odradek.errors import ConfigError

__all__ = [
    "KAFKA_SERVER_SECTION",
    "JaasEntry",
    "login_module_of",
    "parse_jaas_config",
    "parse_jaas_file",
    "plain_users",
]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: The section of a JAAS file a Kafka broker reads (after ``<listener>.KafkaServer``).
KAFKA_SERVER_SECTION = "KafkaServer"
_SECTION_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
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


def login_module_of(mechanism: str) -> str:
    """The login module whose entries of a JAAS file section serve ``mechanism``."""
    return PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE


def parse_jaas_file(text: str, *, source: str) -> dict[str, list[JaasEntry]]:
    """Parses a static JAAS file: its sections by name (case kept, as Java looks them up).

    Raises:
        ConfigError: a malformed file (a section without a name, ``{`` or ``}``, a section
            given twice, an unterminated comment or quote, malformed entries), naming
            ``source``.
    """
    text = _without_comments(text, source)
    sections: dict[str, list[JaasEntry]] = {}
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return sections
        name = _SECTION_NAME.match(text, position)
        brace = text.find("{", position)
        if name is None or brace < 0 or text[name.end() : brace].strip():
            raise ConfigError(
                f"invalid JAAS file {source}: expected '<name> {{' at {text[position:][:20]!r}"
            )
        end = _closing_brace(text, brace + 1, source)
        if name[0] in sections:
            raise ConfigError(f"invalid JAAS file {source}: section {name[0]} given twice")
        sections[name[0]] = parse_jaas_config(
            text[brace + 1 : end], setting=f"section {name[0]} of JAAS file {source}"
        )
        position = end + 1
        while position < len(text) and text[position].isspace():
            position += 1
        if position < len(text) and text[position] == ";":
            position += 1


def _without_comments(text: str, source: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments outside quoted values blanked."""
    out: list[str] = []
    position, quoted = 0, False
    while position < len(text):
        char = text[position]
        if quoted:
            if char == "\\" and position + 1 < len(text):
                out.append(text[position : position + 2])
                position += 2
                continue
            quoted = char != '"'
        elif char == '"':
            quoted = True
        elif text.startswith("//", position):
            newline = text.find("\n", position)
            position = len(text) if newline < 0 else newline
            continue
        elif text.startswith("/*", position):
            close = text.find("*/", position + 2)
            if close < 0:
                raise ConfigError(f"invalid JAAS file {source}: unterminated /* comment")
            out.append(" ")
            position = close + 2
            continue
        out.append(char)
        position += 1
    return "".join(out)


def _closing_brace(text: str, position: int, source: str) -> int:
    quoted = False
    while position < len(text):
        char = text[position]
        if quoted and char == "\\":
            position += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char == "}" and not quoted:
            return position
        position += 1
    raise ConfigError(f"invalid JAAS file {source}: a section has no closing '}}'")

"""How a configured plug-in value (serializer, partitioner, interceptor) becomes an object,
and how one is closed without letting its exception escape.

A configured value may be a registered name, a dotted import path ``package.module.Class`` (or
``package.module:Class``), a class, or an object. Names and paths resolve to a class or a
factory, which is called with no arguments; an object is used as given.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from odradek.errors import ConfigError

__all__ = ["close_quietly", "import_object", "instantiate"]


def import_object(path: str, key: str) -> Any:
    """Imports ``package.module.Name`` (or ``package.module:Name``).

    Raises:
        ConfigError: the module or the name cannot be imported; the message names ``key``.
    """
    module_name, sep, name = path.replace(":", ".").rpartition(".")
    if not sep or not module_name:
        raise ConfigError(f"{key}: {path!r} is neither a known name nor a dotted import path")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{key}: cannot import {path!r} ({error})") from None


def instantiate(value: Any, key: str, names: Mapping[str, Callable[[], object]]) -> Any:
    """The object ``value`` configures for ``key`` (see the module docstring).

    Raises:
        ConfigError: an unknown name or an unimportable path.
        Exception: whatever the class's constructor raises.
    """
    if isinstance(value, str):
        factory = names.get(value) or names.get(value.lower())
        value = factory if factory is not None else import_object(value, key)
    if isinstance(value, type):
        return value()
    return value


def close_quietly(component: object, what: str, logger: logging.Logger) -> None:
    """Calls ``component.close()`` if it has one; an exception is logged naming ``what``."""
    close = getattr(component, "close", None)
    if not callable(close):
        return
    try:
        close()
    except Exception:
        logger.exception("closing %s raised", what)

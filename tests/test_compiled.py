"""odradek._compiled: the lookup of optional C extensions."""

from __future__ import annotations

import pytest

from odradek import _types
from odradek._compiled import compiled_attr


def test_a_missing_extension_is_none() -> None:
    assert compiled_attr("odradek._no_such_extension", "anything") is None


def test_a_present_module_gives_its_attribute() -> None:
    assert compiled_attr("odradek._types", "ReadableBuffer") is _types.ReadableBuffer


def test_a_missing_attribute_is_an_error_not_a_fallback() -> None:
    # A built extension without the function is a build mistake: it must not pass silently.
    with pytest.raises(AttributeError):
        compiled_attr("odradek._types", "no_such_function")

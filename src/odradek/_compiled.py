"""Looking up the optional C extensions (``setup.py`` lists them).

Each extension is optional: where it could not be built, odradek runs the Python reference it
mirrors. Callers look the compiled function up by name once, at import or behind a cache, and
fall back when this answers None.
"""

from __future__ import annotations

import importlib
from typing import Any


def compiled_attr(module: str, name: str) -> Any:
    """``module.name``, or None when the extension ``module`` is not built."""
    try:
        extension = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(extension, name)

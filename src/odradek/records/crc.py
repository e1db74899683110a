"""CRC32C (Castagnoli), the record batch v2 checksum.

The only module that imports the compiled ``crc32c`` library. It accepts any buffer
(``bytes``, ``bytearray``, ``memoryview``, ``mmap``) without copying and runs at memory speed
(~20 GB/s with SSE4.2). There is deliberately no pure-Python fallback.
"""

from __future__ import annotations

import crc32c as _crc32c

from odradek._types import ReadableBuffer


def crc32c(data: ReadableBuffer, value: int = 0) -> int:
    """Returns the CRC32C of ``data``, continuing from ``value`` (0 to start)."""
    return int(_crc32c.crc32c(data, value))


#: The library's function itself, for compiled callers (``odradek._append``): the same
#: CRC32C without this module's wrapper frame (~0.4 µs per call from C).
crc32c_unwrapped = _crc32c.crc32c

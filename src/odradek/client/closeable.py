"""``Closeable``: the close and context-manager plumbing every client shares.

A client (producer, consumer, simple consumer, admin client, network client, streams
connector) subclasses ``Closeable`` and defines ``close``, which must be idempotent and must
work with no arguments; ``with client:`` then closes it on the way out, exception or not.
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

__all__ = ["Closeable"]


class Closeable(abc.ABC):
    """A client that owns connections or threads until ``close`` (see the module docstring)."""

    __slots__ = ()

    @abc.abstractmethod
    def close(self) -> None:
        """Releases what the client owns; later calls fail. Idempotent."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

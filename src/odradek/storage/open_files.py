"""The bound on the files the storage engine holds open, and the closing of idle ones.

A broker with thousands of partitions cannot keep every segment file open: each open ``.log``
costs a descriptor and each mapped index a descriptor and a memory mapping (the kernel's
``vm.max_map_count`` is 65,530 by default). So every segment file is opened lazily and may be
closed again at any time; ``OpenFiles`` decides when.

An *owner* (``FileRecords``, ``IndexFile``) holds at most one descriptor (or one mapping,
which keeps its own descriptor). It calls ``opened`` after it opens one, ``closed`` after it
lets it go, and sets its ``recently_used`` flag whenever it uses it (one attribute store: the
append and read hot paths pay nothing more). ``OpenFiles`` keeps the owners in the order they
opened and closes with the *second-chance* (clock) rule, an approximation of least recently
used that needs no reordering on every use:

- **the bound**: when ``opened`` takes the count past ``max_open_files``, owners are visited
  oldest first; one whose flag is set gets its flag cleared and a second chance (it moves to
  the back), one whose flag is clear is asked to ``release_file``;
- **the idle sweep**: ``close_idle`` (the log manager runs it every
  ``idle_file_close_ms``, on the scheduler, so the clock stays injected) releases every owner
  whose flag stayed clear since the previous sweep and clears the flags of the others. An owner
  unused for two sweep intervals has therefore been closed.

Releasing never breaks a reader or a writer in progress: owners drop their reference to the
descriptor (or mapping) rather than closing it, and whoever is using it holds a reference of
its own, so the descriptor is closed (the mapping unmapped) when the last user is done — a
``FileSlice`` on its way to ``sendfile`` keeps its file open. ``release_file`` may decline
(returns False) when the owner is busy; it is then tried again at the next sweep.

Thread safety: every method may be called from any thread. ``release_file`` is called with
``OpenFiles``'s lock held, so an owner must never block in it (index files only try their
lock); owners call ``opened``/``closed`` possibly holding their own lock.
"""

from __future__ import annotations

import resource
import threading
from typing import Protocol

#: The share of the process's descriptor limit (soft ``RLIMIT_NOFILE``) that segment files
#: may take by default: the rest is left for connections, checkpoints and the interpreter.
DEFAULT_LIMIT_SHARE = 0.5
#: The smallest default bound, whatever the descriptor limit.
MIN_OPEN_FILES = 64


class FileOwner(Protocol):
    """A storage object that holds at most one open descriptor or mapping (see the module
    docstring)."""

    recently_used: bool

    def release_file(self) -> bool:
        """Lets the descriptor (mapping) go; returns False, keeping it, when busy."""
        ...


def default_max_open_files() -> int:
    """Half the soft descriptor limit (``ulimit -n``), at least ``MIN_OPEN_FILES``."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(MIN_OPEN_FILES, int(soft * DEFAULT_LIMIT_SHARE))


class OpenFiles:
    """The open segment files of one broker, bounded (see the module docstring).

    Args:
        max_open_files: the most owners holding a descriptor at once; None for
            ``default_max_open_files()``. Owners in use may take the count past it briefly.

    Raises:
        ValueError: ``max_open_files`` is below 1.
    """

    def __init__(self, max_open_files: int | None = None) -> None:
        bound = default_max_open_files() if max_open_files is None else max_open_files
        if bound < 1:
            raise ValueError(f"max_open_files must be >= 1, not {bound}")
        self.max_open_files = bound
        self._lock = threading.Lock()
        # id(owner) -> owner, oldest first (dicts keep insertion order).
        self._open: dict[int, FileOwner] = {}
        self._released_for_bound = 0
        self._released_idle = 0

    @property
    def count(self) -> int:
        """Owners holding a descriptor (or mapping) now."""
        return len(self._open)

    def opened(self, owner: FileOwner) -> None:
        """``owner`` now holds a descriptor; releases others beyond the bound."""
        owner.recently_used = True
        with self._lock:
            key = id(owner)
            self._open.pop(key, None)
            self._open[key] = owner
            excess = len(self._open) - self.max_open_files
            if excess > 0:
                self._released_for_bound += self._release_locked(excess)

    def closed(self, owner: FileOwner) -> None:
        """``owner`` no longer holds a descriptor (it closed or released it)."""
        with self._lock:
            self._open.pop(id(owner), None)

    def release(self, owner: FileOwner) -> bool:
        """Releases ``owner``'s descriptor now (a log just loaded or created: nobody may use
        it for long); returns whether it did."""
        with self._lock:
            if self._open.get(id(owner)) is not owner or not owner.release_file():
                return False
            del self._open[id(owner)]
            return True

    def close_idle(self) -> int:
        """Releases every owner not used since the previous call; returns how many."""
        released = 0
        with self._lock:
            for key, owner in list(self._open.items()):
                if owner.recently_used:
                    owner.recently_used = False
                elif owner.release_file():
                    del self._open[key]
                    released += 1
            self._released_idle += released
        return released

    def _release_locked(self, wanted: int) -> int:
        """Releases up to ``wanted`` owners by the second-chance rule; returns how many.
        Visits each owner at most twice (the first visit may only clear its flag)."""
        released = 0
        visits = 2 * len(self._open)
        while released < wanted and visits > 0 and self._open:
            visits -= 1
            key = next(iter(self._open))
            owner = self._open.pop(key)
            if owner.recently_used:
                owner.recently_used = False
                self._open[key] = owner
            elif owner.release_file():
                released += 1
            else:
                self._open[key] = owner
        return released

    def statistics(self) -> dict[str, int]:
        return {
            "open_files": len(self._open),
            "max_open_files": self.max_open_files,
            "released_for_bound": self._released_for_bound,
            "released_idle": self._released_idle,
        }

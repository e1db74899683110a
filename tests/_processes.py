"""Finding the processes a test started, by a marker in their environment."""

from __future__ import annotations

import os
from pathlib import Path


def processes_with_environ(entry: str) -> list[int]:
    """PIDs of live (not zombie) processes other than this one whose environment holds
    ``entry`` (``NAME=value``): children started with a unique marker, and their children."""
    needle = entry.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ and state != "Z":
            found.append(int(name))
    return found

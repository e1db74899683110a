"""Disks and clocks to break: a small tmpfs per broker that a ballast file fills up, libfaketime
for a broker whose wall clock is off, and the probe for a slow disk.

``Tmpfs(path, size_bytes)`` mounts a tmpfs of that size at ``path`` (the broker's log directory
lives inside it from its first start, since a mounted-over directory would hide its logs);
``fill`` writes a ballast file until the file system has no space left, ``free`` deletes it.
``faketime_environment(skew_s)`` is what a process needs in its environment to see its wall
clock moved by ``skew_s`` seconds while ``CLOCK_MONOTONIC`` stays true
(``FAKETIME_DONT_FAKE_MONOTONIC=1``): session timeouts and other intervals are unaffected.

Contract: ``Tmpfs.unmount`` removes the mount (lazily when a process still holds a file there)
and is idempotent; the ``probe_*`` functions return ``None`` when the facility works here, else
the reason it does not. Needs root for mounts.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

#: Where Debian's ``faketime`` package puts the library.
LIBFAKETIME_PATHS = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
)
BALLAST_NAME = "fault-ballast"
_CHUNK_BYTES = 1 << 20


class DiskError(RuntimeError):
    """A tmpfs could not be mounted or unmounted."""


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    # Fixed programs (mount, umount) with arguments we built; no shell.
    return subprocess.run(  # noqa: S603
        command, capture_output=True, text=True, timeout=30, check=False
    )


class Tmpfs:
    """A tmpfs of ``size_bytes`` at ``path``; see the module docstring."""

    def __init__(self, path: Path, size_bytes: int) -> None:
        self.path = path
        self.size_bytes = size_bytes
        self.mounted = False

    @property
    def ballast(self) -> Path:
        return self.path / BALLAST_NAME

    def mount(self) -> Tmpfs:
        """Raises: DiskError: the mount failed (not root, no tmpfs)."""
        self.path.mkdir(parents=True, exist_ok=True)
        result = _run(
            [
                "mount",
                "-t",
                "tmpfs",
                "-o",
                f"size={self.size_bytes},mode=0755",
                "tmpfs",
                str(self.path),
            ]
        )
        if result.returncode != 0:
            raise DiskError(f"mount tmpfs at {self.path}: {result.stderr.strip()}")
        self.mounted = True
        return self

    def unmount(self) -> None:
        if not self.mounted:
            return
        result = _run(["umount", str(self.path)])
        if result.returncode != 0:
            result = _run(["umount", "-l", str(self.path)])
        if result.returncode != 0:
            raise DiskError(f"umount {self.path}: {result.stderr.strip()}")
        self.mounted = False

    def free_bytes(self) -> int:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize

    def fill(self) -> int:
        """Writes the ballast until the file system is full; returns the ballast's size."""
        fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        zeros = bytes(_CHUNK_BYTES)
        try:
            while True:
                try:
                    os.write(fd, zeros if self.free_bytes() >= _CHUNK_BYTES else zeros[:4096])
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
                    break
        finally:
            os.close(fd)
        return self.ballast.stat().st_size

    def free(self) -> None:
        """Deletes the ballast (no-op without one)."""
        self.ballast.unlink(missing_ok=True)


def probe_tmpfs(directory: Path) -> str | None:
    """``None`` when a tmpfs can be mounted under ``directory`` (tries a 1 MiB one)."""
    if os.geteuid() != 0:
        return "not root (mounting a tmpfs needs CAP_SYS_ADMIN)"
    probe = Tmpfs(directory / f".tmpfs-probe-{os.getpid()}", 1 << 20)
    try:
        probe.mount()
    except (DiskError, OSError) as error:
        return f"cannot mount a tmpfs ({error})"
    try:
        probe.unmount()
    finally:
        probe.path.rmdir()
    return None


def libfaketime_path() -> str | None:
    for path in LIBFAKETIME_PATHS:
        if os.path.exists(path):
            return path
    return None


def probe_faketime() -> str | None:
    if libfaketime_path() is None:
        return "libfaketime is missing (apt-get install faketime; scripts/system-packages.txt)"
    return None


def faketime_environment(skew_s: float) -> dict[str, str]:
    """The environment that moves a process's wall clock by ``skew_s`` seconds (monotonic
    time untouched).

    Raises:
        DiskError: libfaketime is not installed.
    """
    library = libfaketime_path()
    if library is None:
        raise DiskError("libfaketime is not installed")
    return {
        "LD_PRELOAD": library,
        "FAKETIME": f"{skew_s:+.0f}",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_DONT_RESET": "1",
    }


def probe_slow_disk() -> str | None:
    """``None`` when a deliberately slow block device can be made (device-mapper's ``delay``
    target), else why not."""
    if shutil.which("dmsetup") is None:
        return "dmsetup is missing (no device-mapper, so no dm-delay device)"
    result = _run(["dmsetup", "targets"])
    if result.returncode != 0:
        return (
            "no device-mapper driver in this kernel (dmsetup targets fails), so no dm-delay "
            "device; cgroup v1 blkio throttling would not slow buffered writes"
        )
    if "delay" not in result.stdout:
        return "the device-mapper delay target is not available"
    return "a dm-delay log directory is not built yet"

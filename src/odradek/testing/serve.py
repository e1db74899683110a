"""``odradek serve`` as a child process, for benchmarks and process-level tests.

The child listens on a free port (``listeners=PLAINTEXT://127.0.0.1:0``) and prints one line
when it serves; ``start_serve`` reads the port from that line. Stop it with SIGTERM (a clean
shutdown) through ``stop_serve``, or kill it by its PID to simulate a crash.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from typing import IO, Any

_SERVING = re.compile(r"serving on 127\.0\.0\.1:(\d+)")


def start_serve(
    data_dir: str,
    overrides: Mapping[str, str] | None = None,
    *,
    log_level: str = "warning",
    stderr: int | IO[str] = subprocess.DEVNULL,
) -> tuple[subprocess.Popen[str], str]:
    """Starts ``odradek serve`` on ``data_dir``; returns the process and ``host:port``.

    ``stderr`` receives the broker's log (an open file to keep it; discarded by default).

    Raises:
        RuntimeError: the broker exited or did not announce itself.
    """
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir, **(overrides or {})}
    command = [sys.executable, "-m", "odradek.cli.main", "serve", "--log-level", log_level]
    for name, value in settings.items():
        command += ["-o", f"{name}={value}"]
    # The command is our own interpreter running our own CLI, with settings the caller gave.
    process = subprocess.Popen(  # noqa: S603
        command, stdout=subprocess.PIPE, stderr=stderr, text=True
    )
    assert process.stdout is not None
    match = _SERVING.search(process.stdout.readline())
    if match is None:
        process.kill()
        process.wait()
        raise RuntimeError("odradek serve did not start")
    return process, f"127.0.0.1:{match[1]}"


def stop_serve(process: subprocess.Popen[str], timeout_s: float = 30.0) -> int:
    """Stops the child cleanly (SIGTERM), killing it if it does not exit in time; returns
    its exit status."""
    return stop_process(process, timeout_s)


def stop_process(process: subprocess.Popen[Any], timeout_s: float) -> int:
    """Stops a child this test helper started: SIGCONT (a paused child could not act on the
    next signal), SIGTERM, then SIGKILL if it has not exited within ``timeout_s``; returns its
    exit status. Does nothing to a child that has exited already."""
    if process.poll() is None:
        process.send_signal(signal.SIGCONT)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode

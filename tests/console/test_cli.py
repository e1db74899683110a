"""``odradek console`` on the command line: mistakes are one line, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek.cli.main", "console", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Missing option '--bootstrap-server'"),
        (("--bootstrap-server", "nohostport"), "--bootstrap-server"),
        (("--bootstrap-server", "127.0.0.1:9", "--port", "70000"), "--port"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = _console(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_broker_that_does_not_answer_is_one_line_and_exit_1() -> None:
    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    done = _console("--bootstrap-server", f"127.0.0.1:{port}", "--port", "0")
    assert done.returncode == 1
    assert done.stderr.startswith("odradek: NETWORK_EXCEPTION")
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""

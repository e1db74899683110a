"""A real broker (``odradek serve``) and a real console (``odradek console``) as child processes
on free loopback ports, one pair per test module, stopped by PID afterwards."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from odradek.testing.serve import start_serve, stop_process

_SERVING = re.compile(r"odradek console: serving (http://127\.0\.0\.1:\d+/) \(bootstrap (\S+)\)")


@dataclass(frozen=True)
class Stack:
    bootstrap: str
    url: str
    log_dir: Path

    def get(self, path: str) -> tuple[int, str]:
        """GETs a console path: the status and the body (error statuses too)."""
        return request(self.url.rstrip("/") + path)


def request(
    url: str, data: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(req, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("console")
    broker_log = (root / "broker.log").open("w")
    broker, bootstrap = start_serve(str(root / "data"), {"num.partitions": "1"}, stderr=broker_log)
    console_log = (root / "console.log").open("w")
    command = [sys.executable, "-m", "odradek.cli.main", "console"]
    command += ["--bootstrap-server", bootstrap, "--port", "0"]
    console = subprocess.Popen(  # our interpreter running our own CLI
        command,
        stdout=subprocess.PIPE,
        stderr=console_log,
        text=True,
    )
    try:
        assert console.stdout is not None
        line = console.stdout.readline()
        match = _SERVING.search(line)
        assert match is not None, f"console did not start: {line!r}"
        yield Stack(bootstrap, match[1], root)
    finally:
        stop_process(console, 15.0)
        stop_process(broker, 30.0)
        for pipe in (console.stdout, broker.stdout):
            if pipe is not None:
                pipe.close()
        console_log.close()
        broker_log.close()

"""``odradek serve`` as a real process for the CLI tests: started on a free loopback port and a
temporary log directory, stopped by PID (signal, then kill) whatever the test did."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import pytest
from tests._blocking_connection import BlockingConnection

from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.records.batch import iter_batches
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import SimpleRecord

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
SERVING = re.compile(r"odradek: broker (\d+) serving on 127\.0\.0\.1:(\d+) \(cluster (\S+)\)")
CLEAN_SHUTDOWN_FILE = ".odradek_cleanshutdown"


def odradek_command(*args: str) -> list[str]:
    """The ``odradek`` command line, run by this interpreter."""
    return [sys.executable, "-m", "odradek.cli.main", *args]


def run_odradek(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Runs ``odradek ARGS`` to completion and captures its output."""
    return subprocess.run(
        odradek_command(*args), capture_output=True, text=True, timeout=timeout, check=False
    )


class Served:
    """One ``odradek serve`` process.

    Args:
        data_dir: its ``log.dirs``.
        stderr_path: where its log goes (a file, so a chatty broker never blocks on a pipe).
        overrides: more ``-o NAME=VALUE`` settings.
        args: more arguments of ``odradek serve``.
        env: variables added to this process's environment for it.
    """

    def __init__(
        self,
        data_dir: Path,
        stderr_path: Path,
        *overrides: str,
        config_path: Path | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.stderr_path = stderr_path
        command = ["serve", "-o", "listeners=PLAINTEXT://127.0.0.1:0", "-o", f"log.dirs={data_dir}"]
        if config_path is not None:
            command += ["--config", str(config_path)]
        for override in overrides:
            command += ["-o", override]
        command += args
        self._stderr: IO[bytes] = stderr_path.open("ab")
        self.process = subprocess.Popen(
            odradek_command(*command),
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self.line = self._first_line()
        match = SERVING.fullmatch(self.line)
        assert match is not None, f"unexpected first line {self.line!r}; log:\n{self.log()}"
        self.port = int(match[2])
        self.cluster_id = match[3]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _first_line(self) -> str:
        stdout = self.process.stdout
        assert stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                if selector.select(timeout=0.1):
                    line = stdout.readline()
                    if line:
                        return line.rstrip("\n")
                if self.process.poll() is not None:
                    break
        self.kill()
        pytest.fail(f"odradek serve did not announce itself; log:\n{self.log()}")

    def log(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def signal(self, signum: signal.Signals) -> int:
        """Sends ``signum`` and returns the exit status."""
        self.process.send_signal(signum)
        try:
            return self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"odradek serve did not stop after {signum.name}; log:\n{self.log()}")

    def kill(self) -> None:
        """``kill -9``, then reap it."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(STOP_TIMEOUT_S)

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()

    @property
    def clean_shutdown_marker(self) -> Path:
        return self.data_dir / CLEAN_SHUTDOWN_FILE


class ServeFactory(Protocol):
    def __call__(
        self,
        data_dir: Path | None = None,
        *overrides: str,
        config_path: Path | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> Served: ...


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeFactory]:
    """Starts ``odradek serve`` processes; every one is stopped at the end of the test."""
    started: list[Served] = []

    def start(
        data_dir: Path | None = None,
        *overrides: str,
        config_path: Path | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> Served:
        served = Served(
            data_dir or tmp_path / "data",
            tmp_path / f"serve-{len(started)}.log",
            *overrides,
            config_path=config_path,
            args=args,
            env=env,
        )
        started.append(served)
        return served

    yield start
    for served in started:
        served.close()


# --- producing and reading back over the wire -------------------------------------------------


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> int:
    """Produces one batch (acks=all) and returns its base offset. Records are keyed (by
    position) so that compacted topics accept them."""
    records = build_batch(
        [
            SimpleRecord(1_700_000_000_000, b"key-%d" % index, value)
            for index, value in enumerate(values)
        ]
    )
    with BlockingConnection(bootstrap) as connection:
        response = connection.request(
            ApiKey.PRODUCE,
            7,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 5_000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": records}]}
                ],
            },
        )
    [result] = response["responses"][0]["partition_responses"]
    assert result["error_code"] == ErrorCode.NONE, result
    return int(result["base_offset"])


def fetch_request(topic: str, offset: int, partition: int = 0, **fields: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "max_wait": 0,
        "min_bytes": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
        "forgotten_topics_data": [],
    }
    request.update(fields)
    return request


def fetch_values(bootstrap: str, topic: str, partition: int = 0) -> list[bytes]:
    """Every record value of the partition, from offset 0 (offsets checked to run 0, 1, ...)."""
    with BlockingConnection(bootstrap) as connection:
        response = connection.request(ApiKey.FETCH, 11, fetch_request(topic, 0, partition))
    [data] = response["responses"][0]["partitions"]
    assert data["error_code"] == ErrorCode.NONE, data
    records = data["records"] or b""
    values: list[bytes] = []
    for position, _header in iter_batches(records):
        for record in decode_batch_records(records, position):
            assert record.offset == len(values)
            assert record.value is not None
            values.append(record.value)
    return values


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    with BlockingConnection(bootstrap) as connection:
        response = connection.request(
            ApiKey.METADATA,
            4,
            {"topics": [{"name": topic}], "allow_auto_topic_creation": True},
        )
    [entry] = response["topics"]
    assert entry["error_code"] == ErrorCode.NONE, entry
    assert len(entry["partitions"]) == partitions

"""The built wheel, installed as a user installs it, runs the broker, the CLI, the clients and
(with the ``spark`` extra) Spark batch reads.

The wheel is built once from this checkout (``pip wheel --no-deps``, the C extensions compiled
when a compiler is present); each variant — no extra, ``spark`` — gets one fresh virtual
environment for the module, its dependencies installed from the configured package index. Every
command runs the venv's own ``odradek`` or ``python`` from a directory outside the checkout,
so nothing of ``src/`` or the development ``.venv`` can stand in for what the wheel lacks.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek._version import __version__

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
_SERVING = re.compile(r"serving on (127\.0\.0\.1:\d+)")


def run(command: list[str], cwd: Path, *, timeout: float = 600, stdin: str | None = None) -> str:
    """Runs ``command``; its stdout, or a failure showing both outputs."""
    result = subprocess.run(
        command,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=_clean_env(),
    )
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{output}"
    return result.stdout


def _clean_env() -> dict[str, str]:
    """This environment without what would point a child at the checkout or the dev venv."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PYTHONNOUSERSITE"] = "1"
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "--wheel-dir",
            str(out),
            str(ROOT),
        ],
        cwd=out,
    )
    (built,) = out.glob("odradek-*.whl")
    return built


def make_venv(root: Path, wheel: Path, extra: str | None) -> Path:
    """A fresh virtual environment under ``root`` with the wheel (and ``extra``) installed;
    returns its ``bin`` directory."""
    base = getattr(sys, "_base_executable", sys.executable)
    run([base, "-m", "venv", str(root)], cwd=root.parent)
    target = f"{wheel}[{extra}]" if extra else str(wheel)
    run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", target], cwd=root.parent)
    return root / "bin"


@pytest.fixture(scope="module")
def core_bin(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    return make_venv(tmp_path_factory.mktemp("core") / "venv", wheel, None)


@pytest.fixture(scope="module")
def spark_bin(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    return make_venv(tmp_path_factory.mktemp("spark") / "venv", wheel, "spark")


class Served:
    """``odradek serve`` from an installed venv, on a free port of 127.0.0.1."""

    def __init__(self, bin_dir: Path, data_dir: Path) -> None:
        self.process = subprocess.Popen(
            [
                str(bin_dir / "odradek"),
                "serve",
                "--log-level",
                "WARNING",
                "-o",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "-o",
                f"log.dirs={data_dir}",
            ],
            cwd=data_dir.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_clean_env(),
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # blocks until it serves or exits
        match = _SERVING.search(line)
        if match is None:
            self.stop()
            pytest.fail(f"odradek serve did not start: {line!r} {self.process.stderr}")
        self.bootstrap = match[1]

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        return self.process.returncode


@pytest.fixture
def serve_with(tmp_path: Path) -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for served in started:
        served.stop()


def produce_and_consume(bin_dir: Path, tmp_path: Path, bootstrap: str, topic: str) -> None:
    odradek = str(bin_dir / "odradek")
    common = ["--bootstrap-server", bootstrap, "--topic", topic]
    run([odradek, "topics", "create", *common, "--partitions", "2"], cwd=tmp_path)
    lines = "".join(f"user-{n}:view {n}\n" for n in range(20))
    run(
        [odradek, "produce", *common, "--key-separator", ":", "--compression", "zstd"],
        cwd=tmp_path,
        stdin=lines,
    )
    out = run(
        [odradek, "consume", *common, "--from-beginning", "--print-key", "--max-messages", "20"],
        cwd=tmp_path,
        timeout=120,
    )
    got = sorted(line.split("\t") for line in out.splitlines())
    assert got == sorted([f"user-{n}", f"view {n}"] for n in range(20))


def test_core_install_runs_the_cli_and_imports_odradek(core_bin: Path, tmp_path: Path) -> None:
    out = run([str(core_bin / "odradek"), "--version"], cwd=tmp_path)
    assert __version__ in out
    script = "import odradek, odradek.client, odradek.broker; print(odradek.__version__)"
    assert run([str(core_bin / "python"), "-c", script], cwd=tmp_path).strip() == __version__


def test_core_install_has_no_spark(core_bin: Path, tmp_path: Path) -> None:
    """Extras add only what they name: no pyspark or pyarrow without ``spark``."""
    script = "import importlib.util as u; print(u.find_spec('pyspark'), u.find_spec('pyarrow'))"
    assert run([str(core_bin / "python"), "-c", script], cwd=tmp_path).split() == ["None", "None"]
    demo = subprocess.run(
        [str(core_bin / "odradek"), "demo", "--duration", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_clean_env(),
    )
    assert demo.returncode == 1
    assert "the demo needs the spark extra" in demo.stderr


def test_core_install_serves_produce_and_consume(
    core_bin: Path, tmp_path: Path, serve_with: list[Served]
) -> None:
    served = Served(core_bin, tmp_path / "logs")
    serve_with.append(served)
    produce_and_consume(core_bin, tmp_path, served.bootstrap, "installed")
    assert served.stop() == 0
    assert (tmp_path / "logs" / ".odradek_cleanshutdown").exists()


@pytest.mark.spark
def test_spark_install_serves_and_reads_a_batch(
    spark_bin: Path, tmp_path: Path, serve_with: list[Served]
) -> None:
    served = Served(spark_bin, tmp_path / "logs")
    serve_with.append(served)
    produce_and_consume(spark_bin, tmp_path, served.bootstrap, "views")
    # Found by Spark's data-source discovery (pyspark_odradek), no explicit registration.
    script = textwrap.dedent(
        f"""
        import os, sys
        from pyspark.sql import SparkSession
        os.environ["PYSPARK_PYTHON"] = sys.executable
        spark = (SparkSession.builder.master("local[1]")
                 .config("spark.driver.host", "127.0.0.1")
                 .config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.ui.enabled", "false").getOrCreate())
        try:
            rows = (spark.read.format("odradek")
                    .option("kafka.bootstrap.servers", "{served.bootstrap}")
                    .option("subscribe", "views")
                    .load()
                    .selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v")
                    .collect())
            for row in rows:
                print(row.k, row.v, sep="|")
        finally:
            spark.stop()
        """
    )
    out = run([str(spark_bin / "python"), "-c", script], cwd=tmp_path, timeout=300)
    assert sorted(out.splitlines()) == sorted(f"user-{n}|view {n}" for n in range(20))

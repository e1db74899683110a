"""The data source on a real Spark standalone cluster: a master and one worker started from the
pyspark package (``bin/spark-class``), a driver in its own process (not the shared local
session), a batch read of a topic in an embedded broker — what the README's "Running on a Spark
cluster" section describes.

The driver script does not register the data source: ``format("odradek")`` is found by Spark's
data-source discovery (the ``pyspark_odradek`` module), on the driver and on the executor,
because both run this interpreter (``PYSPARK_PYTHON``), where odradek is installed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest
from tests._processes import processes_with_environ

from odradek import AdminClient, Broker, NewTopic, Producer, SimpleConsumer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
START_TIMEOUT_S = 90.0
#: In the environment of every process of the cluster, to find leftovers.
MARKER = f"ODRADEK_STANDALONE_TEST={uuid.uuid4().hex}"

DRIVER = """\
import json, sys
from pyspark.sql import SparkSession

master, bootstrap, topic = sys.argv[1:4]
spark = (
    SparkSession.builder.master(master)
    .appName("odradek-standalone-test")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.executor.memory", "512m")
    .config("spark.cores.max", "1")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
rows = (
    spark.read.format("odradek")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("subscribe", topic)
    .option("startingOffsets", "earliest")
    .load()
    .selectExpr("partition", "offset", "CAST(key AS STRING) AS key",
                "CAST(value AS STRING) AS value")
    .collect()
)
executors = spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")
print(json.dumps({"rows": [list(r) for r in rows], "executors": executors}))
spark.stop()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Cluster:
    master_url: str
    work_dir: Path


def spark_env() -> dict[str, str]:
    return dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        # No REST submission server: it would take the fixed port 6066.
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        ODRADEK_STANDALONE_TEST=MARKER.split("=", 1)[1],
    )


def marked_processes() -> list[int]:
    return processes_with_environ(MARKER)


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_CLASS), *args],
            env=spark_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C on the test run is not theirs
        )


def wait_for_line(process: subprocess.Popen[bytes], log: Path, text: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while text not in log.read_text(errors="replace"):
        if process.poll() is not None:
            pytest.fail(f"{log.name}: exited {process.returncode}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"{log.name}: no {text!r} in time:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM by PID (spark-class execs the JVM, so this is the JVM), SIGKILL if it lingers."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("standalone")
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = base / "master.log", base / "worker.log"
    master = start(
        [
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port)),
            *("--webui-port", str(free_port())),
        ],
        master_log,
    )
    worker: subprocess.Popen[bytes] | None = None
    try:
        wait_for_line(master, master_log, "I have been elected leader")
        worker = start(
            [
                "org.apache.spark.deploy.worker.Worker",
                master_url,
                *("--host", "127.0.0.1", "--webui-port", str(free_port())),
                *("--cores", "1", "--memory", "1g", "--work-dir", str(base / "work")),
            ],
            worker_log,
        )
        wait_for_line(worker, worker_log, "Successfully registered with master")
        yield Cluster(master_url, base / "work")
    finally:
        if worker is not None:
            stop(worker)
        stop(master)
    deadline = time.monotonic() + 15
    while (left := marked_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], f"cluster processes left behind: {left}"


def test_batch_read_on_a_standalone_cluster(cluster: Cluster, tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic("clicks", 2, 1)]).all()
        with Producer({"bootstrap.servers": bootstrap}) as producer:
            for n in range(100):
                producer.send("clicks", f"value-{n}".encode(), f"key-{n}".encode(), partition=n % 2)
            producer.flush()
        run = subprocess.run(
            [sys.executable, str(script), cluster.master_url, bootstrap, "clicks"],
            env=spark_env(),
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert run.returncode == 0, run.stderr[-5000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    expected = sorted([n % 2, n // 2, f"key-{n}", f"value-{n}"] for n in range(100))
    assert sorted(result["rows"]) == expected
    assert result["executors"]  # the read ran in the cluster's executor, not in the driver
    # The worker launched the application's executor, which ran the read tasks' Python.
    apps = list(cluster.work_dir.glob("app-*/*/stderr"))
    assert apps, "no executor ran on the worker"


EXACTLY_ONCE_DRIVER = """\
import sys
from pyspark.sql import SparkSession

master, bootstrap, source, output, checkpoint = sys.argv[1:6]
spark = (
    SparkSession.builder.master(master)
    .appName("odradek-standalone-eos-test")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.executor.memory", "512m")
    .config("spark.cores.max", "1")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
query = (
    spark.readStream.format("odradek")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("subscribe", source)
    .option("startingOffsets", "earliest")
    .option("maxOffsetsPerTrigger", "50")
    .load()
    .select("key", "value")
    .writeStream.format("odradek")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("topic", output)
    .option("deliveryGuarantee", "exactlyOnce")
    .option("checkpointLocation", checkpoint)
    .trigger(availableNow=True)
    .start()
)
query.awaitTermination()
print(query.id)
spark.stop()
"""


def test_exactly_once_streaming_write_on_a_standalone_cluster(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The executor's write tasks get the query id and batch id (task-local properties) and
    commit one transaction each, with a progress group per task."""
    script = tmp_path / "eos_driver.py"
    script.write_text(EXACTLY_ONCE_DRIVER)
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic("views", 2, 1), NewTopic("copies", 1, 1)]).all()
        with Producer({"bootstrap.servers": bootstrap}) as producer:
            for n in range(100):
                producer.send("views", f"value-{n}".encode(), partition=n % 2)
            producer.flush()
        run = subprocess.run(
            [
                sys.executable,
                str(script),
                cluster.master_url,
                bootstrap,
                "views",
                "copies",
                str(tmp_path / "checkpoint"),
            ],
            env=spark_env(),
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert run.returncode == 0, run.stderr[-5000:]
        query_id = run.stdout.strip().splitlines()[-1]
        config = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
        with SimpleConsumer(config) as consumer:
            end = consumer.latest_offset("copies", 0)
            values: list[bytes] = []
            offset = 0
            while offset < end:
                messages = consumer.fetch("copies", 0, offset)
                if not messages:  # only control records (commit markers) in that read
                    offset += 1
                    continue
                values.extend(m.value for m in messages if m.value is not None)
                offset = messages[-1].offset + 1
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            groups = {g.group_id for g in admin.list_groups()}
    assert sorted(values) == sorted(f"value-{n}".encode() for n in range(100))
    # Two micro-batches of 50 rows, each written by the tasks of Spark partitions 0 and 1.
    assert {f"odradek-spark-{query_id}-0", f"odradek-spark-{query_id}-1"} <= groups

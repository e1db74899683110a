"""``odradek produce`` and ``odradek consume`` against an embedded broker: round trips with keys,
headers and every codec, murmur2 partitioning (checked against kafka-python both ways),
``--batch-size``, topic auto-creation by the producer, start positions, ``--max-messages``,
``--timeout-ms``, records larger than the fetch sizes, Ctrl-C, and every error as one line (exit
1 for the broker's and the input's, 2 for usage mistakes)."""

from __future__ import annotations

import base64
import io
import itertools
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from tests._blocking_connection import BlockingConnection

from odradek import AdminClient, Broker
from odradek import TopicPartition as OdradekTopicPartition
from odradek.cli.main import main
from odradek.protocol.api_keys import ApiKey
from odradek.records.batch import CompressionType, iter_batches

from .conftest import fetch_request, odradek_command

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

PARTITIONS = 3
TIMEOUT_S = 20.0
_topic_numbers = itertools.count()


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config={"num.partitions": str(PARTITIONS)}) as started:
        yield started


@dataclass(frozen=True)
class Run:
    status: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    def error_line(self) -> str:
        """The only stderr line (no traceback)."""
        assert "Traceback" not in self.err
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err
        return lines[0]


class Cli:
    """Runs ``odradek`` in this process with stdin given and stdout/stderr captured."""

    def __init__(
        self, broker: Broker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.bootstrap = broker.bootstrap_servers
        self._capsys = capsys
        self._monkeypatch = monkeypatch

    def __call__(self, *args: str, stdin: bytes = b"") -> Run:
        self._monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        self._capsys.readouterr()
        status = main(list(args))
        captured = self._capsys.readouterr()
        return Run(status, captured.out, captured.err)

    def produce(self, topic: str, *args: str, stdin: bytes) -> Run:
        return self(
            "produce", "--bootstrap-server", self.bootstrap, "--topic", topic, *args, stdin=stdin
        )

    def consume(self, topic: str, *args: str) -> Run:
        return self("consume", "--bootstrap-server", self.bootstrap, "--topic", topic, *args)

    def new_topic(self, *configs: str, partitions: int = PARTITIONS) -> str:
        topic = f"console-{next(_topic_numbers)}"
        args = ["topics", "create", "--bootstrap-server", self.bootstrap, "--topic", topic]
        args += ["--partitions", str(partitions)]
        for config in configs:
            args += ["--config", config]
        run = self(*args)
        assert run.status == 0, run.err
        return topic


@pytest.fixture
def cli(broker: Broker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(broker, capsys, monkeypatch)


def lines_of(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def murmur2_partition(key: bytes, partitions: int = PARTITIONS) -> int:
    """Kafka's default partition for ``key``, by kafka-python's murmur2 (not ours)."""
    return (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


def stored_codecs(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> set[CompressionType]:
    """The codec of every batch stored in the topic."""
    codecs = set()
    with BlockingConnection(bootstrap) as connection:
        for partition in range(partitions):
            response = connection.request(ApiKey.FETCH, 11, fetch_request(topic, 0, partition))
            records = response["responses"][0]["partitions"][0]["records"] or b""
            codecs.update(header.compression for _, header in iter_batches(records))
    return codecs


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_round_trip_keyed_and_unkeyed_with_headers(cli: Cli, compression: str) -> None:
    topic = cli.new_topic()
    keyed = [f"key-{i}\tvalue {i} ü" for i in range(12)]
    run = cli.produce(
        topic,
        "--key-separator",
        "\\t",
        "--header",
        "trace=abc",
        "--header",
        "empty=",
        "--compression",
        compression,
        "--verbose",
        stdin=lines_of(*keyed),
    )
    assert (run.status, run.out, run.err) == (0, "", f"produced 12 records to {topic}\n")
    run = cli.produce(topic, "--compression", compression, stdin=lines_of("plain 1", "", "plain 3"))
    assert (run.status, run.out, run.err) == (0, "", "")

    run = cli.consume(
        topic, "--from-beginning", "--max-messages", "15", "--print-key", "--print-headers"
    )
    assert run.status == 0
    assert run.err == "Processed a total of 15 messages\n"
    expected = {f"trace:abc,empty:\tkey-{i}\tvalue {i} ü" for i in range(12)}
    expected |= {"NO_HEADERS\tnull\tplain 1", "NO_HEADERS\tnull\t", "NO_HEADERS\tnull\tplain 3"}
    assert sorted(run.lines) == sorted(expected)
    assert stored_codecs(cli.bootstrap, topic) == {CompressionType[compression.upper()]}


def test_unkeyed_records_stick_to_one_partition_per_request(cli: Cli) -> None:
    topic = cli.new_topic()
    assert cli.produce(topic, stdin=lines_of("a", "b", "c", "d")).status == 0
    run = cli.consume(
        topic, "--from-beginning", "--max-messages", "4", "--print-partition", "--print-offset"
    )
    partitions = {line.split("\t")[0] for line in run.lines}
    assert len(partitions) == 1, run.lines
    assert [line.split("\t", 1)[1] for line in run.lines] == [
        "Offset:0\ta",
        "Offset:1\tb",
        "Offset:2\tc",
        "Offset:3\td",
    ]


def test_batch_size_bounds_the_records_of_a_request(cli: Cli) -> None:
    topic = cli.new_topic()
    run = cli.produce(topic, "--batch-size", "2", stdin=lines_of(*map(str, range(7))))
    assert run.status == 0
    counts = []
    with BlockingConnection(cli.bootstrap) as connection:
        for partition in range(PARTITIONS):
            response = connection.request(ApiKey.FETCH, 11, fetch_request(topic, 0, partition))
            records = response["responses"][0]["partitions"][0]["records"] or b""
            counts += [header.records_count for _, header in iter_batches(records)]
    assert sorted(counts) == [1, 2, 2, 2]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_each_acks_setting(cli: Cli, acks: str) -> None:
    topic = cli.new_topic()
    run = cli.produce(topic, "--acks", acks, "--batch-size", "2", stdin=lines_of("1", "2", "3"))
    assert (run.status, run.err) == (0, "")
    run = cli.consume(topic, "--from-beginning", "--max-messages", "3")
    assert sorted(run.lines) == ["1", "2", "3"]


def test_value_formats(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    binary = bytes(range(256))
    stdin = lines_of("k\t" + base64.b64encode(binary).decode(), "k\t")
    assert (
        cli.produce(topic, "--key-separator", "\t", "--value-format", "base64", stdin=stdin).status
        == 0
    )
    run = cli.consume(topic, "--from-beginning", "--max-messages", "2", "--value-format", "hex")
    assert run.lines == [binary.hex(), ""]
    run = cli.consume(topic, "--from-beginning", "--max-messages", "1", "--value-format", "base64")
    assert run.lines == [base64.b64encode(binary).decode()]

    json_topic = cli.new_topic(partitions=1)
    stdin = lines_of('{"a": [1, 2],  "b": "ü"}', "3", '"text"')
    assert cli.produce(json_topic, "--value-format", "json", stdin=stdin).status == 0
    assert cli.produce(json_topic, stdin=lines_of("not json")).status == 0
    run = cli.consume(
        json_topic, "--from-beginning", "--max-messages", "4", "--value-format", "json"
    )
    assert run.lines == ['{"a":[1,2],"b":"ü"}', "3", '"text"', '"not json"']
    run = cli.consume(json_topic, "--from-beginning", "--max-messages", "1")
    assert run.lines == ['{"a": [1, 2],  "b": "ü"}']  # sent as typed


def test_printed_fields_follow_kafkas_layout(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    assert cli.produce(topic, "--key-separator", ":", "--header", "h=1", stdin=b"k:v\n").status == 0
    run = cli.consume(
        topic,
        "--from-beginning",
        "--max-messages",
        "1",
        "--print-timestamp",
        "--print-partition",
        "--print-offset",
        "--print-headers",
        "--print-key",
        "--key-separator",
        " | ",
    )
    [line] = run.lines
    timestamp, rest = line.split(" | ", 1)
    name, _, milliseconds = timestamp.partition(":")
    assert (name, milliseconds.isdigit()) == ("CreateTime", True)
    assert rest == "Partition:0 | Offset:0 | h:1 | k | v"


# --- partitioning -----------------------------------------------------------------------------


def test_keyed_records_land_on_the_murmur2_partition(cli: Cli) -> None:
    topic = cli.new_topic()
    keys = [f"user-{i}" for i in range(30)] + ["", "ü", "21", "foobar"]
    stdin = lines_of(*(f"{key}={i}" for i, key in enumerate(keys)))
    assert cli.produce(topic, "--key-separator", "=", "--batch-size", "7", stdin=stdin).status == 0
    for partition in range(PARTITIONS):
        expected = sorted(k for k in keys if murmur2_partition(k.encode()) == partition)
        run = cli.consume(
            topic,
            "--partition",
            str(partition),
            "--from-beginning",
            "--print-key",
            "--timeout-ms",
            "300",
        )
        assert run.status == 0
        assert sorted(line.split("\t")[0] for line in run.lines) == expected
        assert run.err == f"Processed a total of {len(expected)} messages\n"


def test_explicit_partition_wins(cli: Cli) -> None:
    topic = cli.new_topic()
    stdin = lines_of("a\t1", "b\t2", "c\t3")
    assert cli.produce(topic, "--partition", "2", "--key-separator", "\\t", stdin=stdin).status == 0
    run = cli.consume(topic, "--partition", "2", "--from-beginning", "--max-messages", "3")
    assert run.lines == ["1", "2", "3"]


# --- where consuming starts and ends --------------------------------------------------------


def test_start_positions(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    assert cli.produce(topic, stdin=lines_of(*(f"v{i}" for i in range(5)))).status == 0

    latest = cli.consume(topic, "--timeout-ms", "200")
    assert (latest.status, latest.out, latest.err) == (0, "", "Processed a total of 0 messages\n")
    assert cli.consume(topic, "--offset", "latest", "--timeout-ms", "200").out == ""

    # Where records are expected, the idle timeout is a deadline (a loaded machine can take
    # longer than a fraction of a second to the first fetch) and the count ends the run.
    everything = ["v0", "v1", "v2", "v3", "v4"]
    patient = ("--timeout-ms", "60000")
    assert (
        cli.consume(topic, "--from-beginning", "--max-messages", "5", *patient).lines == everything
    )
    assert (
        cli.consume(topic, "--offset", "earliest", "--max-messages", "5", *patient).lines
        == everything
    )
    run = cli.consume(topic, "--partition", "0", "--offset", "3", "--max-messages", "2", *patient)
    assert run.lines == ["v3", "v4"]
    run = cli.consume(topic, "--partition", "0", "--offset", "5", "--timeout-ms", "200")
    assert (run.out, run.err) == ("", "Processed a total of 0 messages\n")


def test_offset_out_of_range_resets_to_earliest(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    assert cli.produce(topic, stdin=lines_of("x", "y")).status == 0
    run = cli.consume(topic, "--partition", "0", "--offset", "100", "--max-messages", "2")
    assert run.status == 0
    assert run.lines == ["x", "y"]
    assert run.err.splitlines() == [
        f"odradek: offset 100 is out of range for {topic}-0; resetting to the earliest offset 0",
        "Processed a total of 2 messages",
    ]


def test_an_offset_below_the_log_start_resets_to_earliest(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    assert cli.produce(topic, stdin=lines_of("a", "b", "c", "d")).status == 0
    with AdminClient({"bootstrap.servers": cli.bootstrap}) as admin:
        admin.delete_records({OdradekTopicPartition(topic, 0): 2}).all()
    run = cli.consume(topic, "--partition", "0", "--offset", "1", "--max-messages", "2")
    assert (run.status, run.lines) == (0, ["c", "d"])
    assert run.err.splitlines() == [
        f"odradek: offset 1 is out of range for {topic}-0; resetting to the earliest offset 2",
        "Processed a total of 2 messages",
    ]


def test_a_given_auto_offset_reset_is_the_consumers_own_rule(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    assert cli.produce(topic, stdin=lines_of("x", "y")).status == 0
    start = ["--partition", "0", "--offset", "100"]
    run = cli.consume(
        topic, *start, "--timeout-ms", "300", "--consumer-property", "auto.offset.reset=latest"
    )
    assert (run.status, run.out, run.err) == (0, "", "Processed a total of 0 messages\n")
    run = cli.consume(
        topic, *start, "--max-messages", "2", "--consumer-property", "auto.offset.reset=earliest"
    )
    assert (run.status, run.lines) == (0, ["x", "y"])
    assert run.err == "Processed a total of 2 messages\n"  # no note
    run = cli.consume(
        topic, *start, "--timeout-ms", "5000", "--consumer-property", "auto.offset.reset=none"
    )
    assert run.status == 1
    assert run.error_line().startswith(
        f"odradek: OFFSET_OUT_OF_RANGE: {topic}-0: fetch offset 100 is out of range"
    )


def test_max_messages_stops_early(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    assert cli.produce(topic, stdin=lines_of(*map(str, range(10)))).status == 0
    run = cli.consume(topic, "--from-beginning", "--max-messages", "4")
    assert (run.status, run.lines) == (0, ["0", "1", "2", "3"])
    assert run.err == "Processed a total of 4 messages\n"


def test_timeout_ends_an_idle_consumer(cli: Cli) -> None:
    topic = cli.new_topic()
    run = cli.consume(topic, "--from-beginning", "--timeout-ms", "100")
    assert (run.status, run.out, run.err) == (0, "", "Processed a total of 0 messages\n")
    run = cli.consume(topic, "--from-beginning", "--timeout-ms", "0")
    assert (run.status, run.out) == (0, "")


def test_records_larger_than_the_fetch_sizes_arrive(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    values = ["s" * 10, "L" * 100_000, "m" * 700, "n" * 700, "o" * 700, "t" * 10]
    # One batch per record; a 1000-byte fetch ends inside the next batch every time.
    assert cli.produce(topic, "--batch-size", "1", stdin=lines_of(*values)).status == 0
    run = cli.consume(
        topic,
        "--from-beginning",
        "--max-messages",
        str(len(values)),
        "--print-offset",
        "--consumer-property",
        "max.partition.fetch.bytes=1000",
        "--consumer-property",
        "fetch.max.bytes=1000",
    )
    assert run.lines == [f"Offset:{i}\t{value}" for i, value in enumerate(values)]


def test_a_compressed_batch_is_read_from_the_middle(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    stdin = lines_of(*(f"r{i}" for i in range(6)))
    assert cli.produce(topic, "--compression", "gzip", stdin=stdin).status == 0
    assert stored_codecs(cli.bootstrap, topic, 1) == {CompressionType.GZIP}
    run = cli.consume(topic, "--partition", "0", "--offset", "4", "--timeout-ms", "200")
    assert run.lines == ["r4", "r5"]


# --- errors: one line -------------------------------------------------------------------------


def test_unknown_topic_is_one_line_for_the_consumer(cli: Cli) -> None:
    run = cli.consume("no-such-topic", "--timeout-ms", "100")
    assert run.status == 1
    assert run.error_line() == (
        "odradek: UNKNOWN_TOPIC_OR_PARTITION: topic 'no-such-topic' does not exist"
    )


def test_the_producer_creates_an_unknown_topic_when_the_broker_does(cli: Cli) -> None:
    topic = f"auto-created-{next(_topic_numbers)}"
    run = cli.produce(topic, "--verbose", stdin=lines_of("first", "second"))
    assert (run.status, run.err) == (0, f"produced 2 records to {topic}\n")
    run = cli.consume(topic, "--from-beginning", "--max-messages", "2")
    assert sorted(run.lines) == ["first", "second"]


def test_an_unknown_topic_the_broker_does_not_create_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Broker(config={"auto.create.topics.enable": "false"}) as strict:
        cli = Cli(strict, capsys, monkeypatch)
        run = cli.produce("no-such-topic", "--max-block-ms", "300", stdin=b"x\n")
    assert run.status == 1
    assert run.error_line().startswith(
        "odradek: REQUEST_TIMED_OUT: topic 'no-such-topic' not present in metadata after 300 ms"
    )


def test_unknown_partition_is_one_line(cli: Cli) -> None:
    topic = cli.new_topic()
    for run in (
        cli.produce(topic, "--partition", "7", stdin=b"x\n"),
        cli.consume(topic, "--partition", "7", "--timeout-ms", "100"),
    ):
        assert run.status == 1
        assert run.error_line() == (
            f"odradek: UNKNOWN_TOPIC_OR_PARTITION: topic {topic!r} has no partition 7"
        )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_broker_is_one_line(cli: Cli) -> None:
    address = f"127.0.0.1:{closed_port()}"
    # The consumer waits default.api.timeout.ms (the console's default: 10 s) for an answer.
    run = cli(
        "consume",
        "--bootstrap-server",
        address,
        "--topic",
        "t",
        "--consumer-property",
        "default.api.timeout.ms=200",
    )
    assert run.status == 1
    assert run.error_line() == (
        f"odradek: REQUEST_TIMED_OUT: no broker at {address} answered within 200 ms"
    )
    # The producer connects in the background and waits --max-block-ms for metadata.
    run = cli(
        "produce",
        "--bootstrap-server",
        address,
        "--topic",
        "t",
        "--max-block-ms",
        "200",
        stdin=b"x\n",
    )
    assert run.status == 1
    assert run.error_line() == (
        "odradek: REQUEST_TIMED_OUT: topic 't' not present in metadata after 200 ms"
        f" (no broker answered at {address}, or the topic does not exist and the broker does"
        " not create topics)"
    )


def test_broker_errors_are_one_line_per_partition(cli: Cli) -> None:
    topic = cli.new_topic("max.message.bytes=500")
    stdin = lines_of("a\t" + "x" * 1000, "a\tsmall", "b\t" + "y" * 1000)
    run = cli.produce(
        topic, "--key-separator", "\\t", "--batch-size", "1", "--verbose", stdin=stdin
    )
    assert run.status == 1
    assert "Traceback" not in run.err
    a, b = murmur2_partition(b"a"), murmur2_partition(b"b")
    assert run.err.splitlines() == [
        f"odradek: {topic}-{a}: MESSAGE_TOO_LARGE (1 record not produced)",
        f"odradek: {topic}-{b}: MESSAGE_TOO_LARGE (1 record not produced)",
        f"produced 1 records to {topic}",
        f"odradek: 2 of 3 records were not produced to {topic}",
    ]


def test_a_record_refused_before_partitioning_is_one_line_without_a_partition(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    stdin = lines_of("small", "z" * 1_100_000)  # larger than max.request.size (1 MiB)
    run = cli.produce(topic, stdin=stdin)
    assert run.status == 1
    assert run.err.splitlines() == [
        f"odradek: {topic}: MESSAGE_TOO_LARGE (1 record not produced)",
        f"odradek: 1 of 2 records were not produced to {topic}",
    ]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--value-format", "json"], b'{"ok": 1}\n{bad\n', "line 2: the value is not JSON"),
        (["--value-format", "base64"], b"!!!\n", "line 1: the value is not base64"),
        (["--key-separator", ":"], b"k:v\nno separator\n", "line 2: no key separator ':'"),
    ],
)
def test_a_bad_line_is_one_line(cli: Cli, args: list[str], stdin: bytes, message: str) -> None:
    topic = cli.new_topic(partitions=1)
    run = cli.produce(topic, *args, stdin=stdin)
    assert run.status == 1
    assert run.error_line().startswith(f"odradek: {message}")
    consumed = cli.consume(topic, "--from-beginning", "--timeout-ms", "200")
    assert len(consumed.lines) == stdin.count(b"\n") - 1  # the lines before it were sent


@pytest.mark.parametrize(
    "args",
    [
        ["produce", "--topic", "t", "--acks", "2"],
        ["produce", "--topic", "t", "--compression", "brotli"],
        ["produce", "--topic", "t", "--header", "novalue"],
        ["produce", "--topic", "t", "--batch-size", "0"],
        ["produce", "--topic", "t", "--key-separator", ""],
        ["produce", "--topic", "t", "--partition", "-1"],
        ["produce", "--topic", "t", "--max-block-ms", "-1"],
        ["consume", "--topic", "t", "--from-beginning", "--offset", "3", "--partition", "0"],
        ["consume", "--topic", "t", "--offset", "3"],
        ["consume", "--topic", "t", "--offset", "soon"],
        ["consume", "--topic", "t", "--value-format", "xml"],
        ["consume", "--topic", "t", "--consumer-property", "group.id=x"],
        ["consume", "--topic", "t", "--consumer-property", "fetch.max.bytes=-1"],
        ["consume", "--topic", "t", "--consumer-property", "fetch.max.byte=1"],
        ["consume", "--topic", "t", "--consumer-property", "auto.offset.reset=soon"],
        ["consume", "--topic", "t", "--consumer-property", "bootstrap.servers=127.0.0.1:1"],
        ["consume", "--topic", "t", "--consumer-property", "value.deserializer=string"],
        ["consume", "--topic", "t", "--consumer-property", "novalue"],
        ["consume", "--topic", "t", "--max-messages", "0"],
        ["consume", "--bootstrap-server", "nohost", "--topic", "t"],
        ["consume", "--bootstrap-server", "127.0.0.1:9092"],
    ],
)
def test_usage_mistakes_exit_2(cli: Cli, args: list[str]) -> None:
    if "--bootstrap-server" not in args:
        args = [args[0], "--bootstrap-server", cli.bootstrap, *args[1:]]
    run = cli(*args)
    assert run.status == 2
    assert run.error_line().startswith("odradek: ")


# --- as a process: latest, and Ctrl-C --------------------------------------------------------


def test_latest_then_ctrl_c_exits_quietly_with_a_count(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    assert cli.produce(topic, stdin=lines_of("old-1", "old-2")).status == 0
    command = odradek_command("consume", "--bootstrap-server", cli.bootstrap, "--topic", topic)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + TIMEOUT_S
            sent = 0
            # The consumer starts at the end at some moment: produce until it prints one.
            while not selector.select(timeout=0.1):
                assert time.monotonic() < deadline, "the consumer printed nothing"
                assert process.poll() is None, process.communicate()
                assert cli.produce(topic, stdin=lines_of(f"new-{sent}")).status == 0
                sent += 1
            # os.read, not readline: a buffered read could take more than the first line, and
            # communicate() reads the pipe itself, so what was buffered would be lost.
            first = os.read(process.stdout.fileno(), 65536)
        assert first.startswith(b"new-")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 0
    printed = (first + out).decode().splitlines()
    assert all(line.startswith("new-") for line in printed)
    assert err.decode().splitlines() == [f"Processed a total of {len(printed)} messages"]


def test_a_line_is_sent_as_soon_as_no_further_input_waits(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    command = odradek_command(
        "produce", "--bootstrap-server", cli.bootstrap, "--topic", topic, "--verbose"
    )
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdin is not None
        process.stdin.write(b"typed\r\n")
        process.stdin.flush()
        # stdin stays open: the record must arrive without waiting for --batch-size lines.
        run = cli.consume(topic, "--from-beginning", "--max-messages", "1", "--timeout-ms", "20000")
        assert run.lines == ["typed"]
        process.stdin.write(b"last")  # no newline at the end of input
        _, err = process.communicate(timeout=TIMEOUT_S)  # closes stdin
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.communicate()
    assert (process.returncode, err) == (0, f"produced 2 records to {topic}\n".encode())
    run = cli.consume(topic, "--from-beginning", "--max-messages", "2")
    assert run.lines == ["typed", "last"]


def test_ctrl_c_ends_the_input_and_the_producer_exits_with_a_count(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    command = odradek_command(
        "produce", "--bootstrap-server", cli.bootstrap, "--topic", topic, "--verbose"
    )
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdin is not None
        process.stdin.write(b"one\ntwo\n")
        process.stdin.flush()
        run = cli.consume(topic, "--from-beginning", "--max-messages", "2", "--timeout-ms", "20000")
        assert run.lines == ["one", "two"]
        process.send_signal(signal.SIGINT)  # stdin stays open
        _, err = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.communicate()
    assert (process.returncode, err) == (0, f"produced 2 records to {topic}\n".encode())


# --- interop with kafka-python: the same partitions both ways --------------------------------


def test_kafka_python_reads_what_odradek_produces(cli: Cli) -> None:
    topic = cli.new_topic()
    keys = [f"order-{i}" for i in range(20)]
    stdin = lines_of(*(f'{key}|{{"n": {i}}}' for i, key in enumerate(keys)))
    run = cli.produce(
        topic, "--key-separator", "|", "--header", "source=cli", "--compression", "lz4", stdin=stdin
    )
    assert run.status == 0
    consumer = KafkaConsumer(
        bootstrap_servers=cli.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        seen: list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(seen) < len(keys) and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=200).values():
                seen.extend((m.partition, m.key, m.value, list(m.headers)) for m in messages)
    finally:
        consumer.close()
    assert sorted(seen) == sorted(
        (
            murmur2_partition(key.encode()),
            key.encode(),
            json.dumps({"n": i}).encode(),
            [("source", b"cli")],
        )
        for i, key in enumerate(keys)
    )


def test_odradek_reads_what_kafka_python_produces(cli: Cli) -> None:
    topic = cli.new_topic()
    keys = [f"account-{i}" for i in range(20)]
    producer = KafkaProducer(bootstrap_servers=cli.bootstrap, acks="all", compression_type="gzip")
    try:
        for i, key in enumerate(keys):
            producer.send(
                topic, key=key.encode(), value=f"balance {i}".encode(), headers=[("h", b"v")]
            )
        producer.flush(TIMEOUT_S)
    finally:
        producer.close(TIMEOUT_S)
    for partition in range(PARTITIONS):
        expected = sorted(
            f"h:v\t{key}\tbalance {i}"
            for i, key in enumerate(keys)
            if murmur2_partition(key.encode()) == partition
        )
        run = cli.consume(
            topic,
            "--partition",
            str(partition),
            "--from-beginning",
            "--print-headers",
            "--print-key",
            "--timeout-ms",
            "300",
        )
        assert sorted(run.lines) == expected

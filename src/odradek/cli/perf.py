"""``odradek perf produce|consume``: Kafka's kafka-producer-perf-test and
kafka-consumer-perf-test, with librdkafka (confluent-kafka, the ``perf`` extra) as the client so
the figures measure the broker, not a Python client.

    odradek perf produce --topic T --num-records N --record-size BYTES
                         [--throughput REC/S (-1: no cap)] [--producer-property K=V ...]
    odradek perf consume --topic T --messages N [--group G] [--timeout-ms MS]
                         [--consumer-property K=V ...]

Every ``--reporting-interval-ms`` (5 s) a progress line: records and MB per second over the
interval and latency percentiles; at the end, a summary over the whole run. Produce latency is
librdkafka's, from ``produce()`` to the delivery report, of one record in eight; consume
latency is the record's age when it is consumed (now minus its timestamp). ``--output json``
prints the summary as JSON.

Produce settings default to a throughput test's (``acks=1``, ``linger.ms=5``,
``batch.size=1 MiB``, a large local queue), as ``bench/broker_perf.py`` uses, and so does the
send loop: one ``produce`` call per record with a Python delivery callback, chunked so the
pacing and the error check run once per chunk; its clock runs from the first send to the end
of the final flush, as broker_perf's (start-up, the topic check and the reporter thread come
before it). ``bench/perf_cli.py`` compares the two in the same run; consume assigns
every partition from the earliest offset unless ``--group`` subscribes with it. A property
librdkafka refuses, a topic that does not exist, delivery errors and a consume that ends short
are one line and exit 1; a mistake on the command line one line and exit 2.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import click

from odradek.cli._options import bootstrap_server_options, command_settings

try:  # optional: the ``perf`` extra (``pip install 'odradek[perf]'``)
    import confluent_kafka
except ImportError:  # pragma: no cover - exercised only without the extra
    confluent_kafka = None  # type: ignore[assignment]

REPORT_INTERVAL_MS: Final = 5_000
PRODUCER_DEFAULTS: Final = {
    "acks": "1",
    "linger.ms": "5",
    "batch.size": str(1024 * 1024),
    "queue.buffering.max.messages": "1000000",
    "queue.buffering.max.kbytes": str(1024 * 1024),
    "compression.type": "none",
    "log_level": "2",  # librdkafka's own error lines would break the one-line errors
}
CONSUMER_DEFAULTS: Final = {
    "fetch.max.bytes": str(64 * 1024 * 1024),
    "max.partition.fetch.bytes": str(8 * 1024 * 1024),
    "queued.min.messages": "1000000",
    "enable.auto.commit": "false",
    "log_level": "2",
}
_PERCENTILES: Final = (50, 95, 99, 99.9)
#: Records sent between two checks for delivery errors (uncapped).
ERROR_CHECK_RECORDS: Final = 256
#: Produce keeps the latency of one record in this many (Kafka's tool samples them too).
LATENCY_SAMPLE: Final = 8


@click.group("perf")
def perf() -> None:
    """Measure produce and consume throughput and latency (Kafka's perf-test tools)."""


def _library() -> Any:
    if confluent_kafka is None:
        raise click.ClickException(
            "odradek perf needs confluent-kafka: pip install 'odradek[perf]'"
        )
    return confluent_kafka


def parse_properties(entries: Sequence[str], hint: str) -> dict[str, str]:
    """``K=V`` entries (later wins).

    Raises:
        click.BadParameter: an entry without ``=`` or with an empty key.
    """
    given: dict[str, str] = {}
    for entry in entries:
        name, found, value = entry.partition("=")
        if not found or not name.strip():
            raise click.BadParameter(f"expected K=V, got {entry!r}", param_hint=hint)
        given[name.strip()] = value.strip()
    return given


# --- figures ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """What happened over one interval (or the whole run)."""

    records: int
    bytes: int
    seconds: float
    latencies_ms: Sequence[float]

    def line(self, verb: str) -> str:
        """Kafka's perf-test line: count, rate, MB/s, then latency figures."""
        rate = self.records / self.seconds if self.seconds > 0 else 0.0
        mb = self.bytes / (1024 * 1024) / self.seconds if self.seconds > 0 else 0.0
        text = f"{self.records} records {verb}, {rate:.1f} records/sec ({mb:.2f} MB/sec)"
        latencies = sorted(self.latencies_ms)
        if latencies:
            average = sum(latencies) / len(latencies)
            text += f", {average:.2f} ms avg latency, {latencies[-1]:.2f} ms max latency"
            text += "".join(
                f", {_percentile(latencies, p):.0f} ms {_ordinal(p)}" for p in _PERCENTILES
            )
        return text + "."

    def document(self) -> dict[str, Any]:
        latencies = sorted(self.latencies_ms)
        return {
            "records": self.records,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 6),
            "records_per_second": self.records / self.seconds if self.seconds > 0 else 0.0,
            "mb_per_second": self.bytes / (1024 * 1024) / self.seconds if self.seconds else 0.0,
            "latency_ms": {
                "avg": sum(latencies) / len(latencies) if latencies else None,
                "max": latencies[-1] if latencies else None,
                **{
                    _ordinal(p): _percentile(latencies, p) if latencies else None
                    for p in _PERCENTILES
                },
            },
        }


def _percentile(ordered: Sequence[float], percent: float) -> float:
    index = min(len(ordered) - 1, int(len(ordered) * percent / 100))
    return ordered[index]


def _ordinal(percent: float) -> str:
    return f"{percent:g}th"


class Meter:
    """Latencies (seconds) and sizes of the records done, appended by the client's callbacks
    on the caller's thread and read by the reporter's: no lock — an ``array.append`` is atomic
    under the GIL and the reporter only reads up to the length it saw (the per-record cost is
    one append, what a throughput tool can afford)."""

    def __init__(
        self, record_size: int | None = None, count: Callable[[], int] | None = None
    ) -> None:
        #: Every record's size is this one (produce), else each is in ``sizes`` (consume).
        self._record_size = record_size
        #: How many records are done, when ``latencies`` holds only a sample of them.
        self._count = count
        self.latencies = array("d")
        self.sizes = array("q")
        self.started = time.perf_counter()
        self._window_start = self.started
        self._window_from = 0
        self._window_count = 0
        self._counted = 0

    def restart(self) -> None:
        """Starts the clock (and the first interval) now."""
        self.started = self._window_start = time.perf_counter()

    def _window(self, start: int, end: int, records: int, seconds: float) -> Window:
        if self._record_size is None:
            size = sum(self.sizes[start:end])
        else:
            size = records * self._record_size
        latencies = [value * 1000 for value in self.latencies[start:end]]
        return Window(records, size, seconds, latencies)

    def take_window(self) -> Window:
        """The interval since the previous call, and starts the next."""
        now, end, count = time.perf_counter(), len(self.latencies), self.records
        window = self._window(
            self._window_from, end, count - self._window_count, now - self._window_start
        )
        self._window_start, self._window_from, self._window_count = now, end, count
        return window

    def total(self, ended: float) -> Window:
        return self._window(0, len(self.latencies), self.records, ended - self.started)

    @property
    def records(self) -> int:
        if self._count is None:
            return len(self.latencies)
        # Read while a chunk is being queued, the count can lag by up to a chunk: never back.
        self._counted = max(self._counted, self._count())
        return self._counted


class Reporter:
    """Prints a progress line every ``interval_ms`` from a daemon thread until ``stop``."""

    def __init__(self, meter: Meter, verb: str, interval_ms: int, echo: Callable[[str], None]):
        self._meter, self._verb, self._echo = meter, verb, echo
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(interval_ms / 1000,), name="perf-report", daemon=True
        )

    def __enter__(self) -> Reporter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopped.set()
        self._thread.join()

    def _run(self, interval_s: float) -> None:
        while not self._stopped.wait(interval_s):
            self._echo(self._meter.take_window().line(self._verb))


def _interval_option(command: Any) -> Any:
    return click.option(
        "--reporting-interval-ms",
        "interval_ms",
        type=click.IntRange(min=100),
        default=REPORT_INTERVAL_MS,
        show_default=True,
        help="How often a progress line is printed.",
    )(command)


def _output_option(command: Any) -> Any:
    return click.option(
        "--output",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="The summary as a line, or as JSON (progress lines go to stderr then).",
    )(command)


def _printer(output: str) -> Callable[[str], None]:
    return (lambda line: click.echo(line, err=True)) if output == "json" else click.echo


# --- produce ----------------------------------------------------------------------------------


@perf.command("produce")
@bootstrap_server_options("--producer.config", client_type=None)
@click.option("--topic", required=True, help="The topic.")
@click.option("--num-records", type=click.IntRange(min=1), required=True, help="How many.")
@click.option("--record-size", type=click.IntRange(min=0), required=True, help="Value bytes.")
@click.option(
    "--throughput",
    type=click.IntRange(min=-1),
    default=-1,
    show_default=True,
    help="At most this many records/s (-1: no cap).",
)
@click.option("--partition", type=click.IntRange(min=0), help="Send to this partition only.")
@click.option(
    "--producer-property",
    "properties",
    multiple=True,
    metavar="K=V",
    help="A librdkafka producer setting (acks, linger.ms, compression.type, ...).",
)
@_interval_option
@_output_option
def produce(
    bootstrap_server: str,
    topic: str,
    num_records: int,
    record_size: int,
    throughput: int,
    partition: int | None,
    properties: tuple[str, ...],
    interval_ms: int,
    output: str,
) -> None:
    """Send records as fast as allowed and report throughput and latency."""
    if throughput == 0:
        raise click.BadParameter("must be positive, or -1 for no cap", param_hint="--throughput")
    settings = {
        **PRODUCER_DEFAULTS,
        **command_settings(),
        **parse_properties(properties, "'--producer-property'"),
    }
    settings["bootstrap.servers"] = bootstrap_server
    kafka = _library()
    try:
        producer = kafka.Producer(settings)
    except kafka.KafkaException as error:
        raise click.ClickException(f"producer settings: {error}") from None
    _check_topic(producer, topic, kafka)
    errors: list[str] = []
    produced = [0]  # records handed to librdkafka, by chunk
    meter = Meter(record_size, lambda: produced[0] - len(producer) - len(errors))
    value = os.urandom(record_size)
    append = meter.latencies.append

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(str(error))

    def sampled(error: Any, message: Any) -> None:
        if error is None:
            append(message.latency() or 0.0)
        else:
            errors.append(str(error))

    # One record in LATENCY_SAMPLE has its latency kept (a C-level cycle over the callbacks:
    # no Python work per record beyond broker_perf's); the others only report errors.
    callbacks = itertools.cycle((sampled, *[delivered] * (LATENCY_SAMPLE - 1)))

    target = -1 if partition is None else partition  # -1: librdkafka's partitioner
    send = producer.produce
    echo = _printer(output)
    with Reporter(meter, "sent", interval_ms, echo):
        # The clock runs from the first send to the end of the flush, as broker_perf's: the
        # start-up, the topic check and the reporter thread's start come before it.
        meter.restart()
        sent = 0
        while sent < num_records and not errors:
            # Chunks keep the per-record loop as bare as broker_perf's: the pacing and the
            # error check run once per chunk (one record per chunk when paced).
            chunk = 1 if throughput > 0 else min(ERROR_CHECK_RECORDS, num_records - sent)
            if throughput > 0:
                _pace(meter.started, sent, throughput, producer)
            for callback in itertools.islice(callbacks, chunk):
                try:
                    send(topic, value, partition=target, on_delivery=callback)
                except BufferError:
                    _send_when_queue_frees(producer, send, topic, value, target, callback)
            sent += chunk
            produced[0] = sent
        producer.flush(120)
    total = meter.total(time.perf_counter())
    _finish(total, "sent", output)
    if errors:
        raise click.ClickException(f"{len(errors)} records were not delivered: {errors[0]}")
    if total.records < num_records:
        raise click.ClickException(f"only {total.records} of {num_records} records delivered")


def _send_when_queue_frees(
    producer: Any, send: Any, topic: str, value: bytes, target: int, delivered: Any
) -> None:
    """librdkafka's queue is full: serve delivery reports until the record fits."""
    while True:
        producer.poll(0.001)
        try:
            send(topic, value, partition=target, on_delivery=delivered)
            return
        except BufferError:
            continue


def _pace(started: float, sent: int, throughput: int, producer: Any) -> None:
    """Waits (serving delivery reports) until ``sent`` records are due at ``throughput``/s."""
    due = started + sent / throughput
    while (wait := due - time.perf_counter()) > 0:
        producer.poll(min(wait, 0.01))


def _check_topic(client: Any, topic: str, kafka: Any) -> None:
    try:
        metadata = client.list_topics(topic, timeout=10)
    except kafka.KafkaException as error:
        raise click.ClickException(f"cannot reach the broker: {error}") from None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        reason = "does not exist" if found is None or found.error is None else str(found.error)
        raise click.ClickException(f"topic '{topic}': {reason}")


def _finish(total: Window, verb: str, output: str) -> None:
    if output == "json":
        click.echo(json.dumps(total.document(), indent=2))
    else:
        click.echo(total.line(verb))


# --- consume ----------------------------------------------------------------------------------


@perf.command("consume")
@bootstrap_server_options("--consumer.config", client_type=None)
@click.option("--topic", required=True, help="The topic.")
@click.option("--messages", type=click.IntRange(min=1), required=True, help="How many.")
@click.option("--group", help="Subscribe with this group (default: assign, no group).")
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Give up after this long without a record.",
)
@click.option(
    "--consumer-property",
    "properties",
    multiple=True,
    metavar="K=V",
    help="A librdkafka consumer setting (fetch.min.bytes, isolation.level, ...).",
)
@_interval_option
@_output_option
def consume(
    bootstrap_server: str,
    topic: str,
    messages: int,
    group: str | None,
    timeout_ms: int,
    properties: tuple[str, ...],
    interval_ms: int,
    output: str,
) -> None:
    """Read records as fast as possible and report throughput and record age."""
    settings = {
        **CONSUMER_DEFAULTS,
        **command_settings(),
        **parse_properties(properties, "'--consumer-property'"),
    }
    settings["bootstrap.servers"] = bootstrap_server
    settings["group.id"] = group or "odradek-perf-consumer"
    settings.setdefault("auto.offset.reset", "earliest")
    kafka = _library()
    try:
        consumer = kafka.Consumer(settings)
    except kafka.KafkaException as error:
        raise click.ClickException(f"consumer settings: {error}") from None
    try:
        _check_topic(consumer, topic, kafka)
        if group is None:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            consumer.assign(
                [kafka.TopicPartition(topic, p, kafka.OFFSET_BEGINNING) for p in partitions]
            )
        else:
            consumer.subscribe([topic])
        meter = Meter()
        echo = _printer(output)
        with Reporter(meter, "consumed", interval_ms, echo):
            _consume_loop(consumer, meter, messages, timeout_ms / 1000)
        total = meter.total(time.perf_counter())
    finally:
        consumer.close()
    _finish(total, "consumed", output)
    if total.records < messages:
        raise click.ClickException(
            f"consumed {total.records} of {messages} records: none for {timeout_ms} ms"
        )


def _consume_loop(consumer: Any, meter: Meter, messages: int, idle_s: float) -> None:
    last = time.perf_counter()
    first = True
    while meter.records < messages:
        batch = consumer.consume(min(10_000, messages - meter.records), 0.5)
        now = time.perf_counter()
        if not batch:
            if now - last > idle_s:
                return
            continue
        if first:  # the clock starts with the first record, as Kafka's tool
            meter.restart()
            first = False
        last = now
        wall_ms = time.time() * 1000
        latencies, sizes = meter.latencies, meter.sizes
        for message in batch:
            if message.error() is not None:
                continue
            _, timestamp = message.timestamp()
            value = message.value()
            sizes.append(0 if value is None else len(value))
            latencies.append(max(0.0, wall_ms - timestamp) / 1000 if timestamp > 0 else 0.0)

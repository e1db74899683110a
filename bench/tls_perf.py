"""Produce and consume throughput over SSL and SASL_SSL next to PLAINTEXT, in one run.

One ``odradek serve`` child process listens on three listeners of the same broker: PLAINTEXT,
SSL and SASL_SSL (SCRAM-SHA-256), with certificates made for the run (openssl). For each
listener confluent-kafka (librdkafka: its client cost is small next to the broker's) produces
``--records`` records of ``--size`` bytes to a fresh 1-partition topic (acks=1, linger 5 ms,
uncompressed), then a consumer assigned to partition 0 reads them all from the beginning. The
clock runs from the first send to the last delivery report, and from the first poll to the
last record. Fetch under TLS reads the segment slices with ``os.pread`` and writes them
through the encrypting transport; under PLAINTEXT large slices go out with ``os.sendfile``.
Figures are MB/s and the ratio to PLAINTEXT measured in the same run (the machine may be
shared: compare ratios, not absolute numbers). ``--repeat N`` keeps each best of N.

    .venv/bin/python bench/tls_perf.py [--records 100000] [--size 1000] [--repeat 1]

Measured on a 2-core machine shared with other work (load average 10-14), 100,000 x 1 KB,
best of 2, two runs: produce over SSL 0.74 / 0.34 of PLAINTEXT, over SASL_SSL 0.50 / 0.40;
consume over SSL 1.01 / 0.90, over SASL_SSL 1.05 / 0.91 (PLAINTEXT 80-134 MB/s produce,
76-100 MB/s consume). TLS costs the broker on the produce side (decrypting requests);
reading fetch slices with pread instead of sendfile costs little next to the consumer.
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from odradek.client import AdminClient
from odradek.client.admin_scram import ScramUpsertion
from odradek.testing.certificates import make_certificates
from odradek.testing.serve import start_serve, stop_serve

LISTENERS: Final = ("PLAINTEXT", "SSL", "SASL_SSL")
USER, PASSWORD = "bench", "bench-secret"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _produce(conf: dict[str, Any], topic: str, records: int, size: int) -> float:
    producer = Producer({**conf, "linger.ms": 5, "acks": 1, "batch.size": 1_000_000})
    value = b"x" * size
    delivered = 0

    def done(error: Any, _message: Any) -> None:
        nonlocal delivered
        if error is None:
            delivered += 1

    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value, on_delivery=done)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)
    elapsed = time.perf_counter() - start
    if delivered != records:
        raise RuntimeError(f"{delivered} of {records} records delivered")
    return records * size / elapsed / 1e6


def _consume(conf: dict[str, Any], topic: str, records: int, size: int) -> float:
    consumer = Consumer({**conf, "group.id": f"bench-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = 0
    start = time.perf_counter()
    deadline = time.monotonic() + 300
    while got < records and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 0.5):
            if message.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if got != records:
        raise RuntimeError(f"{got} of {records} records read")
    return records * size / elapsed / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tls-perf-") as directory:
        certs = make_certificates(Path(directory))
        ports = {name: _free_port() for name in LISTENERS}
        overrides = {
            "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
            "ssl.keystore.location": str(certs.broker_keystore),
            "ssl.key.password": certs.key_password,
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "num.partitions": "1",
        }
        process, plaintext = start_serve(str(Path(directory, "data")), overrides)
        try:
            with AdminClient({"bootstrap.servers": plaintext}) as admin:
                admin.alter_user_scram_credentials(
                    [ScramUpsertion(USER, "SCRAM-SHA-256", PASSWORD)]
                ).all()
            confs: dict[str, dict[str, Any]] = {
                "PLAINTEXT": {"bootstrap.servers": plaintext},
                "SSL": {
                    "bootstrap.servers": f"127.0.0.1:{ports['SSL']}",
                    "security.protocol": "SSL",
                    "ssl.ca.location": str(certs.ca),
                },
                "SASL_SSL": {
                    "bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}",
                    "security.protocol": "SASL_SSL",
                    "ssl.ca.location": str(certs.ca),
                    "sasl.mechanism": "SCRAM-SHA-256",
                    "sasl.username": USER,
                    "sasl.password": PASSWORD,
                },
            }
            results: dict[str, tuple[float, float]] = {}
            for name in LISTENERS:
                best = (0.0, 0.0)
                for _ in range(args.repeat):
                    topic = f"tls-perf-{name.lower()}-{uuid.uuid4().hex[:6]}"
                    produced = _produce(confs[name], topic, args.records, args.size)
                    consumed = _consume(confs[name], topic, args.records, args.size)
                    best = (max(best[0], produced), max(best[1], consumed))
                results[name] = best
        finally:
            stop_serve(process)
    base_produce, base_consume = results["PLAINTEXT"]
    print(f"{args.records:,} records of {args.size} B, best of {args.repeat}, confluent-kafka")
    print(f"{'listener':<10} {'produce MB/s':>13} {'ratio':>6} {'consume MB/s':>13} {'ratio':>6}")
    for name, (produced, consumed) in results.items():
        print(
            f"{name:<10} {produced:>13.1f} {produced / base_produce:>6.2f} "
            f"{consumed:>13.1f} {consumed / base_consume:>6.2f}"
        )


if __name__ == "__main__":
    main()

"""The client core's network figures against ``odradek serve`` in a child process.

- round trips: small Metadata requests (no topics) through one ``NetworkClient`` connection,
  with 1, 5 and 32 requests in flight (``max.in.flight.requests.per.connection``) — requests/s,
  which shows what pipelining buys;
- produce: Produce v7 requests of one 100-record batch (100 B values, built once), acks=1,
  5 in flight — requests/s, records/s and MB/s of the network layer alone (no accumulator);
- fetch: ``SimpleConsumer.fetch`` of those records from offset 0, 1 MB per fetch — records/s.

    .venv/bin/python bench/client_network.py [--requests 20000]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time

from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient, RequestFuture
from odradek.client.simple_consumer import SimpleConsumer
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.testing.serve import start_serve, stop_serve


def serve(data_dir: str) -> tuple[subprocess.Popen[str], str]:
    return start_serve(data_dir, None)


def windowed(client: NetworkClient, count: int, send: object) -> float:
    """Keeps the pipeline full until ``count`` requests are answered; returns seconds."""
    assert callable(send)
    started = time.perf_counter()
    pending: list[RequestFuture] = []
    sent = done = 0
    while done < count:
        while sent < count and client.ready(0):
            pending.append(send())
            sent += 1
        client.poll(100)
        still = []
        for future in pending:
            if future.done():
                future.result()
                done += 1
            else:
                still.append(future)
        pending = still
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    count = args.requests
    with tempfile.TemporaryDirectory() as data_dir:
        process, bootstrap = serve(data_dir)
        try:
            with AdminClient(bootstrap_servers=bootstrap) as admin:
                admin.create_topics([NewTopic("bench", 1, 1)]).all()
            for in_flight in (1, 5, 32):
                client = NetworkClient(
                    ClientConfig(
                        bootstrap_servers=bootstrap,
                        max_in_flight_requests_per_connection=in_flight,
                    )
                )
                client.update_nodes({0: ("127.0.0.1", int(bootstrap.rsplit(":", 1)[1]))})
                body = {"topics": [], "allow_auto_topic_creation": False}
                seconds = windowed(
                    client,
                    count,
                    lambda c=client, b=body: c.send(  # type: ignore[misc]
                        0, ApiKey.METADATA, b, versions=VersionRange(1, 12)
                    ),
                )
                print(
                    f"metadata round trips, {in_flight:>2} in flight: "
                    f"{count / seconds:>9,.0f} req/s"
                )
                client.close()

            records = 100
            batch = build_batch(
                [SimpleRecord(1_700_000_000_000, None, b"x" * 100) for _ in range(records)]
            )
            produce = {
                "transactional_id": None,
                "acks": 1,
                "timeout": 30_000,
                "topic_data": [
                    {"name": "bench", "partition_data": [{"index": 0, "records": batch}]}
                ],
            }
            client = NetworkClient(ClientConfig(bootstrap_servers=bootstrap))
            client.update_nodes({0: ("127.0.0.1", int(bootstrap.rsplit(":", 1)[1]))})
            produce_count = count // 4
            seconds = windowed(
                client,
                produce_count,
                lambda: client.send(0, ApiKey.PRODUCE, produce, versions=VersionRange(3, 7)),
            )
            total = produce_count * records
            print(
                f"produce (1 batch of {records} × 100 B per request, 5 in flight): "
                f"{produce_count / seconds:,.0f} req/s, {total / seconds:,.0f} records/s, "
                f"{produce_count * len(batch) / seconds / 1e6:,.1f} MB/s"
            )
            client.close()

            with SimpleConsumer(bootstrap) as consumer:
                started = time.perf_counter()
                offset = fetched = 0
                while offset < total:
                    messages = consumer.fetch("bench", 0, offset, max_bytes=1 << 20)
                    fetched += len(messages)
                    offset = messages[-1].next_offset
                seconds = time.perf_counter() - started
                print(f"simple consumer fetch (1 MB per fetch): {fetched / seconds:,.0f} records/s")
        finally:
            stop_serve(process)


if __name__ == "__main__":
    main()

"""Protocol codec speed: request decode, hot response encoders against kio, framing.

Prints µs per operation (best of several runs) for:

- decode: ``decode_request`` of small requests (ApiVersions v3, Metadata v4, Produce v7 with
  one 1 KB partition), and the share of it spent in the bounds walk that guards kio;
- Produce response v7: our ``struct`` encoder against kio's writer (1 and 100 partitions);
- Fetch response v11 for 10 partitions of 1 MB each: our framing (a list of buffers with
  records slots) against kio encoding the whole response, records included;
- framing: ``FrameDecoder`` collecting a 1 MB frame from 64 KB and from 1 KB reads;
- a ``ServerConnection`` round trip: receive a Heartbeat, send the response.

    .venv/bin/python bench/protocol_codec.py [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import struct
import time
from collections.abc import Callable
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.response import FetchableTopicResponse as KioFetchableTopicResponse
from kio.schema.fetch.v11.response import FetchResponse as KioFetchResponse
from kio.schema.fetch.v11.response import PartitionData as KioPartitionData
from kio.schema.heartbeat.v1.request import HeartbeatRequest
from kio.schema.heartbeat.v1.response import HeartbeatResponse
from kio.schema.metadata.v4.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v7.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.produce.v7.response import PartitionProduceResponse as KioPartitionProduceResponse
from kio.schema.produce.v7.response import ProduceResponse as KioProduceResponse
from kio.schema.produce.v7.response import TopicProduceResponse as KioTopicProduceResponse
from kio.schema.types import BrokerId
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

from odradek.protocol.bounds import check_request_body
from odradek.protocol.client_codec import encode_request_body
from odradek.protocol.codec import (
    FetchableTopicResponse,
    FetchPartitionData,
    PartitionProduceResponse,
    TopicProduceResponse,
    decode_request,
    encode_fetch_response,
    encode_produce_response,
    encode_response,
)
from odradek.protocol.connection import RequestReceived, ServerConnection
from odradek.protocol.framing import FrameDecoder
from odradek.protocol.header import parse_request_header

ZERO = i32Timedelta.parse(datetime.timedelta(0))
MB = 1 << 20


class Settings:
    quick = False


def measure(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Best µs per call over ``repeat`` runs of ``number`` calls (fewer with --quick)."""
    if Settings.quick:
        number, repeat = max(1, number // 20), 1
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e6


def request_frame(body: Any, correlation_id: int = 1) -> bytes:
    return encode_request_body(body, correlation_id, "rdkafka")


def produce_request(partitions: int, records_bytes: int) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(
            TopicProduceData(
                name="events",
                partition_data=tuple(
                    PartitionProduceData(index=i32(i), records=Records(b"r" * records_bytes))
                    for i in range(partitions)
                ),
            ),
        ),
    )


def row(name: str, *cells: str) -> None:
    print(f"  {name:<44}" + "".join(f"{cell:>16}" for cell in cells))


def bench_decode() -> None:
    print("decode_request (µs per request)")
    requests = {
        "ApiVersions v3 (librdkafka)": request_frame(
            ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16.0")
        ),
        "Metadata v4, one topic": request_frame(
            MetadataRequest(
                topics=(MetadataRequestTopic(name="events"),), allow_auto_topic_creation=True
            )
        ),
        "Produce v7, 1 partition x 1 KB": request_frame(produce_request(1, 1024)),
        "Produce v7, 100 partitions x 1 KB": request_frame(produce_request(100, 1024)),
    }
    row("", "decode", "bounds walk")
    for name, frame in requests.items():
        request = decode_request(frame)
        schema = type(request.body)
        offset = parse_request_header(frame, request.header.header_version)[1]
        number = 20_000 if len(frame) < 10_000 else 500
        total = measure(lambda frame=frame: decode_request(frame), number)
        walk = measure(
            lambda s=schema, f=frame, o=offset: check_request_body(s, f, o),
            number,
        )
        row(name, f"{total:.2f}", f"{walk:.2f}")


def bench_produce_response() -> None:
    print("Produce response v7 encode (µs per response)")
    row("", "ours", "kio", "kio / ours")
    for partitions in (1, 100):
        ours = [
            TopicProduceResponse(
                "events",
                [PartitionProduceResponse(i, 0, 1000 + i, -1, 0) for i in range(partitions)],
            )
        ]
        kio_response = KioProduceResponse(
            responses=(
                KioTopicProduceResponse(
                    name="events",
                    partition_responses=tuple(
                        KioPartitionProduceResponse(
                            index=i32(i),
                            error_code=ErrorCode.none,
                            base_offset=i64(1000 + i),
                            log_append_time=None,
                            log_start_offset=i64(0),
                        )
                        for i in range(partitions)
                    ),
                ),
            ),
            throttle_time=ZERO,
        )
        assert encode_produce_response(7, 5, ours) == encode_response(0, 5, kio_response)
        number = 50_000 if partitions == 1 else 1_000
        ours_us = measure(lambda ours=ours: encode_produce_response(7, 5, ours), number)
        kio_us = measure(lambda r=kio_response: encode_response(0, 5, r), number // 5)
        row(
            f"{partitions} partition(s)",
            f"{ours_us:.2f}",
            f"{kio_us:.2f}",
            f"{kio_us / ours_us:.0f}x",
        )


def bench_fetch_response() -> None:
    print("Fetch response v11, 10 partitions x 1 MB (µs per response)")
    blobs = [bytes([i]) * MB for i in range(10)]
    ours = [
        FetchableTopicResponse(
            "events",
            [
                FetchPartitionData(
                    i,
                    high_watermark=5000,
                    last_stable_offset=5000,
                    log_start_offset=0,
                    records=blobs[i],
                    records_size=MB,
                )
                for i in range(10)
            ],
        )
    ]
    kio_response = KioFetchResponse(
        throttle_time=ZERO,
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            KioFetchableTopicResponse(
                topic="events",
                partitions=tuple(
                    KioPartitionData(
                        partition_index=i32(i),
                        error_code=ErrorCode.none,
                        high_watermark=i64(5000),
                        last_stable_offset=i64(5000),
                        log_start_offset=i64(0),
                        aborted_transactions=None,
                        preferred_read_replica=BrokerId(-1),
                        records=Records(blobs[i]),
                    )
                    for i in range(10)
                ),
            ),
        ),
    )
    frame = encode_fetch_response(11, 5, ours)
    assert frame.to_bytes(lambda slot: slot.records) == encode_response(0, 5, kio_response)
    ours_us = measure(lambda: encode_fetch_response(11, 5, ours), 20_000)
    kio_us = measure(lambda: encode_response(0, 5, kio_response), 10, repeat=3)
    row("", "ours (framing)", "kio (whole)", "kio / ours")
    row("10 x 1 MB", f"{ours_us:.2f}", f"{kio_us:.0f}", f"{kio_us / ours_us:.0f}x")


def bench_framing() -> None:
    print("FrameDecoder, one 1 MB frame (µs per frame)")
    stream = struct.pack(">i", MB) + b"x" * MB
    for read_bytes in (65536, 1024):
        chunks = [stream[i : i + read_bytes] for i in range(0, len(stream), read_bytes)]

        def feed_all(chunks: list[bytes] = chunks) -> None:
            decoder = FrameDecoder()
            for chunk in chunks:
                decoder.feed(chunk)

        row(f"{read_bytes}-byte reads ({len(chunks)} reads)", f"{measure(feed_all, 20):.0f}")


def bench_connection() -> None:
    print("ServerConnection, Heartbeat v1 in, response out (µs per round trip)")
    payload = request_frame(HeartbeatRequest(group_id="g", generation_id=i32(1), member_id="m"))
    data = struct.pack(">i", len(payload)) + payload
    response = HeartbeatResponse(throttle_time=ZERO, error_code=ErrorCode.none)
    conn: ServerConnection[bytes] = ServerConnection()

    def round_trip() -> None:
        (event,) = conn.receive_data(data)
        assert isinstance(event, RequestReceived)
        conn.send_response(event, response)

    row("receive_data + send_response (kio encode)", f"{measure(round_trip, 20_000):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    Settings.quick = parser.parse_args().quick
    bench_decode()
    bench_produce_response()
    bench_fetch_response()
    bench_framing()
    bench_connection()


if __name__ == "__main__":
    main()

"""Bad input against a live broker over raw sockets (RELIABILITY.md: bad input never crashes a
broker and never corrupts stored data).

Each test sends one kind of bad input — oversized, truncated or garbage frames, unknown API
keys and versions, corrupt, oversized or old-format record batches, acks=0 failures — and
checks three things: the connection gets the answer Kafka gives (an error code, the KIP-511
ApiVersions fallback, or a closed connection); the broker keeps serving other connections
(ApiVersions and Metadata on a new one); and the log holds exactly the acknowledged records,
read back with Fetch and, after the broker stops, from the segment files.

Requests are built with ``odradek.protocol.client_codec`` or by hand with ``struct`` where the
bytes must be wrong; batches with ``odradek.records.codec.build_batch``.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.records.batch import HEADER_SIZE, iter_batches
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import SimpleRecord

TOPIC = "events"
MAX_FRAME_BYTES = 16_384  # socket.request.max.bytes
MAX_MESSAGE_BYTES = 2_048  # message.max.bytes
TIMEOUT_S = 5.0
CLIENT_ID = "bad-input-test"


# --- a raw connection -------------------------------------------------------------------------


class Raw:
    """A plain socket to the broker: send any bytes, read whole response frames."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.correlation_id = 0

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self, api_key: int, version: int, fields: dict[str, Any]) -> tuple[int, bytes]:
        self.correlation_id += 1
        return self.correlation_id, encode_request(
            api_key, version, self.correlation_id, CLIENT_ID, fields
        )

    def request(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        correlation_id, data = self.frame(api_key, version, fields)
        self.send(data)
        return self.response(api_key, version, correlation_id)

    def response(self, api_key: int, version: int, correlation_id: int) -> dict[str, Any]:
        answered, body = decode_response(api_key, version, self.read_frame())
        assert answered == correlation_id
        return body

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self.read_exactly(4))
        return self.read_exactly(size)

    def read_exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return data

    def assert_closed(self) -> None:
        """The broker closes the connection without sending anything more."""
        try:
            data = self.sock.recv(1)
        except ConnectionResetError:
            return
        except TimeoutError:
            pytest.fail("the broker kept the connection open")
        assert data == b"", f"the broker sent {data!r} instead of closing"

    def close(self) -> None:
        self.sock.close()


# --- requests ---------------------------------------------------------------------------------


def produce_fields(records: bytes | None, acks: int = 1, partition: int = 0) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout": 5_000,
        "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": partition, "records": records}]}
        ],
    }


def partition_result(response: dict[str, Any]) -> dict[str, Any]:
    [topic] = response["responses"]
    [partition] = topic["partition_responses"]
    return partition  # type: ignore[no-any-return]


def batch(*values: bytes) -> bytes:
    return build_batch([SimpleRecord(1_700_000_000_000 + i, None, v) for i, v in enumerate(values)])


def message_set_v1(value: bytes) -> bytes:
    """One magic-1 message (the pre-KIP-98 format): offset, size, CRC32, magic, attributes,
    timestamp, key (null), value."""
    body = struct.pack(">bbqi", 1, 0, 1_700_000_000_000, -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def header_bytes(api_key: int, version: int, correlation_id: int, flexible: bool = False) -> bytes:
    client = CLIENT_ID.encode()
    head = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client
    return head + (b"\x00" if flexible else b"")


def sized(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


# --- the broker and what it acknowledged ------------------------------------------------------


class Env:
    """A started broker with one single-partition topic, and the values it acknowledged."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.acked: list[bytes] = []
        self._open: list[Raw] = []

    def connect(self) -> Raw:
        conn = Raw(self.broker.port)
        self._open.append(conn)
        return conn

    def produce_ok(self, *values: bytes) -> None:
        """Produces on a fresh connection and records the acknowledged values."""
        conn = self.connect()
        result = partition_result(conn.request(ApiKey.PRODUCE, 7, produce_fields(batch(*values))))
        assert result["error_code"] == ErrorCode.NONE
        assert result["base_offset"] == len(self.acked)
        self.acked.extend(values)

    def assert_serving(self) -> None:
        """A new connection does ApiVersions and Metadata as usual."""
        conn = self.connect()
        versions = conn.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        assert versions["error_code"] == ErrorCode.NONE
        assert {entry["api_key"] for entry in versions["api_keys"]} >= {0, 1, 3, 18}
        metadata = conn.request(
            ApiKey.METADATA, 4, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
        )
        [topic] = metadata["topics"]
        assert topic["error_code"] == ErrorCode.NONE
        assert [p["leader_id"] for p in topic["partitions"]] == [0]

    def fetched(self) -> list[bytes]:
        conn = self.connect()
        response = conn.request(
            ApiKey.FETCH,
            11,
            {
                "max_wait": 0,
                "min_bytes": 0,
                "topics": [
                    {
                        "topic": TOPIC,
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
                "forgotten_topics_data": [],
            },
        )
        [topic] = response["responses"]
        [partition] = topic["partitions"]
        assert partition["error_code"] == ErrorCode.NONE
        assert partition["high_watermark"] == len(self.acked)
        return values_of(partition["records"] or b"")

    def verify(self) -> None:
        """The broker serves, and the log holds exactly the acknowledged records."""
        self.assert_serving()
        assert self.fetched() == self.acked

    def close_connections(self) -> None:
        for conn in self._open:
            conn.close()


def values_of(data: bytes) -> list[bytes]:
    """The values of the records in whole batches, checking offsets run 0, 1, 2, ..."""
    values: list[bytes] = []
    for position, _header in iter_batches(data):
        for record in decode_batch_records(data, position):
            assert record.offset == len(values)
            assert record.value is not None
            values.append(record.value)
    return values


def values_on_disk(data_dir: Path) -> list[bytes]:
    segments = sorted((data_dir / f"{TOPIC}-0").glob("*.log"))
    return values_of(b"".join(path.read_bytes() for path in segments))


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    broker = Broker(
        str(tmp_path),
        config={
            "socket.request.max.bytes": MAX_FRAME_BYTES,
            "message.max.bytes": MAX_MESSAGE_BYTES,
            "num.partitions": 1,
        },
    ).start()
    environment = Env(broker)
    try:
        creator = environment.connect()
        created = creator.request(
            ApiKey.METADATA, 4, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True}
        )
        assert created["topics"][0]["error_code"] == ErrorCode.NONE
        environment.produce_ok(b"before-1", b"before-2")
        yield environment
        environment.produce_ok(b"after")
        environment.verify()
    finally:
        environment.close_connections()
        broker.stop()
    # Stopped cleanly: the segment files hold exactly what was acknowledged.
    assert values_on_disk(tmp_path) == environment.acked


# --- frames -----------------------------------------------------------------------------------


def test_a_frame_over_socket_request_max_bytes_closes_before_its_body(env: Env) -> None:
    conn = env.connect()
    conn.send(struct.pack(">i", MAX_FRAME_BYTES + 1))  # the size alone is enough
    conn.assert_closed()
    env.verify()


def test_a_produce_frame_over_the_limit_appends_nothing(env: Env) -> None:
    conn = env.connect()
    _, frame = conn.frame(ApiKey.PRODUCE, 7, produce_fields(batch(b"x" * MAX_FRAME_BYTES)))
    assert len(frame) - 4 > MAX_FRAME_BYTES
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        conn.send(frame)  # the broker may close while we are still sending: also right
    conn.assert_closed()
    env.verify()


def test_a_frame_at_the_limit_is_served(env: Env) -> None:
    conn = env.connect()
    fields = {"topics": [{"name": ""}], "allow_auto_topic_creation": False}
    _, empty = conn.frame(ApiKey.METADATA, 4, fields)
    name = "n" * (MAX_FRAME_BYTES - (len(empty) - 4))  # a topic name that fills the frame
    correlation_id, frame = conn.frame(ApiKey.METADATA, 4, {**fields, "topics": [{"name": name}]})
    assert len(frame) - 4 == MAX_FRAME_BYTES
    conn.send(frame)
    [topic] = conn.response(ApiKey.METADATA, 4, correlation_id)["topics"]
    assert topic["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    env.verify()


def test_bytes_after_a_request_body_close_the_connection(env: Env) -> None:
    conn = env.connect()
    _, frame = conn.frame(ApiKey.API_VERSIONS, 0, {})
    conn.send(sized(frame[4:] + b"\x00" * 8))
    conn.assert_closed()
    env.verify()


@pytest.mark.parametrize(
    ("api_key", "version", "body"),
    [
        pytest.param(ApiKey.DESCRIBE_GROUPS, 0, struct.pack(">i", -1), id="null-groups"),
        pytest.param(ApiKey.DELETE_TOPICS, 1, struct.pack(">ii", -1, 1000), id="null-topics"),
        pytest.param(ApiKey.HEARTBEAT, 1, struct.pack(">hih", -1, 1, -1), id="null-group-id"),
        pytest.param(
            ApiKey.PRODUCE, 7, struct.pack(">hhii", -1, 1, 1000, -1), id="null-topic-data"
        ),
    ],
)
def test_a_null_where_the_schema_says_not_nullable_closes_the_connection(
    env: Env, api_key: int, version: int, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    conn = env.connect()
    with caplog.at_level("INFO", logger="odradek"):
        conn.send(sized(header_bytes(api_key, version, 3) + body))
        conn.assert_closed()
        env.verify()
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert any("not nullable" in r.getMessage() for r in caplog.records)


def test_a_truncated_produce_then_close_appends_nothing(env: Env) -> None:
    conn = env.connect()
    _, frame = conn.frame(ApiKey.PRODUCE, 7, produce_fields(batch(b"never")))
    conn.send(frame[:-10])
    conn.close()
    env.verify()


def test_a_truncated_size_prefix_then_close(env: Env) -> None:
    conn = env.connect()
    conn.send(b"\x00\x00")
    conn.close()
    env.verify()


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(b"\xff\xff\xff\xff" + b"\x00" * 16, id="negative-size"),
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", id="http"),
        pytest.param(sized(b"\xff" * 12), id="api-key--1"),
        pytest.param(sized(b"\x00\x03"), id="header-too-short"),
        pytest.param(sized(b""), id="empty-frame"),
        pytest.param(sized(bytes(range(256)) * 8), id="bytes"),
    ],
)
def test_garbage_closes_the_connection(env: Env, garbage: bytes) -> None:
    conn = env.connect()
    conn.send(garbage)
    conn.assert_closed()
    env.verify()


def test_a_body_with_a_lying_array_count_closes(env: Env) -> None:
    conn = env.connect()
    # Metadata v4: topics array count 2**31 - 1 in a 5-byte body.
    conn.send(sized(header_bytes(ApiKey.METADATA, 4, 1) + struct.pack(">ib", 2**31 - 1, 1)))
    conn.assert_closed()
    env.verify()


def test_a_produce_with_a_truncated_body_closes_and_appends_nothing(env: Env) -> None:
    conn = env.connect()
    _, frame = conn.frame(ApiKey.PRODUCE, 7, produce_fields(batch(b"never")))
    conn.send(sized(frame[4:-10]))  # a whole frame whose body ends early
    conn.assert_closed()
    env.verify()


# --- API keys and versions --------------------------------------------------------------------


@pytest.mark.parametrize("api_key", [93, 1000, 32767, -2])
def test_an_unknown_api_key_closes_the_connection(env: Env, api_key: int) -> None:
    conn = env.connect()
    conn.send(sized(header_bytes(api_key, 0, 7) + b"\x00" * 8))
    conn.assert_closed()
    env.verify()


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (ApiKey.METADATA, 99),
        (ApiKey.METADATA, IMPLEMENTED_VERSIONS[ApiKey.METADATA].max_version + 1),
        (ApiKey.FETCH, 3),
        (ApiKey.LEADER_AND_ISR, 0),  # a known key the broker does not serve
    ],
)
def test_an_unsupported_version_closes_the_connection(env: Env, api_key: int, version: int) -> None:
    conn = env.connect()
    conn.send(sized(header_bytes(api_key, version, 7) + b"\x00" * 16))
    conn.assert_closed()
    env.verify()


def test_api_versions_too_new_gets_the_v0_fallback_and_the_connection_stays(env: Env) -> None:
    conn = env.connect()
    conn.send(sized(header_bytes(ApiKey.API_VERSIONS, 99, 41, flexible=True) + b"\x02x\x02y\x00"))
    answered, body = decode_response(ApiKey.API_VERSIONS, 0, conn.read_frame())
    assert answered == 41
    assert body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    ranges = {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}
    assert ranges[ApiKey.API_VERSIONS] == (0, 4)
    assert ranges[ApiKey.PRODUCE] == (0, 13)
    assert ranges[ApiKey.METADATA] == (0, 13)
    # The client retries lower on the same connection.
    again = conn.request(
        ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
    )
    assert again["error_code"] == ErrorCode.NONE
    env.verify()


# --- record batches ---------------------------------------------------------------------------


def produce_error(env: Env, records: bytes | None) -> dict[str, Any]:
    conn = env.connect()
    result = partition_result(conn.request(ApiKey.PRODUCE, 7, produce_fields(records)))
    # The connection stays usable after an error response.
    assert conn.request(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
    return result


def test_a_bad_crc_is_corrupt_message(env: Env) -> None:
    data = bytearray(batch(b"flipped"))
    data[-1] ^= 0xFF  # in the records, which the CRC covers
    result = produce_error(env, bytes(data))
    assert result["error_code"] == ErrorCode.CORRUPT_MESSAGE
    assert result["base_offset"] == -1
    env.verify()


def test_a_batch_length_past_the_data_is_corrupt_message(env: Env) -> None:
    data = bytearray(batch(b"short"))
    struct.pack_into(">i", data, 8, len(data))  # claims 12 bytes more than there are
    assert produce_error(env, bytes(data))["error_code"] == ErrorCode.CORRUPT_MESSAGE
    env.verify()


def test_a_batch_over_message_max_bytes_is_message_too_large(env: Env) -> None:
    data = batch(b"y" * MAX_MESSAGE_BYTES)
    assert HEADER_SIZE < MAX_MESSAGE_BYTES < len(data) < MAX_FRAME_BYTES
    assert produce_error(env, data)["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
    env.verify()


def test_a_magic_1_message_set_is_invalid_record(env: Env) -> None:
    # Kafka's ProduceRequest.validateRecords: v3+ requests carry magic 2 batches only, else
    # InvalidRecordException, which is INVALID_RECORD.
    data = message_set_v1(b"old format")
    assert produce_error(env, data)["error_code"] == ErrorCode.INVALID_RECORD
    env.verify()


def test_two_batches_in_one_partition_are_invalid_record(env: Env) -> None:
    data = batch(b"one") + batch(b"two")
    assert produce_error(env, data)["error_code"] == ErrorCode.INVALID_RECORD
    env.verify()


@pytest.mark.parametrize("records", [None, b""], ids=["null", "empty"])
def test_no_batch_is_invalid_record(env: Env, records: bytes | None) -> None:
    assert produce_error(env, records)["error_code"] == ErrorCode.INVALID_RECORD
    env.verify()


def test_an_unknown_partition_is_unknown_topic_or_partition(env: Env) -> None:
    conn = env.connect()
    fields = produce_fields(batch(b"nowhere"), partition=7)
    result = partition_result(conn.request(ApiKey.PRODUCE, 7, fields))
    assert result["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    env.verify()


def test_acks_0_with_a_bad_batch_closes_the_connection(env: Env) -> None:
    data = bytearray(batch(b"silent"))
    data[-1] ^= 0xFF
    conn = env.connect()
    _, frame = conn.frame(ApiKey.PRODUCE, 7, produce_fields(bytes(data), acks=0))
    conn.send(frame)
    conn.assert_closed()
    env.verify()


def test_acks_0_with_a_good_batch_gets_no_response_but_is_appended(env: Env) -> None:
    conn = env.connect()
    _, frame = conn.frame(ApiKey.PRODUCE, 7, produce_fields(batch(b"quiet"), acks=0))
    conn.send(frame)
    # The next response on this connection answers the next request: none came for acks=0.
    assert conn.request(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
    env.acked.append(b"quiet")
    env.verify()


def test_pipelined_good_and_bad_batches_keep_order_and_only_good_ones_land(env: Env) -> None:
    conn = env.connect()
    corrupt = bytearray(batch(b"bad"))
    corrupt[-1] ^= 0xFF
    frames = [
        conn.frame(ApiKey.PRODUCE, 7, produce_fields(batch(b"p1"))),
        conn.frame(ApiKey.PRODUCE, 7, produce_fields(bytes(corrupt))),
        conn.frame(ApiKey.PRODUCE, 7, produce_fields(batch(b"p2"))),
    ]
    conn.send(b"".join(frame for _, frame in frames))
    codes = [
        partition_result(conn.response(ApiKey.PRODUCE, 7, cid))["error_code"] for cid, _ in frames
    ]
    assert codes == [ErrorCode.NONE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.NONE]
    env.acked.extend([b"p1", b"p2"])
    env.verify()


def test_a_reused_correlation_id_behind_a_long_poll_is_answered_in_order(env: Env) -> None:
    # A Fetch that waits (min_bytes 1 at the log end) and a Metadata under the same
    # correlation id: the Metadata handler finishes first, its answer must wait, and it must
    # not be taken for the Fetch's.
    conn = env.connect()
    fetch_fields = {
        "max_wait": 200,
        "min_bytes": 1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": 0, "fetch_offset": len(env.acked), "partition_max_bytes": 1024}
                ],
            }
        ],
        "forgotten_topics_data": [],
    }
    fetch = encode_request(ApiKey.FETCH, 11, 5, CLIENT_ID, fetch_fields)
    metadata = encode_request(
        ApiKey.METADATA, 4, 5, CLIENT_ID, {"topics": None, "allow_auto_topic_creation": False}
    )
    conn.send(fetch + metadata)
    fetched = conn.response(ApiKey.FETCH, 11, 5)
    assert fetched["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    described = conn.response(ApiKey.METADATA, 4, 5)
    assert TOPIC in {topic["name"] for topic in described["topics"]}
    env.verify()


def produce_v0_to_v2(version: int, correlation_id: int, records: bytes) -> bytes:
    """A Produce v0-v2 frame by hand (kio has no schema for them): acks 1, one partition."""
    body = struct.pack(">hi", 1, 5_000) + struct.pack(">i", 1)
    body += struct.pack(">h", len(TOPIC)) + TOPIC.encode() + struct.pack(">ii", 1, 0)
    body += struct.pack(">i", len(records)) + records
    return sized(header_bytes(ApiKey.PRODUCE, version, correlation_id) + body)


def message_set_v0(value: bytes) -> bytes:
    body = struct.pack(">bbi", 0, 0, -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


@pytest.mark.parametrize(
    ("version", "values", "message_set"),
    [
        pytest.param(0, [b"v0-a", b"v0-b"], message_set_v0, id="v0-magic-0"),
        pytest.param(1, [b"v1-a"], message_set_v0, id="v1-magic-0"),
        pytest.param(2, [b"v2-a", b"v2-b"], message_set_v1, id="v2-magic-1"),
    ],
)
def test_produce_v0_to_v2_message_sets_are_upconverted_and_answered(
    env: Env, version: int, values: list[bytes], message_set: Any
) -> None:
    records = b"".join(message_set(value) for value in values)
    conn = env.connect()
    conn.send(produce_v0_to_v2(version, 21, records))
    frame = conn.read_frame()
    # Response v0: topics [name, partitions [index, error_code, base_offset]]; v1 adds a
    # throttle time at the end, v2 a log append time per partition.
    correlation_id, topics, name_length = struct.unpack_from(">iih", frame)
    assert (correlation_id, topics) == (21, 1)
    position = 10 + name_length
    partitions, index, error_code, base_offset = struct.unpack_from(">iihq", frame, position)
    assert (partitions, index, error_code, base_offset) == (1, 0, ErrorCode.NONE, len(env.acked))
    expected_size = position + 18 + (8 if version >= 2 else 0) + (4 if version >= 1 else 0)
    assert len(frame) == expected_size
    env.acked.extend(values)  # verify() reads them back as v2 batches, offsets in order
    env.verify()


def test_a_corrupt_v0_message_set_is_corrupt_message_and_appends_nothing(env: Env) -> None:
    data = bytearray(message_set_v0(b"flipped"))
    data[-1] ^= 0xFF
    conn = env.connect()
    conn.send(produce_v0_to_v2(0, 22, bytes(data)))
    frame = conn.read_frame()
    name_length = struct.unpack_from(">h", frame, 8)[0]
    error_code = struct.unpack_from(">h", frame, 10 + name_length + 8)[0]
    assert error_code == ErrorCode.CORRUPT_MESSAGE
    env.verify()

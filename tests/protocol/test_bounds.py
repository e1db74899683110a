"""The bounds walk that runs before kio: valid bodies pass, lying lengths and counts do not."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.delete_records.v2.request import DeleteRecordsRequest
from kio.schema.fetch.v11.request import FetchRequest
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.produce.v7.request import ProduceRequest
from kio.serial import entity_writer

from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, is_implemented
from odradek.protocol.bounds import check_request_body
from odradek.protocol.inter_broker import load_request_schema

# replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch
FETCH_V11_HEAD = "ffffffff 000001f4 00000001 00100000 00 00000000 ffffffff"

SCHEMAS = [
    load_request_schema(key, version)
    for key, versions in IMPLEMENTED_VERSIONS.items()
    for version in versions
    if is_implemented(key, version)
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: f"{s.__name__}-v{s.__version__}")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_valid_bodies_pass_and_end_where_kio_ends(schema: type, data: st.DataObject) -> None:
    body = data.draw(st.from_type(schema))
    buffer = io.BytesIO()
    buffer.write(b"prefix")
    entity_writer(schema)(buffer, body)
    encoded = buffer.getvalue()
    assert check_request_body(schema, encoded, 6) == len(encoded)


@pytest.mark.parametrize(
    ("schema", "body_hex"),
    [
        (MetadataRequestV1, "7fffffff"),  # 2**31 - 1 topics, no bytes for them
        (MetadataRequestV1, "00000002 0001 61"),  # 2 topics, bytes for 1
        (MetadataRequestV1, "fffffffe"),  # negative count other than -1
        (ProduceRequest, "ffff ffff 00007530 00000001 0001 74 00000001 00000000 7fffffff"),
        (ProduceRequest, "ffff ffff 00007530 00000001 0001 74 00000001 00000000 fffffffe"),
        (ProduceRequest, "fffe"),  # transactional_id length -2
        (FetchRequest, FETCH_V11_HEAD + "00000001 0001 74 7fffffff"),  # fixed-size partitions
        (FetchRequest, FETCH_V11_HEAD + "00000001 0001 74 00000002" + "00" * 28),  # 2, 1 given
        (FetchRequest, FETCH_V11_HEAD + "00000001 0001 74 fffffffe"),
        (DeleteRecordsRequest, "ffffffff0f"),  # compact count 2**32 - 2
        (DeleteRecordsRequest, "e0e283e26dac77"),  # overlong varint
        (DeleteRecordsRequest, "02 05 6f7264"),  # compact string longer than the buffer
        (DeleteRecordsRequest, "01 00001388 05"),  # 5 tagged fields in 1 byte
        (DeleteRecordsRequest, "01 00001388 01 00 09 00"),  # tagged field past the end
    ],
)
def test_lying_lengths_are_rejected(schema: type, body_hex: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message varies with the field
        check_request_body(schema, bytes.fromhex(body_hex), 0)


def test_null_arrays_and_strings_pass() -> None:
    assert check_request_body(MetadataRequestV1, bytes.fromhex("ffffffff"), 0) == 4
    body = bytes.fromhex("ffff 0001 00000000 00000001 0001 74 00000001 00000000 ffffffff")
    assert check_request_body(ProduceRequest, body, 0) == len(body)


def test_fixed_size_partition_arrays_are_checked_without_walking_them() -> None:
    partitions = "00000000 ffffffff 0000000000000000 ffffffffffffffff 00100000" * 3
    body = bytes.fromhex(
        FETCH_V11_HEAD + "00000001 0001 74 00000003" + partitions + "00000000" + "0000"
    )
    assert check_request_body(FetchRequest, body, 0) == len(body)


def test_unknown_tagged_fields_are_walked_over() -> None:
    # kio rejects them later; the walk itself only checks that they fit.
    body = bytes.fromhex("01 00001388 01 07 02 aabb")
    assert check_request_body(DeleteRecordsRequest, body, 0) == len(body)


def test_a_tiny_request_cannot_make_kio_reserve_gigabytes() -> None:
    # Without the walk, kio's native reader asks for count * 8 bytes up front and the Rust
    # runtime aborts the process when that fails. Limit the address space so it would fail.
    script = textwrap.dedent(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from odradek.errors import RequestDecodeError
        from odradek.protocol.codec import decode_request
        frames = [
            bytes.fromhex("0003 0001 00000002 ffff 7fffffff"),
            bytes.fromhex("0015 0002 00000002 ffff 00 ffffffff0f"),
        ]
        for frame in frames:
            try:
                decode_request(frame)
            except RequestDecodeError:
                pass
            else:
                raise SystemExit("decoded")
        print("survived")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "survived"

"""The bounds walk that runs before kio: valid bodies pass, lying lengths and counts do not."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys
import textwrap
from types import NoneType, UnionType
from typing import Any, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.delete_records.v2.request import DeleteRecordsRequest
from kio.schema.describe_groups.v0.request import DescribeGroupsRequest
from kio.schema.fetch.v11.request import FetchRequest
from kio.schema.heartbeat.v1.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.produce.v7.request import ProduceRequest
from kio.serial import entity_reader, entity_writer

from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, is_implemented, schema_versions
from odradek.protocol.bounds import check_request_body
from odradek.protocol.inter_broker import load_request_schema

# replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch
FETCH_V11_HEAD = "ffffffff 000001f4 00000001 00100000 00 00000000 ffffffff"

SCHEMAS = [
    load_request_schema(key, version)
    for key, versions in IMPLEMENTED_VERSIONS.items()
    for version in versions
    if is_implemented(key, version) and version in (schema_versions(key) or ())
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


@pytest.mark.parametrize(
    ("schema", "body_hex", "field"),
    [
        (DescribeGroupsRequest, "ffffffff", "array groups"),  # v0: groups is not nullable
        (HeartbeatRequest, "ffff 00000001 0001 6d", "string group_id"),
        (HeartbeatRequest, "0001 67 00000001 ffff", "string member_id"),
        (DeleteRecordsRequest, "00 00001388 00", "array topics"),  # compact null
        (DeleteRecordsRequest, "02 00 00 00001388 00", "string name"),  # compact null name
        (
            JoinGroupRequest,
            "0001 67 00000000 00000000 0000 ffff 0008 636f6e73756d6572 ffffffff",
            "array protocols",
        ),
    ],
)
def test_nulls_where_the_schema_says_not_nullable_are_refused(
    schema: type, body_hex: str, field: str
) -> None:
    with pytest.raises(ValueError, match=f"null {field} where the schema says"):
        check_request_body(schema, bytes.fromhex(body_hex), 0)


def test_nulls_where_the_schema_allows_them_pass() -> None:
    # JoinGroup v5: group_instance_id is nullable (KIP-345); the protocols array is empty.
    body = bytes.fromhex("0001 67 00000000 00000000 0000 ffff 0008 636f6e73756d6572 00000000")
    assert check_request_body(JoinGroupRequest, body, 0) == len(body)


def _is_nullable(annotation: Any) -> bool:
    return get_origin(annotation) is UnionType and NoneType in get_args(annotation)


def nulls_in_non_nullable_fields(value: Any, path: str = "") -> list[str]:
    """Paths of every ``None`` in a decoded kio object where its schema's type has no None."""
    found: list[str] = []
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        where = f"{path}.{field.name}"
        if item is None:
            if not _is_nullable(field.type):
                found.append(where)
        elif isinstance(item, tuple):
            for index, element in enumerate(item):
                if dataclasses.is_dataclass(element):
                    found.extend(nulls_in_non_nullable_fields(element, f"{where}[{index}]"))
        elif dataclasses.is_dataclass(item):
            found.extend(nulls_in_non_nullable_fields(item, where))
    return found


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: f"{s.__name__}-v{s.__version__}")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_passes_the_walk_decodes_without_nulls_where_none_are_allowed(
    schema: type, data: st.DataObject
) -> None:
    # Mutate valid bodies where lengths and counts live: set runs of bytes to 0xff (-1 in
    # every legacy width) or 0x00 (null in every compact form), then decode what passes.
    buffer = io.BytesIO()
    entity_writer(schema)(buffer, data.draw(st.from_type(schema)))
    body = bytearray(buffer.getvalue())
    for _ in range(data.draw(st.integers(1, 3))):
        if not body:
            break
        start = data.draw(st.integers(0, len(body) - 1))
        width = data.draw(st.sampled_from([1, 2, 4]))
        body[start : start + width] = data.draw(st.sampled_from([b"\xff", b"\x00"])) * width
    encoded = bytes(body)
    try:
        end = check_request_body(schema, encoded, 0)
        decoded, _ = entity_reader(schema)(encoded, 0)
    except (ValueError, TypeError, LookupError, OverflowError):
        return  # refused (by the walk or by kio): nothing reaches a handler
    except Exception as error:  # kio's SerialError and friends
        if type(error).__module__.startswith("kio"):
            return
        raise
    assert end <= len(encoded)
    assert nulls_in_non_nullable_fields(decoded) == []

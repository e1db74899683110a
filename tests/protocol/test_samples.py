"""RequestSampler: unfaulted samples are valid requests; faulted ones never decode to a null
where the schema says non-nullable."""

from __future__ import annotations

import dataclasses
import random
from types import NoneType, UnionType
from typing import Any, get_args, get_origin

import pytest

from odradek.errors import RequestDecodeError
from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey
from odradek.protocol.codec import decode_request
from odradek.protocol.samples import RequestSampler, SampleNames

TEMPLATES = [
    (key, version) for key, versions in IMPLEMENTED_VERSIONS.items() for version in versions
]
IDS = [f"{key.name}-v{version}" for key, version in TEMPLATES]
NAMES = SampleNames(topics=("t-a", "t-b"), groups=("g",), records=(b"batch-bytes",))


def sampler(seed: int) -> RequestSampler:
    return RequestSampler(random.Random(seed), NAMES)


def nulls_in_non_nullable_fields(value: Any) -> list[str]:
    found = []
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        nullable = get_origin(field.type) is UnionType and NoneType in get_args(field.type)
        if item is None and not nullable:
            found.append(field.name)
        for element in item if isinstance(item, tuple) else (item,):
            if dataclasses.is_dataclass(element) and not isinstance(element, type):
                found.extend(nulls_in_non_nullable_fields(element))
    return found


@pytest.mark.parametrize(("api_key", "version"), TEMPLATES, ids=IDS)
def test_unfaulted_samples_decode(api_key: ApiKey, version: int) -> None:
    source = sampler(version)
    for correlation_id in range(20):
        frame = source.frame(api_key, version, correlation_id)
        if api_key == ApiKey.PRODUCE and version < 3:
            continue  # not decoded by kio: see test_produce_v0_to_v2_samples_are_v3_bodies
        request = decode_request(frame[4:])
        assert (request.api_key, request.api_version) == (api_key, version)
        assert request.correlation_id == correlation_id
        assert request.frame_size == len(frame) - 4
        assert nulls_in_non_nullable_fields(request.body) == []


def test_samples_use_the_given_names_and_are_deterministic() -> None:
    first = [sampler(7).frame(ApiKey.METADATA, 4, 1) for _ in range(3)]
    assert len(set(first)) == 1
    frames = b"".join(sampler(seed).frame(ApiKey.METADATA, 4, 1) for seed in range(50))
    assert b"t-a" in frames
    assert b"t-b" in frames
    produced = b"".join(sampler(seed).frame(ApiKey.PRODUCE, 7, 1) for seed in range(20))
    assert b"batch-bytes" in produced


def test_produce_v0_to_v2_samples_are_v3_bodies_without_the_transactional_id() -> None:
    legacy = sampler(3).body(ApiKey.PRODUCE, 2)
    modern = sampler(3).body(ApiKey.PRODUCE, 3)
    assert modern.endswith(legacy)
    assert len(modern) - len(legacy) >= 2


@pytest.mark.parametrize(("api_key", "version"), TEMPLATES, ids=IDS)
def test_faulted_samples_are_refused_or_decode_without_nulls_where_none_are_allowed(
    api_key: ApiKey, version: int
) -> None:
    if api_key == ApiKey.PRODUCE and version < 3:
        pytest.skip("not decoded by kio")
    source = sampler(1000 + version)
    for correlation_id in range(60):
        frame = source.frame(api_key, version, correlation_id, fault_rate=0.2)
        try:
            request = decode_request(frame[4:])
        except RequestDecodeError:
            continue
        assert nulls_in_non_nullable_fields(request.body) == []


def test_faults_make_most_samples_malformed() -> None:
    source = sampler(5)
    refused = 0
    decodable = [(key, version) for key, version in TEMPLATES if version >= 3 or key != 0]
    for key, version in decodable:
        for correlation_id in range(10):
            frame = source.frame(key, version, correlation_id, fault_rate=0.3)
            try:
                decode_request(frame[4:])
            except RequestDecodeError:
                refused += 1
    assert refused > len(decodable) * 10 // 3

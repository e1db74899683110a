"""controller.election: the decisions after a /controller change and the node formats, with
plain values."""

from __future__ import annotations

import json

import pytest

from odradek.controller.election import (
    ElectionAction,
    decode_controller,
    decode_epoch,
    encode_controller,
    encode_epoch,
    next_epoch,
    on_controller_change,
)
from odradek.errors import CorruptMetadataError


@pytest.mark.parametrize(
    ("controller_id", "active", "action"),
    [
        (None, False, ElectionAction.ELECT),  # nobody: run for it
        (None, True, ElectionAction.ELECT),  # our node vanished: run again
        (1, False, ElectionAction.NOTHING),  # we are it (start-up race already won)
        (1, True, ElectionAction.NOTHING),
        (2, False, ElectionAction.NOTHING),  # another broker is controller
        (2, True, ElectionAction.RESIGN),  # another broker took over: we are deposed
    ],
)
def test_on_controller_change(
    controller_id: int | None, active: bool, action: ElectionAction
) -> None:
    assert on_controller_change(controller_id, 1, active=active) is action


def test_each_election_adds_one() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42


def test_controller_node_is_kafkas_json() -> None:
    data = encode_controller(3, 1_700_000_000_123)
    assert json.loads(data) == {"version": 1, "brokerid": 3, "timestamp": "1700000000123"}
    assert decode_controller(data) == 3
    assert decode_controller(b"7") == 7  # Kafka < 0.9 wrote the bare id


@pytest.mark.parametrize(
    "data", [b"", b"{}", b'{"brokerid":"1"}', b"true", b"[1]", b"not json", b'{"brokerid":true}']
)
def test_malformed_controller_node(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError):
        decode_controller(data)


def test_epoch_node_is_decimal_text() -> None:
    assert encode_epoch(12) == b"12"
    assert decode_epoch(b"12") == 12
    assert decode_epoch(b"12\n") == 12


@pytest.mark.parametrize("data", [b"", b"-1", b"x", b"1.5", b"\xff"])
def test_malformed_epoch_node(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError):
        decode_epoch(data)

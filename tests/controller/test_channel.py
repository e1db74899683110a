"""The controller's channel against real brokers: a kept connection the broker closed (it
stopped, or rejoined on the same address after its session expired) is replaced before the
next request goes out, instead of the request being lost to end-of-file."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from odradek import Broker
from odradek.controller import channel as channel_module
from odradek.controller.channel import BrokerRequest, ControllerChannel
from odradek.protocol import ApiKey


def _api_versions(port: int) -> BrokerRequest:
    return BrokerRequest("127.0.0.1", port, ApiKey.API_VERSIONS, 0, {})


def test_a_broker_back_on_the_same_address_gets_the_next_request(tmp_path: Path) -> None:
    channel = ControllerChannel(7, timeout_s=10.0)
    try:
        with Broker(str(tmp_path / "first")) as first:
            port = first.port
            answer = channel.send({1: _api_versions(port)})[1]
            assert answer is not None
            assert answer["error_code"] == 0
        # The kept connection is now closed by the broker that stopped.
        with Broker(str(tmp_path / "second"), port=port) as second:
            assert second.port == port
            answer = channel.send({1: _api_versions(port)})[1]
            assert answer is not None
            assert answer["error_code"] == 0
    finally:
        channel.close()


def test_no_broker_at_the_address_is_no_answer(tmp_path: Path) -> None:
    channel = ControllerChannel(7, timeout_s=2.0)
    try:
        with Broker(str(tmp_path / "gone")) as broker:
            port = broker.port
            assert channel.send({1: _api_versions(port)})[1] is not None
        assert channel.send({1: _api_versions(port)}) == {1: None}
    finally:
        channel.close()


def test_checking_an_idle_kept_connection_does_not_wait_for_it() -> None:
    ours, theirs = socket.socketpair()
    ours.settimeout(600.0)  # as the channel's sockets have one: a blocking peek would wait
    try:
        outcome: list[bool] = []
        checker = threading.Thread(
            target=lambda: outcome.append(channel_module._open(ours)), daemon=True
        )
        checker.start()
        checker.join(60.0)
        assert outcome == [True]
        theirs.close()
        assert channel_module._open(ours) is False
    finally:
        ours.close()
        theirs.close()

"""Controller election, pure: the ``/controller`` and ``/controller_epoch`` formats and the
decisions a broker takes when ``/controller`` changes. No store, no clock, no threads — the
shell (``controller.controller``) does the I/O.

Kafka's ZooKeeper-era protocol (2.2+, ``registerControllerAndIncrementControllerEpoch``):

- ``/controller`` (ephemeral) holds ``{"version":1,"brokerid":<id>,"timestamp":"<ms>"}``; the
  broker whose session created it is the controller while that session lives.
- ``/controller_epoch`` (persistent) holds the epoch as decimal text (``"3"``). A broker becomes
  controller with one ``multi``: create ``/controller`` and set ``/controller_epoch`` to
  epoch + 1, conditional on the epoch node's version it read. The epoch node's new version is
  the controller's fencing token: every controller write is a ``multi`` that starts with a
  check of that version, so a deposed controller's writes fail as soon as another broker won
  an election, whatever the deposed one believes.
- Each election adds exactly one to the epoch (the first controller has epoch 1).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass

from odradek.errors import CorruptMetadataError

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
#: The epoch before any election (Kafka's ``KafkaController.InitialControllerEpoch``).
INITIAL_CONTROLLER_EPOCH = 0
_CONTROLLER_VERSION = 1


@dataclass(frozen=True, slots=True)
class ControllerEpoch:
    """What winning an election gives: the epoch and the ``/controller_epoch`` version that
    fences this controller's writes."""

    epoch: int
    zk_version: int


class ElectionAction(enum.Enum):
    """What a broker does after ``/controller`` changed (``on_controller_change``)."""

    #: Nobody is controller: try to become it.
    ELECT = "elect"
    #: Somebody else is controller while this broker thinks it is: stop acting as one.
    RESIGN = "resign"
    #: This broker is controller, or another one is and this one knows it: nothing to do.
    NOTHING = "nothing"


def on_controller_change(
    controller_id: int | None, broker_id: int, *, active: bool
) -> ElectionAction:
    """The decision after a change of ``/controller`` (or at start-up).

    Args:
        controller_id: the broker id in ``/controller``, ``None`` when the node is missing.
        broker_id: this broker's id.
        active: whether this broker currently acts as controller.
    """
    if controller_id is None:
        # Kafka resigns before electing; an active broker whose node vanished (its session
        # ended, or an admin deleted it) runs the election again like everyone else.
        return ElectionAction.ELECT
    if active and controller_id != broker_id:
        return ElectionAction.RESIGN
    return ElectionAction.NOTHING


def next_epoch(current: int) -> int:
    """The epoch a new controller takes."""
    return current + 1


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    """``/controller``'s data."""
    document = {
        "version": _CONTROLLER_VERSION,
        "brokerid": broker_id,
        "timestamp": str(timestamp_ms),
    }
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def decode_controller(data: bytes) -> int:
    """The controller's broker id from ``/controller``'s data.

    Kafka < 0.9 wrote a bare integer; that is accepted too.

    Raises:
        CorruptMetadataError: neither form.
    """
    try:
        document = json.loads(data)
        if isinstance(document, int) and not isinstance(document, bool):
            return document
        broker_id = document["brokerid"]
        if isinstance(broker_id, int) and not isinstance(broker_id, bool):
            return broker_id
    except (ValueError, TypeError, KeyError):
        pass
    raise CorruptMetadataError(f"malformed {CONTROLLER_PATH} data: {data[:100]!r}")


def encode_epoch(epoch: int) -> bytes:
    """``/controller_epoch``'s data."""
    return str(epoch).encode("ascii")


def decode_epoch(data: bytes) -> int:
    """The epoch in ``/controller_epoch``'s data.

    Raises:
        CorruptMetadataError: not a non-negative decimal integer.
    """
    text = data.decode("ascii", "replace").strip()
    if not text.isdigit():
        raise CorruptMetadataError(f"malformed {CONTROLLER_EPOCH_PATH} data: {data[:100]!r}")
    return int(text)

"""Controller over ZooKeeper sessions: when the controller's session ends, another broker's
controller takes over with a new epoch, and the old epoch's writes are refused."""

from __future__ import annotations

import pytest
from tests.controller.test_store_contract import wait_for

from odradek.controller.controller import Controller
from odradek.controller.election import CONTROLLER_EPOCH_PATH, ControllerEpoch
from odradek.controller.store import CreateOp, SetOp
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.errors import NotControllerError, SessionClosedError

pytestmark = pytest.mark.cluster


def test_session_end_hands_the_controller_over(zookeeper_chroot: str) -> None:
    first_store = ZooKeeperMetadataStore(zookeeper_chroot)
    second_store = ZooKeeperMetadataStore(zookeeper_chroot)
    first = Controller(first_store, 1)
    second = Controller(second_store, 2)
    try:
        first.start()
        wait_for(lambda: first.active)
        second.start()
        wait_for(lambda: second.controller_id() == 1)
        first.write([CreateOp("/state", b"by 1")])
        stale = first.epoch
        first_store.close()  # the controller broker's session ends
        wait_for(lambda: second.active)
        assert second.epoch == ControllerEpoch(2, 2)
        assert second_store.get(CONTROLLER_EPOCH_PATH)[0] == b"2"
        with pytest.raises(SessionClosedError):
            first.write([SetOp("/state", b"stale")])
        # The same stale token on a live session is fenced too.
        assert stale is not None
        zombie = Controller(second_store, 1)
        zombie._epoch = stale  # a controller that missed its deposition
        with pytest.raises(NotControllerError):
            zombie.write([SetOp("/state", b"stale")])
        assert second_store.get("/state") == (b"by 1", 0)
    finally:
        first.stop()
        second.stop()
        first_store.close()
        second_store.close()

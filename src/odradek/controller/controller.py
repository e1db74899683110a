"""``Controller``: the shell that runs the election of ``controller.election`` on a
``MetadataStore`` and fences this broker's controller writes by the controller epoch.

One event queue, one thread: start-up, every change of ``/controller`` (a persistent watch)
and shutdown are events handled in order on the controller thread, so election, resignation
and the callbacks never run concurrently. ``on_elected(epoch)`` and ``on_resigned()`` run on
that thread; the work a new controller does (loading the cluster state, electing partition
leaders) hangs off them.

Fencing: ``write(ops)`` sends ``[check /controller_epoch version, *ops]`` as one ``multi``.
If another broker was elected since, the check fails, nothing is written, this controller
resigns and ``NotControllerError`` is raised — even before this broker's watch has told it.

Thread safety: ``write``, ``controller_id`` and the properties may be called from any thread;
``start`` and ``stop`` from the owner's.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.controller.election import (
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    INITIAL_CONTROLLER_EPOCH,
    ControllerEpoch,
    ElectionAction,
    decode_controller,
    decode_epoch,
    encode_controller,
    encode_epoch,
    next_epoch,
    on_controller_change,
)
from odradek.controller.store import CheckOp, CreateOp, MetadataStore, Op, SetOp
from odradek.errors import (
    BadVersionError,
    MetadataStoreError,
    NodeExistsError,
    NoNodeError,
    NotControllerError,
    SessionClosedError,
)

logger = logging.getLogger(__name__)

_ELECTION_ATTEMPTS = 20
_STOP = object()


@dataclass(frozen=True, slots=True)
class ControllerStatistics:
    """A snapshot of a ``Controller``."""

    broker_id: int
    active: bool
    epoch: int | None
    elections_won: int
    resignations: int
    fenced_writes: int


class Controller:
    """Takes part in the controller election for ``broker_id``; see the module docstring.

    Args:
        store: the cluster's metadata store (this broker's session).
        broker_id: this broker.
        on_elected: called with the new ``ControllerEpoch`` when this broker becomes
            controller.
        on_resigned: called when it stops being controller.
        clock: the ``/controller`` timestamp source.
    """

    def __init__(
        self,
        store: MetadataStore,
        broker_id: int,
        *,
        on_elected: Callable[[ControllerEpoch], None] | None = None,
        on_resigned: Callable[[], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.broker_id = broker_id
        self._on_elected = on_elected
        self._on_resigned = on_resigned
        self._clock = clock
        self._lock = threading.Lock()
        self._epoch: ControllerEpoch | None = None
        self._events: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._elections_won = 0
        self._resignations = 0
        self._fenced_writes = 0

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Starts the controller thread, watches ``/controller`` and runs a first election."""
        self._thread = threading.Thread(
            target=self._run, name=f"odradek-controller-{self.broker_id}", daemon=True
        )
        self._thread.start()
        self.store.watch_data(CONTROLLER_PATH, lambda path: self._events.put(self._on_change))
        self._events.put(self._on_change)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stops the thread (after the events queued before). The ``/controller`` node goes
        with the store's session; a controller that stops resigns first."""
        thread = self._thread
        if thread is None:
            return
        self._events.put(_STOP)
        thread.join(timeout_s)
        self._thread = None
        if self.active:
            self._resign("stopping")

    def submit(self, event: Callable[[], None]) -> None:
        """Runs ``event`` on the controller thread, after the events queued before it."""
        self._events.put(event)

    # --- state -----------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether this broker acts as controller."""
        return self._epoch is not None

    @property
    def epoch(self) -> ControllerEpoch | None:
        """This controller's epoch and fencing version while active."""
        return self._epoch

    def controller_id(self) -> int | None:
        """The controller's broker id from ``/controller`` (``None``: no controller)."""
        try:
            data, _ = self.store.get(CONTROLLER_PATH)
        except NoNodeError:
            return None
        return decode_controller(data)

    def statistics(self) -> ControllerStatistics:
        epoch = self._epoch
        return ControllerStatistics(
            broker_id=self.broker_id,
            active=epoch is not None,
            epoch=epoch.epoch if epoch else None,
            elections_won=self._elections_won,
            resignations=self._resignations,
            fenced_writes=self._fenced_writes,
        )

    # --- fenced writes ---------------------------------------------------------------------

    def write(self, ops: Sequence[Op]) -> list[int]:
        """Applies ``ops`` atomically if this broker is still the controller.

        Returns:
            ``multi``'s results for ``ops`` (without the epoch check).

        Raises:
            NotControllerError: not active, or fenced (another controller was elected); this
                controller has resigned then and nothing was written.
            MetadataStoreError: an op of ``ops`` failed (nothing was written).
        """
        epoch = self._epoch
        if epoch is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        try:
            results = self.store.multi([CheckOp(CONTROLLER_EPOCH_PATH, epoch.zk_version), *ops])
        except BadVersionError:
            if self._epoch_version() == epoch.zk_version:
                raise  # one of ``ops`` was conditional and lost; the epoch is still ours
            self._fenced_writes += 1
            self._events.put(lambda: self._resign_if(epoch, "fenced by a newer controller epoch"))
            raise NotControllerError(
                f"broker {self.broker_id}'s controller epoch {epoch.epoch} is stale: "
                "another broker was elected controller"
            ) from None
        return results[1:]

    # --- the controller thread -------------------------------------------------------------

    def _run(self) -> None:
        while True:
            event = self._events.get()
            if event is _STOP:
                return
            assert callable(event)
            try:
                event()
            except SessionClosedError:
                logger.info("controller %d: metadata session closed", self.broker_id)
                if self.active:
                    self._resign("session closed")
            except Exception:
                logger.exception("controller %d: event failed", self.broker_id)

    def _on_change(self) -> None:
        action = on_controller_change(self.controller_id(), self.broker_id, active=self.active)
        if action is ElectionAction.RESIGN:
            self._resign("another broker is controller")
        elif action is ElectionAction.ELECT:
            if self.active:
                self._resign("the controller node vanished")
            self._elect()

    def _elect(self) -> None:
        """One election attempt: create ``/controller`` and bump the epoch in one ``multi``."""
        for _ in range(_ELECTION_ATTEMPTS):
            current, version = self._read_epoch()
            epoch = next_epoch(current)
            try:
                results = self.store.multi(
                    [
                        CreateOp(
                            CONTROLLER_PATH,
                            encode_controller(self.broker_id, self._clock.now_ms()),
                            ephemeral=True,
                        ),
                        SetOp(CONTROLLER_EPOCH_PATH, encode_epoch(epoch), version),
                    ]
                )
            except NodeExistsError:
                logger.info(
                    "controller %d: broker %s is controller", self.broker_id, self.controller_id()
                )
                return
            except BadVersionError:
                continue  # the epoch moved between our read and our write: read it again
            won = ControllerEpoch(epoch, results[1])
            with self._lock:
                self._epoch = won
                self._elections_won += 1
            logger.info("broker %d elected controller, epoch %d", self.broker_id, epoch)
            if self._on_elected is not None:
                self._on_elected(won)
            return
        raise MetadataStoreError(f"{CONTROLLER_EPOCH_PATH} kept changing during the election")

    def _read_epoch(self) -> tuple[int, int]:
        """``/controller_epoch``'s epoch and version, created (epoch 0) when missing."""
        try:
            data, version = self.store.get(CONTROLLER_EPOCH_PATH)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                self.store.create(CONTROLLER_EPOCH_PATH, encode_epoch(INITIAL_CONTROLLER_EPOCH))
            data, version = self.store.get(CONTROLLER_EPOCH_PATH)
        return decode_epoch(data), version

    def _epoch_version(self) -> int | None:
        try:
            return self.store.get(CONTROLLER_EPOCH_PATH)[1]
        except (NoNodeError, SessionClosedError):
            return None

    def _resign_if(self, epoch: ControllerEpoch, reason: str) -> None:
        if self._epoch == epoch:
            self._resign(reason)

    def _resign(self, reason: str) -> None:
        with self._lock:
            epoch, self._epoch = self._epoch, None
            if epoch is None:
                return
            self._resignations += 1
        logger.info(
            "broker %d resigns as controller (epoch %d): %s", self.broker_id, epoch.epoch, reason
        )
        if self._on_resigned is not None:
            try:
                self._on_resigned()
            except Exception:
                logger.exception("controller %d: on_resigned failed", self.broker_id)

"""``Cluster(n)``: n ``odradek serve`` processes coordinated by one ZooKeeper, for tests and
benchmarks.

Each broker is a child process (``python -m odradek.cli.main serve``) with its own
``broker.id`` (0..n-1 by default), its own log directory ``<base>/broker-<id>/`` and a free
port (``listeners=PLAINTEXT://127.0.0.1:0``; the port is read from the line the broker prints
when it serves). Its stderr goes to ``<base>/broker-<id>.log``. The cluster watches ZooKeeper
through a session of its own (``ZooKeeperMetadataStore`` on the same ``zookeeper.connect``,
chroot included) to wait for registrations and to find the controller.

Contract: ``stop`` ends every broker process this object started — SIGTERM (a clean
shutdown), then SIGKILL after a grace period — by its PID, and closes its ZooKeeper session.
``kill``, ``terminate`` and ``restart`` act on one broker for fault tests. Not thread-safe.

A broker may run elsewhere than on loopback (``odradek.testing.faults`` puts each in a network
namespace): its ``BrokerProcess.host`` is the address it listens on and is reached at, its
``command_prefix`` goes before the command line (``ip netns exec NAME``, which execs, so the
PID is still the broker's), and ``environment`` adds variables (``LD_PRELOAD`` of libfaketime).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from odradek.client import AdminClient
from odradek.controller.election import (
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    decode_controller,
    decode_epoch,
)
from odradek.controller.topics import BROKER_IDS_PATH
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.errors import NoNodeError
from odradek.testing.serve import stop_process

_SERVING = re.compile(r"broker (\d+) serving on ([\d.]+):(\d+) \(cluster ([^)]+)\)")
_STOP_GRACE_S = 30.0
_POLL_S = 0.05

#: Settings every cluster broker gets unless the caller overrides them: short ZooKeeper
#: sessions (a killed broker's registration goes within 2 s), no group start-up delay.
DEFAULT_BROKER_SETTINGS: Mapping[str, str] = {
    "zookeeper.session.timeout.ms": "2000",
    "zookeeper.connection.timeout.ms": "10000",
    "group.initial.rebalance.delay.ms": "0",
}


class ClusterError(RuntimeError):
    """A broker did not start or the cluster did not reach the state waited for in time."""


@dataclass(slots=True)
class BrokerProcess:
    """One broker of the cluster: its id, directory, process and address once serving."""

    broker_id: int
    log_dir: Path
    stderr_path: Path
    process: subprocess.Popen[str] | None = None
    port: int = 0
    cluster_id: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    command_prefix: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


class Cluster:
    """``size`` brokers on ``zookeeper_connect`` under ``base_dir``; see the module docstring.

    Args:
        size: how many brokers.
        zookeeper_connect: ``zookeeper.connect`` for every broker (a chroot keeps clusters on
            one ZooKeeper apart).
        base_dir: where the brokers' directories and logs go.
        settings: extra broker settings for every broker (Kafka's names).
        broker_ids: the ids (default ``0..size-1``).
    """

    def __init__(
        self,
        size: int,
        zookeeper_connect: str,
        base_dir: str | os.PathLike[str],
        *,
        settings: Mapping[str, str] | None = None,
        broker_ids: Iterable[int] | None = None,
        log_level: str = "info",
    ) -> None:
        ids = list(broker_ids) if broker_ids is not None else list(range(size))
        if len(ids) != size or len(set(ids)) != size:
            raise ValueError(f"need {size} distinct broker ids, got {ids}")
        self.zookeeper_connect = zookeeper_connect
        self.base_dir = Path(base_dir)
        self.log_level = log_level
        self.settings = {**DEFAULT_BROKER_SETTINGS, **(settings or {})}
        self.brokers = {
            broker_id: BrokerProcess(
                broker_id,
                self.base_dir / f"broker-{broker_id}",
                self.base_dir / f"broker-{broker_id}.log",
            )
            for broker_id in ids
        }
        self._store: ZooKeeperMetadataStore | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self, timeout_s: float = 120.0) -> Cluster:
        """Starts every broker (all at once) and waits until each serves and is registered.

        Raises:
            ClusterError: a broker exited or the deadline passed (everything is stopped).
        """
        try:
            self._store = ZooKeeperMetadataStore(self.zookeeper_connect)
            for broker in self.brokers.values():
                self._spawn(broker)
            deadline = time.monotonic() + timeout_s
            for broker in self.brokers.values():
                self._await_serving(broker, deadline)
            self.wait_until(
                lambda: set(self.registered()) >= set(self.brokers),
                timeout_s=max(deadline - time.monotonic(), 1.0),
                what="every broker registered",
            )
            self.wait_until(
                self._controller_knows_every_broker,
                timeout_s=max(deadline - time.monotonic(), 1.0),
                what="the controller to know every broker",
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _controller_knows_every_broker(self) -> bool:
        """Whether the controller's broker lists every broker of this cluster in DescribeCluster.

        The controller learns of a registration a moment after ZooKeeper has it; a CreateTopics
        in between sees fewer live brokers (INVALID_REPLICATION_FACTOR). True without asking
        when the controller is not one of this cluster's brokers or listens on named listeners
        (the probe speaks PLAINTEXT to ``address``)."""
        controller = self.controller_id()
        if controller is None:
            return False
        broker = self.brokers.get(controller)
        if broker is None or "listeners" in {**self.settings, **broker.settings}:
            return True
        admin = AdminClient({"bootstrap.servers": broker.address, "request.timeout.ms": 5000})
        try:
            described = admin.describe_cluster(timeout_ms=5000)
        except Exception:  # not answering yet: polled again
            return False
        finally:
            admin.close()
        return {b.node_id for b in described.brokers} >= set(self.brokers)

    def stop(self) -> None:
        """Stops every broker this cluster started, then closes its ZooKeeper session."""
        for broker in self.brokers.values():
            if broker.running and broker.process is not None:
                broker.process.send_signal(signal.SIGCONT)
                broker.process.terminate()
        for broker in self.brokers.values():
            _reap(broker)
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- one broker ------------------------------------------------------------------------

    def kill(self, broker_id: int, sig: signal.Signals = signal.SIGKILL) -> None:
        """Sends ``sig`` to the broker; with SIGKILL, waits until it is gone."""
        broker = self.brokers[broker_id]
        if broker.process is None or not broker.running:
            return
        broker.process.send_signal(sig)
        if sig == signal.SIGKILL:
            broker.process.wait()

    def terminate(self, broker_id: int) -> int:
        """Stops the broker cleanly (SIGTERM; SIGKILL after the grace period); returns its
        exit status."""
        broker = self.brokers[broker_id]
        _reap(broker)
        assert broker.process is not None
        return broker.process.returncode

    def restart(self, broker_id: int, timeout_s: float = 120.0) -> None:
        """Starts a stopped broker again on its log directory and waits until it serves and
        is registered."""
        broker = self.brokers[broker_id]
        if broker.running:
            raise ClusterError(f"broker {broker_id} is running")
        self._spawn(broker)
        deadline = time.monotonic() + timeout_s
        self._await_serving(broker, deadline)
        self.wait_until(
            lambda: broker_id in self.registered(),
            timeout_s=max(deadline - time.monotonic(), 1.0),
            what=f"broker {broker_id} registered",
        )

    # --- what ZooKeeper says ---------------------------------------------------------------

    @property
    def store(self) -> ZooKeeperMetadataStore:
        """The cluster's own ZooKeeper session (same chroot as the brokers)."""
        assert self._store is not None, "the cluster is not started"
        return self._store

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers.values() if b.running and b.port)

    def registered(self) -> list[int]:
        """The broker ids under ``/brokers/ids``."""
        try:
            return sorted(int(name) for name in self.store.children(BROKER_IDS_PATH))
        except NoNodeError:
            return []

    def registration(self, broker_id: int) -> dict[str, Any]:
        """The JSON of ``/brokers/ids/<broker_id>``."""
        data, _ = self.store.get(f"{BROKER_IDS_PATH}/{broker_id}")
        document = json.loads(data)
        assert isinstance(document, dict)
        return document

    def controller_id(self) -> int | None:
        """The broker id in ``/controller`` (``None``: no controller right now)."""
        try:
            return decode_controller(self.store.get(CONTROLLER_PATH)[0])
        except NoNodeError:
            return None

    def controller_epoch(self) -> int | None:
        try:
            return decode_epoch(self.store.get(CONTROLLER_EPOCH_PATH)[0])
        except NoNodeError:
            return None

    def wait_until(self, condition: Any, timeout_s: float = 60.0, what: str = "") -> None:
        """Polls ``condition()`` until true.

        Raises:
            ClusterError: the deadline passed, or a broker that should run exited.
        """
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out waiting for {what or condition}")
            time.sleep(_POLL_S)

    # --- internals -------------------------------------------------------------------------

    def command(self, broker_id: int, extra: Mapping[str, str] | None = None) -> list[str]:
        """The ``odradek serve`` command line of broker ``broker_id`` (the cluster's settings,
        then the broker's own ``BrokerProcess.settings``, such as its ``broker.rack``)."""
        broker = self.brokers[broker_id]
        settings = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://{broker.host}:0",
            "log.dirs": str(broker.log_dir),
            "zookeeper.connect": self.zookeeper_connect,
            **self.settings,
            **broker.settings,
            **(extra or {}),
        }
        command = [*broker.command_prefix, sys.executable, "-m", "odradek.cli.main", "serve"]
        command.append("--log-level")
        command.append(self.log_level)
        for name, value in settings.items():
            command += ["-o", f"{name}={value}"]
        return command

    def _spawn(self, broker: BrokerProcess) -> None:
        if broker.process is not None:
            _reap(broker)  # the previous incarnation's pipe is closed too
        broker.log_dir.mkdir(parents=True, exist_ok=True)
        with open(broker.stderr_path, "a", encoding="utf-8") as stderr:
            # Our own interpreter running our own CLI with settings we built; no shell.
            broker.process = subprocess.Popen(  # noqa: S603
                self.command(broker.broker_id),
                env={**os.environ, **broker.environment} if broker.environment else None,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        broker.port = 0

    def _await_serving(self, broker: BrokerProcess, deadline: float) -> None:
        process = broker.process
        assert process is not None
        line = _read_line(process, deadline)
        match = _SERVING.search(line)
        if match is None:
            raise ClusterError(
                f"broker {broker.broker_id} did not start (exit status {process.poll()}); "
                f"see {broker.stderr_path}"
            )
        broker.port = int(match[3])
        broker.cluster_id = match[4]


def _read_line(process: subprocess.Popen[str], deadline: float) -> str:
    """The child's first stdout line, or "" if it exits or the deadline passes first."""
    assert process.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], _POLL_S * 4)
        if ready:
            return process.stdout.readline()
        if process.poll() is not None:
            return ""
    return ""


def _reap(broker: BrokerProcess) -> None:
    process = broker.process
    if process is None:
        return
    stop_process(process, _STOP_GRACE_S)
    if process.stdout is not None:
        process.stdout.close()

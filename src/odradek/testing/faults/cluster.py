"""``FaultCluster``: a ZooKeeper ensemble and brokers, and every fault the suite injects.

The cluster is ``odradek.testing.zookeeper.ZooKeeperEnsemble`` (3 nodes by default) plus
``odradek.testing.cluster.Cluster`` (3 ``odradek serve`` processes, ids ``0..n-1``), both under
``base_dir``. ``isolation`` says how the processes are separated: ``"network namespaces"``
(each broker and each ZooKeeper node a test host with an address of its own, see ``netns``) or
``"loopback (<why>)"`` (every process on 127.0.0.1; network partitions are then unavailable).
With ``disk_bytes`` (the default), each broker's log directory lives on a tmpfs of that size
from the first start, so that ``fill_disk`` can fill it (``disks``); ``unavailable`` maps each
facility (``network``, ``nftables``, ``disk``, ``faketime``, ``slow-disk``) that cannot be used
here to the reason.

The fault operations (``kill_broker``, ``pause_broker``, ``kill_zookeeper``, ``cut``, ...) are
the primitives ``injectors`` composes; each records what it changed so that ``heal_all`` can
undo every active fault — resume what is paused, restart what is down, lift every network
rule, free every filled disk — whatever the faults' own ``heal`` did or did not do.

Contract: ``stop`` tears down everything ``start`` made — broker and ZooKeeper processes (only
the PIDs this object started), namespaces, interfaces and mounts — even after a failure
halfway through ``start``, and may be called twice. Not thread-safe: one test (or runner)
drives it.
"""

from __future__ import annotations

import logging
import secrets
import signal
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol

from odradek.client import AdminClient, NewTopic
from odradek.controller.topics import ClusterMetadata
from odradek.testing.cluster import Cluster, ClusterError
from odradek.testing.faults.disks import (
    Tmpfs,
    faketime_environment,
    probe_faketime,
    probe_slow_disk,
    probe_tmpfs,
)
from odradek.testing.faults.netns import (
    NetnsError,
    Network,
    TestHost,
    probe_namespaces,
    probe_nftables,
)
from odradek.testing.zookeeper import ZooKeeperEnsemble

_log = logging.getLogger(__name__)

_POLL_S = 0.05
#: ZooKeeper sessions of the brokers: short, so that pauses and partitions past the session
#: take seconds, not tens of seconds.
FAULT_BROKER_SETTINGS: Mapping[str, str] = {
    "zookeeper.session.timeout.ms": "3000",
    "zookeeper.connection.timeout.ms": "10000",
    "replica.lag.time.max.ms": "5000",
    "group.initial.rebalance.delay.ms": "0",
}
#: The size of each broker's tmpfs log directory by default.
DEFAULT_DISK_BYTES = 256 << 20


class FaultClusterError(RuntimeError):
    """The fault cluster did not start, a fault could not be applied or healed, or the
    cluster did not become healthy in time."""


class ActiveFault(Protocol):
    """What ``heal_all`` needs of a fault that was applied and not healed yet."""

    kind: str

    def heal(self, cluster: FaultCluster) -> None: ...


class FaultCluster:
    """A cluster to break; see the module docstring.

    Args:
        base_dir: where the processes' directories and logs go (the caller owns it).
        brokers: how many brokers (ids ``0..brokers-1``).
        zookeepers: how many ZooKeeper nodes.
        use_namespaces: ``True`` requires network namespaces, ``False`` uses loopback,
            ``None`` uses namespaces when the kernel allows.
        broker_settings: extra broker settings (over ``FAULT_BROKER_SETTINGS``).
        disk_bytes: the size of each broker's tmpfs log directory (``None``: plain
            directories, no ``full-disk``).
    """

    def __init__(
        self,
        base_dir: Path,
        *,
        brokers: int = 3,
        zookeepers: int = 3,
        use_namespaces: bool | None = None,
        broker_settings: Mapping[str, str] | None = None,
        disk_bytes: int | None = DEFAULT_DISK_BYTES,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.broker_ids = list(range(brokers))
        self.zookeeper_count = zookeepers
        self.use_namespaces = use_namespaces
        self.broker_settings = {**FAULT_BROKER_SETTINGS, **(broker_settings or {})}
        #: A per-run token in every name this cluster gives to shared resources.
        self.token = secrets.token_hex(3)
        self.disk_bytes = disk_bytes
        self.isolation = "not started"
        #: Facility → why it cannot be used here (filled by ``start``).
        self.unavailable: dict[str, str] = {}
        self.active_faults: list[ActiveFault] = []
        #: Seconds ``start`` and ``stop`` took last.
        self.start_seconds = 0.0
        self.stop_seconds = 0.0
        self.network: Network | None = None
        self._zookeeper: ZooKeeperEnsemble | None = None
        self._brokers: Cluster | None = None
        self._disks: dict[int, Tmpfs] = {}
        self._paused: set[int] = set()
        self._skewed: dict[int, float] = {}

    # --- lifecycle -------------------------------------------------------------------------

    def start(self, timeout_s: float = 120.0) -> FaultCluster:
        """Starts the ensemble, then the brokers, and waits until every broker serves and is
        registered and a controller is elected.

        Raises:
            FaultClusterError: namespaces were required and cannot be made, or a process did
                not start in time (everything made so far is torn down first).
        """
        started = time.monotonic()
        deadline = started + timeout_s
        try:
            self.base_dir.mkdir(parents=True, exist_ok=True)
            self._probe()
            zookeeper_hosts = self._make_network()
            self._zookeeper = ZooKeeperEnsemble(
                self.base_dir / "zookeeper",
                self.zookeeper_count,
                hosts=[host.address for host in zookeeper_hosts] or None,
                command_prefixes=[host.command_prefix for host in zookeeper_hosts] or None,
            )
            self._zookeeper.start(timeout_s=_left(deadline))
            self._brokers = Cluster(
                len(self.broker_ids),
                self._zookeeper.connect_string,
                self.base_dir / "brokers",
                settings=self.broker_settings,
                broker_ids=self.broker_ids,
            )
            self._place_brokers(self._brokers)
            self._brokers.start(timeout_s=_left(deadline))
            self.wait_until(
                lambda: self.controller_id() is not None, _left(deadline), "a controller"
            )
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        _log.info(
            "fault cluster %s started in %.1f s (%s)",
            self.token,
            self.start_seconds,
            self.isolation,
        )
        return self

    def _probe(self) -> None:
        unavailable: dict[str, str] = {}
        if self.use_namespaces is False:
            unavailable["network"] = "network namespaces not requested"
        elif (reason := probe_namespaces()) is not None:
            if self.use_namespaces:
                raise FaultClusterError(f"network namespaces required, but {reason}")
            unavailable["network"] = reason
        if "network" in unavailable:
            unavailable["nftables"] = "no network namespaces"
        elif (reason := probe_nftables()) is not None:
            unavailable["nftables"] = reason
        if self.disk_bytes is None:
            unavailable["disk"] = "no tmpfs log directories (disk_bytes=None)"
        elif (reason := probe_tmpfs(self.base_dir)) is not None:
            unavailable["disk"] = reason
        if (reason := probe_faketime()) is not None:
            unavailable["faketime"] = reason
        if (reason := probe_slow_disk()) is not None:
            unavailable["slow-disk"] = reason
        self.unavailable = unavailable
        network = unavailable.get("network")
        self.isolation = "network namespaces" if network is None else f"loopback ({network})"

    def _make_network(self) -> list[TestHost]:
        """The namespaces (when available); returns the ZooKeeper nodes' hosts (none on
        loopback)."""
        if "network" in self.unavailable:
            return []
        zookeeper_names = [f"zk{index + 1}" for index in range(self.zookeeper_count)]
        broker_names = [f"b{broker_id}" for broker_id in self.broker_ids]
        try:
            self.network = Network(self.token, [*zookeeper_names, *broker_names]).create()
        except NetnsError as error:
            if self.use_namespaces:
                raise FaultClusterError(f"network namespaces required: {error}") from error
            self.unavailable["network"] = str(error)
            self.unavailable["nftables"] = "no network namespaces"
            self.isolation = f"loopback ({error})"
            return []
        return [self.network.hosts[name] for name in zookeeper_names]

    def _place_brokers(self, cluster: Cluster) -> None:
        """Each broker's host and namespace, and its log directory inside its tmpfs."""
        cluster.base_dir.mkdir(parents=True, exist_ok=True)
        for broker_id, broker in cluster.brokers.items():
            if self.network is not None:
                host = self.network.hosts[f"b{broker_id}"]
                broker.host = host.address
                broker.command_prefix = host.command_prefix
            if self.disk_bytes is not None and "disk" not in self.unavailable:
                disk = Tmpfs(self.base_dir / "disks" / f"broker-{broker_id}", self.disk_bytes)
                disk.mount()
                self._disks[broker_id] = disk
                broker.log_dir = disk.path / "log"

    def stop(self) -> None:
        """Stops every process this cluster started and removes everything it made. Safe to
        call after a failed ``start`` and more than once."""
        started = time.monotonic()
        errors: list[BaseException] = []
        for step in (self._stop_brokers, self._stop_zookeeper, self._unmount, self._unnet):
            try:
                step()
            except Exception as error:  # keep tearing down; report the first failure
                _log.exception("fault cluster %s: teardown step failed", self.token)
                errors.append(error)
        self.active_faults.clear()
        self._paused.clear()
        self._skewed.clear()
        self.stop_seconds = time.monotonic() - started
        if errors:
            raise FaultClusterError(f"teardown incomplete: {errors[0]}") from errors[0]

    def stop_brokers(self) -> None:
        """Stops every broker cleanly (SIGCONT, SIGTERM; SIGKILL after a grace period) and
        keeps everything else — log directories, ZooKeeper, namespaces — for reading the
        replicas' logs; ``stop`` still tears down the rest."""
        self._paused.clear()
        for broker_id in self.broker_ids:
            if self.broker_running(broker_id):
                self.brokers.terminate(broker_id)

    def __enter__(self) -> FaultCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- what the cluster is ---------------------------------------------------------------

    @property
    def brokers(self) -> Cluster:
        """The broker processes (``odradek.testing.cluster.Cluster``)."""
        if self._brokers is None:
            raise FaultClusterError("the fault cluster is not started")
        return self._brokers

    @property
    def zookeeper(self) -> ZooKeeperEnsemble:
        if self._zookeeper is None:
            raise FaultClusterError("the fault cluster is not started")
        return self._zookeeper

    @property
    def metadata(self) -> ClusterMetadata:
        """Kafka's ZooKeeper layout through the cluster's own ZooKeeper session."""
        return ClusterMetadata(self.brokers.store)

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's address, reachable from the test process (also the stopped ones':
        clients skip what does not answer)."""
        return ",".join(broker.address for broker in self.brokers.brokers.values() if broker.port)

    def address(self, broker_id: int) -> str:
        """``host:port`` of broker ``broker_id``."""
        return self.brokers.brokers[broker_id].address

    def log_dir(self, broker_id: int) -> Path:
        """The broker's ``log.dirs``. On a tmpfs (``disk_bytes``) it vanishes with ``stop``:
        read it after ``stop_brokers`` and before ``stop``."""
        return self.brokers.brokers[broker_id].log_dir

    def stderr_path(self, broker_id: int) -> Path:
        """The broker's log (its stderr, every incarnation appended)."""
        return self.brokers.brokers[broker_id].stderr_path

    # --- what ZooKeeper says ---------------------------------------------------------------

    def registered(self) -> list[int]:
        """The broker ids under ``/brokers/ids``."""
        return self.brokers.registered()

    def controller_id(self) -> int | None:
        return self.brokers.controller_id()

    def topics(self) -> list[str]:
        return self.metadata.topics()

    def replicas_of(self, topic: str, partition: int) -> list[int]:
        return list(self.metadata.assignment(topic).get(partition, []))

    def leader_of(self, topic: str, partition: int) -> int | None:
        """The partition's leader in its ZooKeeper state (``None``: no state or no leader)."""
        state = self.metadata.partition_state(topic, partition)
        if state is None or state.leader < 0:
            return None
        return state.leader

    def isr_of(self, topic: str, partition: int) -> list[int]:
        state = self.metadata.partition_state(topic, partition)
        return list(state.isr) if state is not None else []

    def partitions(self) -> list[tuple[str, int]]:
        """Every (topic, partition) in ZooKeeper, sorted."""
        metadata = self.metadata
        return sorted((t, p) for t in metadata.topics() for p in metadata.assignment(t))

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Creates the topic through a broker and waits until every partition has a leader
        and its full ISR."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        try:
            admin.create_topics(
                [NewTopic(name, partitions, replication_factor, dict(configs or {}))]
            ).all()
        finally:
            admin.close()
        self.wait_until(
            lambda: self._partitions_healthy([name], set(self.registered())),
            60.0,
            f"topic {name} led with full ISRs",
        )

    # --- broker faults ---------------------------------------------------------------------

    def broker_running(self, broker_id: int) -> bool:
        return self.brokers.brokers[broker_id].running

    def broker_pid(self, broker_id: int) -> int | None:
        return self.brokers.brokers[broker_id].pid

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL the broker (it had no chance to close anything) and wait for its exit."""
        self._paused.discard(broker_id)
        self.brokers.kill(broker_id, signal.SIGKILL)

    def terminate_broker(self, broker_id: int) -> None:
        """Stops the broker cleanly (SIGTERM)."""
        self._paused.discard(broker_id)
        self.brokers.terminate(broker_id)

    def restart_broker(
        self,
        broker_id: int,
        environment: Mapping[str, str] | None = None,
        timeout_s: float = 120.0,
    ) -> None:
        """Starts a stopped broker on its log directory (with ``environment`` added to its
        environment for this incarnation) and waits until it serves and is registered."""
        broker = self.brokers.brokers[broker_id]
        broker.environment = dict(environment or {})
        # A killed broker's registration lives until its session expires; a new incarnation
        # started before that refuses to start (the id is held by "another live broker").
        self.wait_until(
            lambda: broker_id not in self.registered(),
            timeout_s,
            f"the previous registration of broker {broker_id} to expire",
        )
        try:
            self.brokers.restart(broker_id, timeout_s=timeout_s)
        except ClusterError as error:
            raise FaultClusterError(str(error)) from error

    def pause_broker(self, broker_id: int, timeout_s: float = 10.0) -> None:
        """SIGSTOP the broker and wait until the kernel shows it stopped."""
        pid = self.broker_pid(broker_id)
        if pid is None or not self.broker_running(broker_id):
            raise FaultClusterError(f"broker {broker_id} is not running")
        self.brokers.kill(broker_id, signal.SIGSTOP)
        self._paused.add(broker_id)
        self.wait_until(
            lambda: process_state(pid) in ("T", "t", None),
            timeout_s,
            f"broker {broker_id} stopped",
        )

    def resume_broker(self, broker_id: int) -> None:
        """SIGCONT a paused broker."""
        self._paused.discard(broker_id)
        self.brokers.kill(broker_id, signal.SIGCONT)

    def paused_brokers(self) -> set[int]:
        return set(self._paused)

    # --- ZooKeeper faults ------------------------------------------------------------------

    def kill_zookeeper(self, index: int) -> None:
        """SIGKILL ZooKeeper node ``index`` (0-based)."""
        self.zookeeper.kill(index, signal.SIGKILL)

    def start_zookeeper(self, index: int, timeout_s: float = 60.0) -> None:
        """Restarts ZooKeeper node ``index`` and waits until the ensemble serves."""
        self.zookeeper.start_node(index, timeout_s)

    def zookeeper_running(self, index: int) -> bool:
        return self.zookeeper.nodes[index].running

    # --- network faults --------------------------------------------------------------------

    def _network(self) -> Network:
        if self.network is None:
            raise FaultClusterError(f"no network faults: {self.isolation}")
        return self.network

    def broker_host(self, broker_id: int) -> str:
        """The address broker ``broker_id`` listens on."""
        return self.brokers.brokers[broker_id].host

    def zookeeper_hosts(self) -> list[str]:
        return sorted({node.host for node in self.zookeeper.nodes})

    @property
    def session_timeout_s(self) -> float:
        """The brokers' ``zookeeper.session.timeout.ms``, in seconds."""
        return int(self.broker_settings["zookeeper.session.timeout.ms"]) / 1000

    def cut_off(self, broker_id: int) -> None:
        """Takes the broker's link down: nobody reaches it, it reaches nobody."""
        self._network().set_link(f"b{broker_id}", up=False)

    def reconnect(self, broker_id: int) -> None:
        self._network().set_link(f"b{broker_id}", up=True)

    def drop_traffic(self, broker_id: int, peers: Sequence[str]) -> str:
        """Drops the broker's traffic to and from the ``peers`` addresses; returns the handle
        for ``restore_traffic``."""
        if "nftables" in self.unavailable:
            raise FaultClusterError(f"no nftables: {self.unavailable['nftables']}")
        return self._network().drop(f"b{broker_id}", peers)

    def restore_traffic(self, broker_id: int, handle: str) -> None:
        self._network().lift(f"b{broker_id}", handle)

    # --- disk and clock faults -------------------------------------------------------------

    def has_disk(self, broker_id: int) -> bool:
        """Whether the broker's log directory is on a tmpfs ``fill_disk`` can fill."""
        return broker_id in self._disks

    def fill_disk(self, broker_id: int) -> int:
        """Fills the broker's tmpfs; returns the ballast's size in bytes."""
        if broker_id not in self._disks:
            raise FaultClusterError(f"broker {broker_id} has no tmpfs log directory")
        return self._disks[broker_id].fill()

    def free_disk(self, broker_id: int) -> None:
        if broker_id in self._disks:
            self._disks[broker_id].free()

    def disk_free_bytes(self, broker_id: int) -> int:
        return self._disks[broker_id].free_bytes()

    def skew_clock(self, broker_id: int, skew_s: float) -> None:
        """Restarts the broker (cleanly) with its wall clock moved by ``skew_s`` seconds."""
        environment = faketime_environment(skew_s)
        self.terminate_broker(broker_id)
        self._skewed[broker_id] = skew_s
        self.restart_broker(broker_id, environment)

    def unskew_clock(self, broker_id: int) -> None:
        """Restarts a skewed broker (cleanly) with the true clock."""
        self._skewed.pop(broker_id, None)
        self.terminate_broker(broker_id)
        self.restart_broker(broker_id)

    def skewed_brokers(self) -> dict[int, float]:
        return dict(self._skewed)

    # --- healing ---------------------------------------------------------------------------

    def heal_all(self) -> None:
        """Heals every active fault (latest first), then restores whatever is still broken:
        paused brokers resumed, stopped ZooKeeper nodes and brokers restarted (without any
        fault environment)."""
        while self.active_faults:
            fault = self.active_faults.pop()
            try:
                fault.heal(self)
            except Exception:
                _log.exception("fault cluster %s: healing %s failed", self.token, fault.kind)
            if fault in self.active_faults:  # its heal did not untrack it
                self.active_faults.remove(fault)
        if self.network is not None:
            self.network.heal_all()
        for disk in self._disks.values():
            disk.free()
        for broker_id in sorted(self._paused):
            self.resume_broker(broker_id)
        for broker_id in sorted(self._skewed):
            self.unskew_clock(broker_id)
        for index, node in enumerate(self.zookeeper.nodes):
            if not node.running:
                self.start_zookeeper(index)
        for broker_id in self.broker_ids:
            broker = self.brokers.brokers[broker_id]
            if not broker.running:
                self.restart_broker(broker_id)

    def wait_healthy(self, timeout_s: float = 120.0) -> None:
        """Every broker registered and serving, every partition led with its full ISR.

        Raises:
            FaultClusterError: not so within ``timeout_s`` (the message says what is not).
        """
        self.wait_until(self._healthy, timeout_s, "a healthy cluster")

    def _healthy(self) -> bool:
        registered = set(self.registered())
        if not registered >= set(self.broker_ids):
            return False
        if self.controller_id() not in registered:
            return False
        if not self._partitions_healthy(self.topics(), registered):
            return False
        return all(self._serves(broker_id) for broker_id in self.broker_ids)

    def _partitions_healthy(self, topics: list[str], registered: set[int]) -> bool:
        metadata = self.metadata
        for topic in topics:
            for partition, replicas in metadata.assignment(topic).items():
                state = metadata.partition_state(topic, partition)
                if state is None or state.leader not in registered:
                    return False
                if set(state.isr) != set(replicas):
                    return False
        return True

    def _serves(self, broker_id: int) -> bool:
        """Whether the broker answers a DescribeCluster naming every broker."""
        admin = AdminClient(
            {
                "bootstrap.servers": self.address(broker_id),
                "request.timeout.ms": 5000,
                "api.version.request.timeout.ms": 5000,
            }
        )
        try:
            description = admin.describe_cluster(timeout_ms=5000)
        except Exception:  # not serving (yet): the caller polls again
            return False
        finally:
            admin.close()
        return {b.node_id for b in description.brokers} >= set(self.broker_ids)

    # --- helpers ---------------------------------------------------------------------------

    def wait_until(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Polls ``condition()`` until true.

        Raises:
            FaultClusterError: the deadline passed.
        """
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise FaultClusterError(f"timed out after {timeout_s:.0f} s waiting for {what}")
            time.sleep(_POLL_S)

    def _stop_brokers(self) -> None:
        if self._brokers is not None:
            self._brokers.stop()

    def _stop_zookeeper(self) -> None:
        if self._zookeeper is not None:
            self._zookeeper.stop()

    def _unmount(self) -> None:
        while self._disks:
            _, disk = self._disks.popitem()
            disk.unmount()

    def _unnet(self) -> None:
        if self.network is not None:
            self.network.teardown()


def process_state(pid: int) -> str | None:
    """The state letter of ``/proc/<pid>/stat`` (``T``: stopped), ``None`` if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def port_open(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether a TCP connection to ``host:port`` is accepted."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 1.0)

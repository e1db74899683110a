"""The fault kinds: each a ``Fault`` that ``apply``s itself to a ``FaultCluster`` (choosing its
target then, from what ZooKeeper says) and ``heal``s what it did.

Kinds (``FAULT_KINDS``):

- ``kill-leader`` / ``kill-follower`` / ``kill-controller``: SIGKILL of the broker leading a
  partition / following one / holding ``/controller``; heal restarts it on its log directory.
- ``pause-past-session``: SIGSTOP of a partition leader until its ZooKeeper registration is gone
  (the session expired; the zombie leader); heal sends SIGCONT — the broker then learns its
  session expired, stops serving and rejoins with a new session.
- ``kill-zookeeper``: SIGKILL of one ZooKeeper node (the quorum survives); heal restarts it.
- ``partition-one``: one broker cut off from every other host (and the test process).
- ``leader-cut-from-followers``: a partition leader's traffic to and from its followers is
  dropped; clients and ZooKeeper still reach it.
- ``broker-cut-from-zookeeper``: a broker's traffic to and from every ZooKeeper node is
  dropped (its session expires; it rejoins once it reaches ZooKeeper again); heal lifts the
  rules.
- ``full-disk``: one broker's log directory (a small tmpfs) filled up; heal frees it.
- ``clock-skew``: one broker restarted under libfaketime with its wall clock moved (monotonic
  time untouched); heal restarts it with the true clock.
- ``slow-disk``: needs a delaying block device (device-mapper ``delay``); skipped when absent.

``available_faults`` says for each kind whether it can be injected on this machine and this
cluster, and why not. Contract: ``apply`` is called once, then ``heal`` once; ``apply`` tracks
the fault in ``cluster.active_faults`` and ``heal`` untracks it, so that ``heal_all`` can heal
whatever is still applied.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Protocol

from odradek.testing.faults.cluster import FaultCluster, FaultClusterError

KILL_BROKER_KINDS = ("kill-leader", "kill-follower", "kill-controller")
NETWORK_KINDS = ("partition-one", "leader-cut-from-followers", "broker-cut-from-zookeeper")
FAULT_KINDS: tuple[str, ...] = (
    *KILL_BROKER_KINDS,
    "pause-past-session",
    "kill-zookeeper",
    *NETWORK_KINDS,
    "full-disk",
    "clock-skew",
    "slow-disk",
)

#: How far ``clock-skew`` moves a broker's wall clock by default (either way).
DEFAULT_SKEW_S = 3600.0


class Fault(Protocol):
    """One fault: ``apply`` (returns a description of the target), later ``heal``."""

    kind: str

    def apply(self, cluster: FaultCluster) -> str: ...

    def heal(self, cluster: FaultCluster) -> None: ...


# --- targets ---------------------------------------------------------------------------------


def pick_leader(rng: random.Random, cluster: FaultCluster) -> tuple[int, str]:
    """A running broker leading some partition (a random running broker when none leads);
    returns it and a description."""
    led = [
        (leader, f"{topic}-{partition}")
        for topic, partition in cluster.partitions()
        if (leader := cluster.leader_of(topic, partition)) is not None
        and cluster.broker_running(leader)
    ]
    if led:
        leader, name = rng.choice(led)
        return leader, f"broker {leader} (leader of {name})"
    broker_id = pick_broker(rng, cluster)
    return broker_id, f"broker {broker_id}"


def pick_follower(rng: random.Random, cluster: FaultCluster) -> tuple[int, str]:
    """A running broker that replicates some partition but does not lead it."""
    following = [
        (replica, f"{topic}-{partition}")
        for topic, partition in cluster.partitions()
        for replica in cluster.replicas_of(topic, partition)
        if replica != cluster.leader_of(topic, partition) and cluster.broker_running(replica)
    ]
    if following:
        follower, name = rng.choice(following)
        return follower, f"broker {follower} (follower of {name})"
    broker_id = pick_broker(rng, cluster)
    return broker_id, f"broker {broker_id}"


def pick_broker(rng: random.Random, cluster: FaultCluster) -> int:
    running = [b for b in cluster.broker_ids if cluster.broker_running(b)]
    if not running:
        raise FaultClusterError("no broker is running")
    return rng.choice(running)


# --- process faults --------------------------------------------------------------------------


@dataclass(eq=False)
class KillBroker:
    """SIGKILL of a leader, a follower or the controller; heal restarts it."""

    kind: str
    rng: random.Random
    broker_id: int | None = None

    def apply(self, cluster: FaultCluster) -> str:
        if self.kind == "kill-controller":
            controller = cluster.controller_id()
            if controller is None or not cluster.broker_running(controller):
                raise FaultClusterError("no running controller to kill")
            self.broker_id, target = controller, f"broker {controller} (controller)"
        elif self.kind == "kill-follower":
            self.broker_id, target = pick_follower(self.rng, cluster)
        else:
            self.broker_id, target = pick_leader(self.rng, cluster)
        cluster.active_faults.append(self)
        cluster.kill_broker(self.broker_id)
        return target

    def heal(self, cluster: FaultCluster) -> None:
        _untrack(cluster, self)
        if self.broker_id is not None and not cluster.broker_running(self.broker_id):
            cluster.restart_broker(self.broker_id)


@dataclass(eq=False)
class PausePastSession:
    """SIGSTOP of a leader held until its ZooKeeper registration is gone; heal resumes it
    (on learning its session expired it stops serving and rejoins)."""

    rng: random.Random
    session_wait_s: float = 60.0
    kind: str = "pause-past-session"
    broker_id: int | None = None

    def apply(self, cluster: FaultCluster) -> str:
        self.broker_id, target = pick_leader(self.rng, cluster)
        broker_id = self.broker_id
        cluster.active_faults.append(self)
        cluster.pause_broker(broker_id)
        cluster.wait_until(
            lambda: broker_id not in cluster.registered(),
            self.session_wait_s,
            f"the registration of paused broker {broker_id} to expire",
        )
        return target

    def heal(self, cluster: FaultCluster) -> None:
        _untrack(cluster, self)
        broker_id = self.broker_id
        if broker_id is None:
            return
        cluster.resume_broker(broker_id)
        # Resumed, it finds its session expired and rejoins; a broker that stays up without a
        # registration is a defect the wait reports.
        settle(cluster, broker_id, self.session_wait_s)


@dataclass(eq=False)
class KillZooKeeper:
    """SIGKILL of one ZooKeeper node (the quorum survives); heal restarts it."""

    rng: random.Random
    kind: str = "kill-zookeeper"
    index: int | None = None

    def apply(self, cluster: FaultCluster) -> str:
        running = [i for i in range(len(cluster.zookeeper.nodes)) if cluster.zookeeper_running(i)]
        quorum = len(cluster.zookeeper.nodes) // 2 + 1
        if len(running) <= quorum:
            raise FaultClusterError("killing a ZooKeeper node now would lose the quorum")
        self.index = self.rng.choice(running)
        cluster.active_faults.append(self)
        cluster.kill_zookeeper(self.index)
        return f"zookeeper {self.index + 1}"

    def heal(self, cluster: FaultCluster) -> None:
        _untrack(cluster, self)
        if self.index is not None and not cluster.zookeeper_running(self.index):
            cluster.start_zookeeper(self.index)


# --- network faults --------------------------------------------------------------------------


def settle(
    cluster: FaultCluster, broker_id: int, timeout_s: float = 60.0, *, since: float | None = None
) -> None:
    """After a fault that may have expired the broker's ZooKeeper session: waits until it is
    registered on a live session — the one it had (it survived) or a new one (it rejoined) —
    and restarts it if it exited instead (a crash).

    ``since`` (monotonic) is when the fault cut the broker's session off: until twice the
    session timeout after it ZooKeeper may still expire that session, and a registration seen
    before then may be the dying session's, so the wait starts only then."""
    if since is not None:
        remaining = since + 2 * cluster.session_timeout_s - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
    cluster.wait_until(
        lambda: not cluster.broker_running(broker_id) or broker_id in cluster.registered(),
        timeout_s,
        f"broker {broker_id} to be registered again (or to exit)",
    )
    if not cluster.broker_running(broker_id):
        cluster.restart_broker(broker_id)


@dataclass(eq=False)
class PartitionOne:
    """One broker's link taken down (cut off from everyone, the test process included)."""

    rng: random.Random
    kind: str = "partition-one"
    broker_id: int | None = None
    applied_at: float | None = None

    def apply(self, cluster: FaultCluster) -> str:
        self.broker_id = pick_broker(self.rng, cluster)
        cluster.active_faults.append(self)
        self.applied_at = time.monotonic()
        cluster.cut_off(self.broker_id)
        return f"broker {self.broker_id}"

    def heal(self, cluster: FaultCluster) -> None:
        _untrack(cluster, self)
        if self.broker_id is not None:
            cluster.reconnect(self.broker_id)
            settle(cluster, self.broker_id, since=self.applied_at)


@dataclass(eq=False)
class LeaderCutFromFollowers:
    """A partition leader's traffic to and from the partition's followers dropped; clients
    and ZooKeeper still reach it."""

    rng: random.Random
    kind: str = "leader-cut-from-followers"
    broker_id: int | None = None
    handle: str | None = None

    def apply(self, cluster: FaultCluster) -> str:
        candidates = [
            (leader, topic, partition)
            for topic, partition in cluster.partitions()
            if (leader := cluster.leader_of(topic, partition)) is not None
            and cluster.broker_running(leader)
            and len(cluster.replicas_of(topic, partition)) > 1
        ]
        if not candidates:
            raise FaultClusterError("no replicated partition has a running leader")
        leader, topic, partition = self.rng.choice(candidates)
        followers = [b for b in cluster.replicas_of(topic, partition) if b != leader]
        self.broker_id = leader
        cluster.active_faults.append(self)
        self.handle = cluster.drop_traffic(leader, [cluster.broker_host(b) for b in followers])
        names = ", ".join(str(b) for b in followers)
        return f"broker {leader} (leader of {topic}-{partition}) cut from {names}"

    def heal(self, cluster: FaultCluster) -> None:
        _restore_traffic(cluster, self, self.broker_id, self.handle)


@dataclass(eq=False)
class BrokerCutFromZooKeeper:
    """A broker's traffic to and from every ZooKeeper node dropped (brokers and clients
    still reach it); its session expires and, reconnected, it rejoins."""

    rng: random.Random
    kind: str = "broker-cut-from-zookeeper"
    broker_id: int | None = None
    handle: str | None = None
    applied_at: float | None = None

    def apply(self, cluster: FaultCluster) -> str:
        self.broker_id = pick_broker(self.rng, cluster)
        cluster.active_faults.append(self)
        self.applied_at = time.monotonic()
        self.handle = cluster.drop_traffic(self.broker_id, cluster.zookeeper_hosts())
        return f"broker {self.broker_id}"

    def heal(self, cluster: FaultCluster) -> None:
        _restore_traffic(cluster, self, self.broker_id, self.handle, since=self.applied_at)


# --- disk and clock faults -------------------------------------------------------------------


@dataclass(eq=False)
class FullDisk:
    """One broker's tmpfs log directory filled up; heal deletes the ballast."""

    rng: random.Random
    kind: str = "full-disk"
    broker_id: int | None = None

    def apply(self, cluster: FaultCluster) -> str:
        running = [b for b in cluster.broker_ids if cluster.broker_running(b)]
        candidates = [b for b in running if cluster.has_disk(b)]
        if not candidates:
            raise FaultClusterError("no running broker has a tmpfs log directory")
        self.broker_id = self.rng.choice(candidates)
        cluster.active_faults.append(self)
        ballast = cluster.fill_disk(self.broker_id)
        return f"broker {self.broker_id} ({ballast >> 20} MiB ballast)"

    def heal(self, cluster: FaultCluster) -> None:
        _untrack(cluster, self)
        if self.broker_id is not None:
            cluster.free_disk(self.broker_id)
            if not cluster.broker_running(self.broker_id):
                cluster.restart_broker(self.broker_id)


@dataclass(eq=False)
class ClockSkew:
    """One broker restarted under libfaketime, its wall clock ``skew_s`` off (either way);
    heal restarts it with the true clock."""

    rng: random.Random
    skew_s: float = DEFAULT_SKEW_S
    kind: str = "clock-skew"
    broker_id: int | None = None
    applied_skew_s: float = 0.0

    def apply(self, cluster: FaultCluster) -> str:
        self.broker_id = pick_broker(self.rng, cluster)
        self.applied_skew_s = self.rng.choice((-1.0, 1.0)) * self.skew_s
        cluster.active_faults.append(self)
        cluster.skew_clock(self.broker_id, self.applied_skew_s)
        return f"broker {self.broker_id} ({self.applied_skew_s:+.0f} s)"

    def heal(self, cluster: FaultCluster) -> None:
        _untrack(cluster, self)
        if self.broker_id is not None and self.broker_id in cluster.skewed_brokers():
            cluster.unskew_clock(self.broker_id)


# --- choice ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultOptions:
    """Tunables of the faults ``make_fault`` builds."""

    skew_s: float = DEFAULT_SKEW_S
    session_wait_s: float = 60.0


def make_fault(kind: str, rng: random.Random, options: FaultOptions | None = None) -> Fault:
    """A fresh fault of ``kind`` that picks its target with ``rng`` when applied.

    Raises:
        ValueError: an unknown kind.
    """
    options = options or FaultOptions()
    if kind in KILL_BROKER_KINDS:
        return KillBroker(kind, rng)
    if kind == "pause-past-session":
        return PausePastSession(rng, options.session_wait_s)
    if kind == "kill-zookeeper":
        return KillZooKeeper(rng)
    if kind == "partition-one":
        return PartitionOne(rng)
    if kind == "leader-cut-from-followers":
        return LeaderCutFromFollowers(rng)
    if kind == "broker-cut-from-zookeeper":
        return BrokerCutFromZooKeeper(rng)
    if kind == "full-disk":
        return FullDisk(rng)
    if kind == "clock-skew":
        return ClockSkew(rng, options.skew_s)
    if kind in FAULT_KINDS:
        raise ValueError(f"fault kind {kind!r} is not available on this cluster")
    raise ValueError(f"unknown fault kind {kind!r} (known: {', '.join(FAULT_KINDS)})")


def available_faults(cluster: FaultCluster) -> dict[str, str | None]:
    """Every fault kind → ``None`` when it can be injected here, else the reason it is
    skipped."""
    available: dict[str, str | None] = dict.fromkeys(FAULT_KINDS)
    if len(cluster.broker_ids) < 2:
        for kind in (*KILL_BROKER_KINDS, "pause-past-session"):
            available[kind] = "needs at least 2 brokers (a survivor to take over)"
    if cluster.zookeeper_count < 3:
        available["kill-zookeeper"] = "needs a ZooKeeper ensemble of at least 3 nodes"
    unavailable = cluster.unavailable if cluster.isolation != "not started" else {}
    if "network" in unavailable or cluster.isolation.startswith("loopback"):
        reason = f"needs network namespaces ({unavailable.get('network', cluster.isolation)})"
        for kind in NETWORK_KINDS:
            available[kind] = reason
    elif "nftables" in unavailable:
        for kind in ("leader-cut-from-followers", "broker-cut-from-zookeeper"):
            available[kind] = f"needs nftables ({unavailable['nftables']})"
    if cluster.disk_bytes is None:
        available["full-disk"] = "no tmpfs log directories (disk_bytes=None)"
    elif "disk" in unavailable:
        available["full-disk"] = f"needs a tmpfs ({unavailable['disk']})"
    if "faketime" in unavailable:
        available["clock-skew"] = unavailable["faketime"]
    if cluster.isolation == "not started" or "slow-disk" in unavailable:
        available["slow-disk"] = unavailable.get("slow-disk", "not probed (cluster not started)")
    return available


def _restore_traffic(
    cluster: FaultCluster,
    fault: object,
    broker_id: int | None,
    handle: str | None,
    *,
    since: float | None = None,
) -> None:
    """Heals a traffic-dropping fault: its rules lifted, then the broker settled (its
    session may have expired meanwhile; ``since``: when it may have begun to)."""
    _untrack(cluster, fault)
    if broker_id is not None and handle is not None:
        cluster.restore_traffic(broker_id, handle)
        settle(cluster, broker_id, since=since)


def _untrack(cluster: FaultCluster, fault: object) -> None:
    for index, active in enumerate(cluster.active_faults):
        if active is fault:
            del cluster.active_faults[index]
            return


__all__ = [
    "FAULT_KINDS",
    "BrokerCutFromZooKeeper",
    "ClockSkew",
    "Fault",
    "FaultOptions",
    "FullDisk",
    "KillBroker",
    "KillZooKeeper",
    "LeaderCutFromFollowers",
    "PartitionOne",
    "PausePastSession",
    "available_faults",
    "make_fault",
    "settle",
]

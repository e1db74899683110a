"""Real Apache ZooKeeper servers for tests: one standalone node or an ensemble on loopback.

Uses Debian's ``zookeeper`` package (3.8; ``scripts/system-packages.txt``), started with
``java ... QuorumPeerMain zoo.cfg`` on free 127.0.0.1 ports in a directory the caller owns:
``<base>/zk<id>/`` holds ``zoo.cfg``, the data directory (with ``myid``) and the server's output
in ``zookeeper.log``.

Readiness: each node answers the four-letter word ``ruok`` with ``imok`` (the config allows
``ruok`` and ``srvr`` only); an ensemble is ready once one node's ``srvr`` reports
``Mode: leader``. ``tickTime`` is 500 ms by default, so sessions as short as 1 s are allowed
(the server bounds session timeouts to 2–120 ticks here).

Contract: ``stop`` ends every process this object started — SIGTERM, then SIGKILL after a grace
period — by its PID, never by name. ``kill(i)``, ``stop_node(i)``, ``pause(i)`` and
``start_node(i)`` act on one node for fault tests. Not thread-safe: one test drives it.

Nodes may run elsewhere than on loopback (``odradek.testing.faults`` puts each in a network
namespace): ``hosts`` gives each node the address it binds and is reached at, and
``command_prefixes`` what goes before its command line (``ip netns exec NAME``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from odradek.testing.serve import stop_process

CLASSPATH = ":".join(
    (
        "/etc/zookeeper/conf",
        "/usr/share/java/zookeeper.jar",
        "/usr/share/java/slf4j-simple.jar",
    )
)
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEFAULT_TICK_TIME_MS = 500
_STOP_GRACE_S = 10.0
_POLL_S = 0.05


class ZooKeeperError(RuntimeError):
    """A ZooKeeper server did not start, or is not installed."""


def zookeeper_installed() -> bool:
    """Whether Debian's ``zookeeper`` package (its jar) and ``java`` are present."""
    return os.path.exists(ZOOKEEPER_JAR) and _which("java") is not None


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago (bound together, then
    released, so no two are the same)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def four_letter_word(port: int, word: str, timeout_s: float = 2.0, host: str = "127.0.0.1") -> str:
    """Sends a four-letter word (``ruok``, ``srvr``) to ``host:port``; returns the answer
    ("" when the server is not answering)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(word.encode("ascii"))
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return ""
    return b"".join(chunks).decode("utf-8", "replace")


@dataclass(slots=True)
class ZooKeeperNode:
    """One server of the ensemble: its id, ports and directory, and its process if running."""

    server_id: int
    client_port: int
    quorum_port: int
    election_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None
    #: Whether the node should be running (false after ``kill``/``stop_node`` until restarted).
    wanted: bool = False
    host: str = "127.0.0.1"
    command_prefix: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.client_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def mode(self) -> str | None:
        """``leader``, ``follower``, ``standalone`` (from ``srvr``), or ``None`` when the node
        is not serving."""
        for line in four_letter_word(self.client_port, "srvr", host=self.host).splitlines():
            if line.startswith("Mode:"):
                return line.partition(":")[2].strip()
        return None


class ZooKeeperEnsemble:
    """``size`` ZooKeeper servers (1: standalone) under ``base_dir``; see the module docstring.

    Usable as a context manager (``start`` on enter, ``stop`` on exit).
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        size: int = 1,
        *,
        tick_time_ms: int = DEFAULT_TICK_TIME_MS,
        heap_mb: int = 128,
        hosts: Sequence[str] | None = None,
        command_prefixes: Sequence[Sequence[str]] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"an ensemble needs at least one node, got {size}")
        hosts = list(hosts) if hosts is not None else ["127.0.0.1"] * size
        prefixes = [tuple(p) for p in command_prefixes] if command_prefixes else [()] * size
        if len(hosts) != size or len(prefixes) != size:
            raise ValueError(f"need {size} hosts and command prefixes")
        self.base_dir = Path(base_dir)
        self.tick_time_ms = tick_time_ms
        self.heap_mb = heap_mb
        ports = free_ports(3 * size)
        self.nodes = [
            ZooKeeperNode(
                server_id=index + 1,
                client_port=ports[3 * index],
                quorum_port=ports[3 * index + 1],
                election_port=ports[3 * index + 2],
                directory=self.base_dir / f"zk{index + 1}",
                host=hosts[index],
                command_prefix=prefixes[index],
            )
            for index in range(size)
        ]
        for node in self.nodes:
            self._write_config(node)

    @property
    def connect_string(self) -> str:
        """``zookeeper.connect`` for the whole ensemble (``host:port,...``, no chroot)."""
        return ",".join(node.address for node in self.nodes)

    def start(self, timeout_s: float = 60.0) -> ZooKeeperEnsemble:
        """Starts every node and waits until the ensemble serves.

        Raises:
            ZooKeeperError: not installed, a node exited, or not serving in ``timeout_s``
                (everything started is stopped first).
        """
        if not zookeeper_installed():
            raise ZooKeeperError(
                f"ZooKeeper is not installed ({ZOOKEEPER_JAR} or java missing): "
                "apt-get install --no-install-recommends zookeeper (scripts/bootstrap does)"
            )
        try:
            for node in self.nodes:
                self._spawn(node)
            self.wait_serving(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_serving(self, timeout_s: float = 60.0) -> None:
        """Waits until every node that should run answers ``imok`` and serves (``srvr``
        names its mode), and one node is the leader (or standalone).

        Raises:
            ZooKeeperError: a node exited or the deadline passed.
        """
        deadline = time.monotonic() + timeout_s
        running = [node for node in self.nodes if node.wanted]
        while True:
            for node in running:
                if not node.running:
                    raise ZooKeeperError(
                        f"ZooKeeper node {node.server_id} exited; see "
                        f"{node.directory / 'zookeeper.log'}"
                    )
            # ``ruok`` answers as soon as the process runs; ``srvr`` names a mode only once
            # the node serves (an ensemble node: once it has joined a quorum).
            ready = all(
                four_letter_word(node.client_port, "ruok", host=node.host) == "imok"
                and node.mode() is not None
                for node in running
            )
            if ready and self.leader() is not None:
                return
            if time.monotonic() > deadline:
                raise ZooKeeperError(f"ZooKeeper ({self.connect_string}) not serving in time")
            time.sleep(_POLL_S)

    def leader(self) -> ZooKeeperNode | None:
        """The node whose ``srvr`` says ``leader`` (standalone: the node), if any."""
        for node in self.nodes:
            if node.running and node.mode() in ("leader", "standalone"):
                return node
        return None

    # --- faults ----------------------------------------------------------------------------

    def kill(self, index: int, sig: signal.Signals = signal.SIGKILL) -> None:
        """Sends ``sig`` to node ``index`` (0-based); with SIGKILL, waits for its exit."""
        node = self.nodes[index]
        if node.process is None or not node.running:
            return
        node.process.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            node.wanted = False
        if sig == signal.SIGKILL:
            node.process.wait()

    def pause(self, index: int, timeout_s: float = 10.0) -> None:
        """SIGSTOP node ``index`` and wait until the kernel shows it stopped (the signal is
        delivered asynchronously); ``resume`` continues it."""
        self.kill(index, signal.SIGSTOP)
        process = self.nodes[index].process
        deadline = time.monotonic() + timeout_s
        while process is not None and _process_state(process.pid) not in ("T", "t", None):
            if time.monotonic() > deadline:
                raise ZooKeeperError(f"ZooKeeper node {index + 1} did not stop in time")
            time.sleep(_POLL_S / 5)

    def resume(self, index: int) -> None:
        self.kill(index, signal.SIGCONT)

    def stop_node(self, index: int) -> None:
        """Stops node ``index`` (SIGTERM, then SIGKILL after a grace period)."""
        self.nodes[index].wanted = False
        _terminate(self.nodes[index])

    def start_node(self, index: int, timeout_s: float = 60.0) -> None:
        """(Re)starts a stopped node ``index`` with its data and waits until it answers
        ``imok`` (an ensemble node: until the ensemble has a leader again)."""
        node = self.nodes[index]
        if node.running:
            return
        self._spawn(node)
        self.wait_serving(timeout_s)

    # --- lifecycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Stops every node this object started (SIGCONT first, so paused nodes can exit)."""
        for node in self.nodes:
            if node.running and node.process is not None:
                node.process.send_signal(signal.SIGCONT)
                node.process.send_signal(signal.SIGTERM)
        for node in self.nodes:
            node.wanted = False
            _terminate(node)

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- internals -------------------------------------------------------------------------

    def _write_config(self, node: ZooKeeperNode) -> None:
        data_dir = node.directory / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_time_ms}",
            "initLimit=20",
            "syncLimit=10",
            f"dataDir={data_dir}",
            f"clientPort={node.client_port}",
            f"clientPortAddress={node.host}",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            f"maxSessionTimeout={120 * self.tick_time_ms}",
            "autopurge.purgeInterval=0",
        ]
        if len(self.nodes) > 1:
            (data_dir / "myid").write_text(f"{node.server_id}\n")
            lines += [
                f"server.{other.server_id}={other.host}:{other.quorum_port}:{other.election_port}"
                for other in self.nodes
            ]
        (node.directory / "zoo.cfg").write_text("\n".join(lines) + "\n")

    def _spawn(self, node: ZooKeeperNode) -> None:
        command = [
            *node.command_prefix,
            "java",
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            CLASSPATH,
            MAIN_CLASS,
            str(node.directory / "zoo.cfg"),
        ]
        node.wanted = True
        with open(node.directory / "zookeeper.log", "ab") as log:
            # A fixed program with arguments we built; no shell.
            node.process = subprocess.Popen(  # noqa: S603
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=node.directory,
            )


def _terminate(node: ZooKeeperNode) -> None:
    process = node.process
    if process is None:
        return
    stop_process(process, _STOP_GRACE_S)


def _process_state(pid: int) -> str | None:
    """The state letter of ``/proc/<pid>/stat`` (``T``: stopped), ``None`` if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _which(program: str) -> str | None:
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(directory, program)
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def start_ensemble(base_dir: str | os.PathLike[str], size: int = 1) -> ZooKeeperEnsemble:
    """A started ensemble of ``size`` nodes under ``base_dir`` (``stop`` it when done)."""
    return ZooKeeperEnsemble(base_dir, size).start()


__all__: Sequence[str] = (
    "ZooKeeperEnsemble",
    "ZooKeeperError",
    "ZooKeeperNode",
    "four_letter_word",
    "free_ports",
    "start_ensemble",
    "zookeeper_installed",
)

"""Test hosts in network namespaces on one machine, and the network faults between them.

Layout (``Network.create``), for a per-run ``token`` (6 hex digits) and a /24 ``subnet``
chosen at random in 10.0.0.0/8 among those no route or address of the machine overlaps:

- one bridge namespace ``odk-<token>-br`` holding a bridge device ``br0``;
- per test host (``broker-0``, ``zk-1``, ...) a namespace ``odk-<token>-<host>`` whose
  ``eth0`` is one end of a veth pair, the other end (``p<i>``) enslaved to the bridge; the host
  gets ``<subnet>.<i + 2>``;
- a host-side veth ``od<token>h`` in the namespace the test runs in, addressed
  ``<subnet>.1``, its peer on the bridge: the test process reaches every test host directly.

Only the host-side veth has a name in the test's own namespace (9 characters); every other
interface is created inside its per-run namespace, so concurrent runs never collide.

Faults: ``set_link(host, up)`` takes a host's bridge port down (the host is cut off from
everything, the test process included); ``drop(host, peers)`` installs nftables rules inside the
host's namespace that drop its traffic to and from ``peers`` (a partial partition; other
traffic flows), each fault its own table so that several can be active and lifted one by one.

Contract: ``teardown`` deletes every namespace and the host-side veth this object created
(deleting a namespace deletes its interfaces and rules), tolerating what is already gone; it
runs after a ``create`` that failed halfway. ``probe_namespaces`` and ``probe_nftables`` say
why these cannot be used here (``None``: they can). Needs root (CAP_NET_ADMIN).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

_log = logging.getLogger(__name__)

_CANDIDATE_SPACE = ipaddress.IPv4Network("10.0.0.0/8")
_TABLE_PREFIX = "odradek_fault_"
_COMMAND_TIMEOUT_S = 30.0


class NetnsError(RuntimeError):
    """A namespace, interface or rule could not be made (the message has the command and its
    error output)."""


@dataclass(frozen=True, slots=True)
class TestHost:
    """One test host: its name, namespace, address and the bridge port of its veth."""

    __test__ = False  # not a pytest class

    name: str
    namespace: str
    address: str
    bridge_port: str

    @property
    def command_prefix(self) -> tuple[str, ...]:
        """What runs a command inside the host's namespace (``ip netns exec`` execs the
        command, so its PID is the command's)."""
        return ("ip", "netns", "exec", self.namespace)


def run(command: Sequence[str], *, stdin: str | None = None, check: bool = True) -> str:
    """Runs an ``ip``/``nft`` command; returns its output.

    Raises:
        NetnsError: it failed (with ``check``) or is missing.
    """
    try:
        # Fixed programs (ip, nft) with arguments we built; no shell.
        result = subprocess.run(  # noqa: S603
            list(command),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=_COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NetnsError(f"{' '.join(command)}: {error}") from error
    if check and result.returncode != 0:
        raise NetnsError(f"{' '.join(command)}: {result.stderr.strip() or result.returncode}")
    return result.stdout


def probe_namespaces() -> str | None:
    """``None`` when network namespaces, veth pairs and bridges can be made here, else why
    not (tries one namespace with a bridge, then removes it)."""
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is missing"
    if os.geteuid() != 0:
        return "not root (network namespaces need CAP_NET_ADMIN)"
    name = f"odk-probe-{os.getpid()}-{random.randrange(1 << 24):06x}"
    try:
        run(["ip", "netns", "add", name])
    except NetnsError as error:
        return f"cannot create a network namespace ({error})"
    try:
        run(["ip", "-n", name, "link", "add", "br0", "type", "bridge"])
        run(["ip", "-n", name, "link", "add", "v0", "type", "veth", "peer", "name", "v1"])
    except NetnsError as error:
        return f"cannot create a bridge or veth pair in a namespace ({error})"
    finally:
        run(["ip", "netns", "delete", name], check=False)
    return None


def probe_nftables() -> str | None:
    """``None`` when nftables rules can be installed in a namespace, else why not."""
    if shutil.which("nft") is None:
        return "nft is missing (apt-get install nftables; scripts/system-packages.txt)"
    name = f"odk-probe-{os.getpid()}-{random.randrange(1 << 24):06x}"
    try:
        run(["ip", "netns", "add", name])
    except NetnsError as error:
        return f"cannot create a network namespace ({error})"
    try:
        run(["ip", "netns", "exec", name, "nft", "add", "table", "inet", "probe"])
    except NetnsError as error:
        return f"nftables does not work in a namespace ({error})"
    finally:
        run(["ip", "netns", "delete", name], check=False)
    return None


def used_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks this machine routes or has addresses in (every routing table)."""
    networks: list[ipaddress.IPv4Network] = []
    lines = run(["ip", "-4", "-o", "addr", "show"]).splitlines()
    lines += run(["ip", "-4", "route", "show", "table", "all"]).splitlines()
    for line in lines:
        for word in line.split():
            if word[0].isdigit() and ("/" in word or word.count(".") == 3):
                try:
                    network = ipaddress.ip_network(word, strict=False)
                except ValueError:
                    continue
                if isinstance(network, ipaddress.IPv4Network):
                    networks.append(network)
    return networks


def choose_subnet(rng: random.Random, used: Sequence[ipaddress.IPv4Network]) -> str:
    """A /24 in 10.0.0.0/8 that overlaps none of ``used``.

    Raises:
        NetnsError: 1,000 draws all overlapped.
    """
    for _ in range(1000):
        candidate = ipaddress.IPv4Network(
            f"10.{rng.randrange(1, 255)}.{rng.randrange(0, 256)}.0/24"
        )
        assert candidate.subnet_of(_CANDIDATE_SPACE)
        if not any(candidate.overlaps(network) for network in used):
            return str(candidate)
    raise NetnsError("no free /24 in 10.0.0.0/8")


class Network:
    """The bridge, the test hosts and the host-side veth of one run; see the module
    docstring.

    Args:
        token: the per-run token in every name (6 hex digits keep names short).
        host_names: the test hosts, in address order.
        subnet: the /24 to use (default: a random unused one).
    """

    def __init__(self, token: str, host_names: Sequence[str], subnet: str | None = None) -> None:
        if len(host_names) > 250:
            raise ValueError("at most 250 test hosts fit in a /24")
        self.token = token
        self.subnet = subnet or choose_subnet(random.Random(), used_networks())
        prefix = self.subnet.rsplit(".", 1)[0]
        self.gateway = f"{prefix}.1"
        self.bridge_namespace = f"odk-{token}-br"
        self.host_veth = f"od{token}h"
        self.hosts = {
            name: TestHost(name, f"odk-{token}-{name}", f"{prefix}.{index + 2}", f"p{index}")
            for index, name in enumerate(host_names)
        }
        self._namespaces: list[str] = []
        self._host_veth_made = False
        self._tables: dict[str, list[str]] = {name: [] for name in host_names}
        self._serial = 0

    # --- lifecycle -------------------------------------------------------------------------

    def create(self) -> Network:
        """Makes the namespaces, the bridge and every veth pair.

        Raises:
            NetnsError: a step failed (what was made is torn down first).
        """
        try:
            self._add_namespace(self.bridge_namespace)
            bridge = ["ip", "-n", self.bridge_namespace]
            run([*bridge, "link", "add", "br0", "type", "bridge"])
            run([*bridge, "link", "set", "br0", "up"])
            for host in self.hosts.values():
                self._add_namespace(host.namespace)
                inside = ["ip", "-n", host.namespace]
                run([*inside, "link", "set", "lo", "up"])
                run(
                    [
                        *inside,
                        "link",
                        "add",
                        "eth0",
                        "type",
                        "veth",
                        "peer",
                        "name",
                        host.bridge_port,
                        "netns",
                        self.bridge_namespace,
                    ]
                )
                run([*inside, "addr", "add", f"{host.address}/24", "dev", "eth0"])
                run([*inside, "link", "set", "eth0", "up"])
                run([*bridge, "link", "set", host.bridge_port, "master", "br0", "up"])
            run(
                [
                    "ip",
                    "link",
                    "add",
                    self.host_veth,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "gw",
                    "netns",
                    self.bridge_namespace,
                ]
            )
            self._host_veth_made = True
            run(["ip", "addr", "add", f"{self.gateway}/24", "dev", self.host_veth])
            run(["ip", "link", "set", self.host_veth, "up"])
            run([*bridge, "link", "set", "gw", "master", "br0", "up"])
        except BaseException:
            self.teardown()
            raise
        _log.info("network %s: %d test hosts on %s", self.token, len(self.hosts), self.subnet)
        return self

    def teardown(self) -> None:
        """Deletes the host-side veth and every namespace made (their interfaces and rules
        go with them). Idempotent."""
        if self._host_veth_made:
            run(["ip", "link", "delete", self.host_veth], check=False)
            self._host_veth_made = False
        while self._namespaces:
            namespace = self._namespaces.pop()
            run(["ip", "netns", "delete", namespace], check=False)

    def leftovers(self) -> list[str]:
        """The namespaces and the host-side veth of this run that still exist (after
        ``teardown``: none)."""
        names = [line.split()[0] for line in run(["ip", "netns", "list"]).splitlines() if line]
        left = [name for name in names if name.startswith(f"odk-{self.token}-")]
        if run(["ip", "link", "show", self.host_veth], check=False):
            left.append(self.host_veth)
        return left

    # --- faults ----------------------------------------------------------------------------

    def set_link(self, host: str, up: bool) -> None:
        """Takes the host's port on the bridge down (cut off from everyone) or up again."""
        port = self.hosts[host].bridge_port
        run(["ip", "-n", self.bridge_namespace, "link", "set", port, "up" if up else "down"])

    def drop(self, host: str, peers: Sequence[str]) -> str:
        """Drops, inside ``host``'s namespace, every packet to or from ``peers`` (addresses);
        returns the rule table's name for ``lift``."""
        if not peers:
            raise ValueError("drop needs at least one peer address")
        self._serial += 1
        table = f"{_TABLE_PREFIX}{self._serial}"
        addresses = ", ".join(peers)
        script = (
            f"table inet {table} {{\n"
            "  chain input { type filter hook input priority -10; policy accept;\n"
            f"    ip saddr {{ {addresses} }} drop\n  }}\n"
            "  chain output { type filter hook output priority -10; policy accept;\n"
            f"    ip daddr {{ {addresses} }} drop\n  }}\n"
            "}\n"
        )
        run([*self.hosts[host].command_prefix, "nft", "-f", "-"], stdin=script)
        self._tables[host].append(table)
        return table

    def lift(self, host: str, table: str) -> None:
        """Removes one ``drop`` (no-op if already gone)."""
        if table in self._tables[host]:
            self._tables[host].remove(table)
        run(
            [*self.hosts[host].command_prefix, "nft", "delete", "table", "inet", table], check=False
        )

    def rules(self, host: str) -> list[str]:
        """The fault tables active in ``host``'s namespace."""
        return list(self._tables[host])

    def heal_all(self) -> None:
        """Every bridge port up, every drop lifted."""
        for name, tables in self._tables.items():
            for table in list(tables):
                self.lift(name, table)
            self.set_link(name, up=True)

    def _add_namespace(self, name: str) -> None:
        run(["ip", "netns", "add", name])
        self._namespaces.append(name)

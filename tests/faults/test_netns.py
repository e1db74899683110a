"""The subnet choice of the namespaced test network (pure), and the host-side names it
makes."""

from __future__ import annotations

import ipaddress
import random

import pytest

from odradek.testing.faults.netns import NetnsError, Network, choose_subnet


def test_the_subnet_overlaps_nothing_the_machine_routes() -> None:
    used = [
        ipaddress.IPv4Network("10.0.0.0/9"),  # 10.0-10.127
        ipaddress.IPv4Network("10.128.0.0/10"),  # 10.128-10.191
        ipaddress.IPv4Network("10.200.0.0/24"),
    ]
    chosen = {choose_subnet(random.Random(seed), used) for seed in range(30)}
    for subnet in chosen:
        network = ipaddress.IPv4Network(subnet)
        assert network.prefixlen == 24
        assert network.subnet_of(ipaddress.IPv4Network("10.192.0.0/10"))
        assert not any(network.overlaps(u) for u in used)
    assert len(chosen) > 1  # drawn at random, not a fixed choice


def test_no_free_subnet_is_an_error() -> None:
    with pytest.raises(NetnsError, match="no free /24"):
        choose_subnet(random.Random(0), [ipaddress.IPv4Network("10.0.0.0/8")])


def test_names_carry_the_run_token_and_fit_interface_limits() -> None:
    network = Network("a1b2c3", ["zk1", "zk2", "b0", "b1"], subnet="10.9.8.0/24")
    assert network.gateway == "10.9.8.1"
    assert len(network.host_veth) <= 15
    assert "a1b2c3" in network.host_veth
    assert [h.address for h in network.hosts.values()] == [f"10.9.8.{i}" for i in (2, 3, 4, 5)]
    assert all(h.namespace.startswith("odk-a1b2c3-") for h in network.hosts.values())
    assert network.hosts["b1"].command_prefix == ("ip", "netns", "exec", "odk-a1b2c3-b1")
    network.teardown()  # nothing was made: nothing to remove, no error

"""What an ACL check costs a handler, in one process, in the same run.

Cases, each the best of ``--rounds`` rounds of ``--checks`` calls of
``broker.auth.checks.topic_allowed`` (what Produce calls per topic), in ns per check:

- *no authorizer*: ``authorizer.class.name`` empty, the baseline (one attribute test);
- *cached*: an authorizer holding ``--acls`` ACLs (literal topics, prefixes, a wildcard) and
  the decision in its cache, as for every request after a connection's first;
- *uncached*: the same decision with the cache cleared before each check (a new principal,
  topic or host, or the first check after an ACL change): the match over the ACLs that apply.

Ratios are against the baseline, measured in the same run (the machine is shared).

    .venv/bin/python bench/acl_authorizer.py [--acls 1000] [--checks 200000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextvars
import time
from collections.abc import Callable
from typing import Any

from odradek._clock import MockClock
from odradek.broker.auth.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.broker.auth.authorizer import AclAuthorizer, AuthorizerConfig
from odradek.broker.auth.checks import Op, topic_allowed
from odradek.broker.config import BrokerConfig
from odradek.broker.context import CLIENT_HOST, BrokerContext
from odradek.broker.principal import CLIENT_PRINCIPAL, KafkaPrincipal


def _context() -> BrokerContext:
    none: Any = None
    return BrokerContext(
        config=BrokerConfig.from_mapping({"log.dirs": "/nonexistent"}),
        cluster_id="bench",
        broker_id=0,
        replicas=none,
        topics=none,
        purgatory=none,
        clock=MockClock(),
    )


def _authorizer(count: int) -> AclAuthorizer:
    authorizer = AclAuthorizer(AuthorizerConfig(enabled=True))
    acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
    for index in range(count):
        pattern_type = PatternType.PREFIXED if index % 10 == 0 else PatternType.LITERAL
        pattern = ResourcePattern(ResourceType.TOPIC, f"team-{index}-", pattern_type)
        acls[pattern] = frozenset(
            {
                AccessControlEntry(
                    f"User:u{index}", "*", AclOperation.WRITE, AclPermissionType.ALLOW
                ),
                AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
            }
        )
    acls[ResourcePattern(ResourceType.TOPIC, "*")] = frozenset(
        {AccessControlEntry("User:ops", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)}
    )
    acls[ResourcePattern(ResourceType.TOPIC, "orders")] = frozenset(
        {AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)}
    )
    authorizer.replace_all(acls)
    return authorizer


def _best_ns(call: Callable[[], object], checks: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(checks):
            call()
        best = min(best, (time.perf_counter_ns() - start) / checks)
    return best


def run(args: argparse.Namespace) -> None:
    plain = _context()
    secured = _context()
    secured.authorizer = _authorizer(args.acls)
    authorizer = secured.authorizer

    def cached() -> object:
        return topic_allowed(secured, Op.WRITE, "orders")

    def uncached() -> object:
        authorizer._cache = {}
        return topic_allowed(secured, Op.WRITE, "orders")

    cases = {
        "no authorizer": lambda: topic_allowed(plain, Op.WRITE, "orders"),
        "cached": cached,
        f"uncached ({args.acls} ACLs)": uncached,
    }
    assert cached()
    assert uncached()
    results = {name: _best_ns(call, args.checks, args.rounds) for name, call in cases.items()}
    baseline = results["no authorizer"]
    print(f"{'case':<26} {'ns/check':>9} {'x baseline':>11}")
    for name, ns in results.items():
        print(f"{name:<26} {ns:9.0f} {ns / baseline:11.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acls", type=int, default=1000)
    parser.add_argument("--checks", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    def in_request() -> None:
        CLIENT_PRINCIPAL.set(KafkaPrincipal("User", "alice"))
        CLIENT_HOST.set("/127.0.0.1")
        run(args)

    contextvars.copy_context().run(in_request)


if __name__ == "__main__":
    main()

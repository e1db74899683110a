"""Faults chosen from a seed, and the timeline of what was applied and healed when.

``choose_fault`` draws one fault kind uniformly among those ``available_faults`` allows (and the
caller asks for), from the caller's ``random.Random`` — the same seed, the same cluster
capabilities and the same calls give the same kinds, and the faults pick their targets from the
same generator. ``Timeline`` records ``FaultEvent`` lines (seconds since the timeline began,
kind, target, ``apply`` or ``heal``) as ``apply``/``heal`` go through it, for the report and
for replaying a failing run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from odradek.testing.faults.cluster import FaultCluster
from odradek.testing.faults.injectors import Fault, FaultOptions, available_faults, make_fault


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """One line of the timeline."""

    at_s: float
    kind: str
    target: str
    action: str  # "apply" | "heal"

    def __str__(self) -> str:
        return f"{self.at_s:9.3f}s  {self.action:<5}  {self.kind:<26} {self.target}"


class NoFaultAvailableError(RuntimeError):
    """None of the kinds asked for can be injected on this cluster."""


def choose_fault(
    rng: random.Random,
    cluster: FaultCluster,
    kinds: Sequence[str] | None = None,
    options: FaultOptions | None = None,
) -> Fault:
    """A fault of a kind drawn from ``kinds`` (default: every kind) that is available here.

    Raises:
        NoFaultAvailableError: none of ``kinds`` is available (the reasons are in the message).
        ValueError: an unknown kind in ``kinds``.
    """
    available = available_faults(cluster)
    wanted = list(kinds) if kinds is not None else list(available)
    unknown = [kind for kind in wanted if kind not in available]
    if unknown:
        raise ValueError(f"unknown fault kinds: {', '.join(unknown)}")
    usable = sorted(kind for kind in wanted if available[kind] is None)
    if not usable:
        reasons = "; ".join(f"{kind}: {available[kind]}" for kind in wanted)
        raise NoFaultAvailableError(f"no fault kind available ({reasons})")
    return make_fault(rng.choice(usable), rng, options)


class Timeline:
    """The faults applied and healed, with times since the timeline was made.

    Args:
        clock: monotonic seconds (injected for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._start = clock()
        self.events: list[FaultEvent] = []
        self._targets: dict[int, str] = {}

    def apply(self, fault: Fault, cluster: FaultCluster) -> FaultEvent:
        """Applies ``fault`` and records it (the event's time is when the apply began)."""
        at_s = self._clock() - self._start
        target = fault.apply(cluster)
        self._targets[id(fault)] = target
        event = FaultEvent(at_s, fault.kind, target, "apply")
        self.events.append(event)
        return event

    def heal(self, fault: Fault, cluster: FaultCluster) -> FaultEvent:
        """Heals ``fault`` and records it."""
        at_s = self._clock() - self._start
        fault.heal(cluster)
        event = FaultEvent(at_s, fault.kind, self._targets.pop(id(fault), "?"), "heal")
        self.events.append(event)
        return event

    def render(self) -> str:
        """The timeline, one event a line."""
        return "\n".join(str(event) for event in self.events)

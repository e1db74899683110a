"""Exponential backoff with jitter, as Kafka's clients compute it (KIP-144, KIP-580).

``backoff_ms(initial, maximum, attempts)`` is ``min(initial * 2**attempts, maximum)`` scaled by a
random factor in ``[1 - jitter, 1 + jitter]`` (jitter 0.2, so clients that lost the same broker
do not all come back at the same millisecond), and never above ``maximum`` nor below zero.
``attempts`` counts the failures before this wait, starting at 0. Pure; the random source may
be injected for tests.
"""

from __future__ import annotations

import random
from typing import Final

__all__ = ["JITTER", "backoff_ms"]

#: Kafka's ``ExponentialBackoff`` jitter for reconnect, retry and connection setup waits.
JITTER: Final = 0.2
_MAX_SHIFT: Final = 32


def backoff_ms(
    initial_ms: int,
    maximum_ms: int,
    attempts: int,
    *,
    jitter: float = JITTER,
    rng: random.Random | None = None,
) -> int:
    """The wait after ``attempts`` earlier failures (0 for the first wait).

    A ``maximum_ms`` below ``initial_ms`` caps the wait at ``initial_ms`` (Kafka takes the
    larger of the two as the cap).
    """
    if initial_ms <= 0:
        return 0
    cap = max(initial_ms, maximum_ms)
    term = min(initial_ms * (1 << min(max(attempts, 0), _MAX_SHIFT)), cap)
    if jitter > 0:
        factor = (rng or random).uniform(1 - jitter, 1 + jitter)
        term = int(term * factor)
    return max(0, min(term, cap))

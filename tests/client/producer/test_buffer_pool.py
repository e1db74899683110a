"""``producer.buffer_pool``: reservations within ``buffer.memory``, waiting for memory freed by
another thread, ``max.block.ms`` expiry on an injected clock, FIFO service, close."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from odradek._clock import MockClock
from odradek.client.producer.buffer_pool import BufferPool
from odradek.errors import KafkaTimeoutError, ProducerClosedError


def start(target: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    event = threading.Event()
    deadline = 0.0
    while not condition():
        assert deadline < timeout_s, "condition not reached"
        event.wait(0.005)
        deadline += 0.005


def test_allocate_and_deallocate() -> None:
    pool = BufferPool(100, MockClock())
    pool.allocate(60, 0)
    pool.allocate(40, 0)
    assert pool.available_bytes == 0
    with pytest.raises(KafkaTimeoutError, match=r"max\.block\.ms"):
        pool.allocate(1, 0)
    pool.deallocate(100)
    assert pool.available_bytes == 100
    with pytest.raises(ValueError, match=r"buffer\.memory"):
        pool.allocate(101, 0)


def test_waits_until_memory_is_freed() -> None:
    pool = BufferPool(100, MockClock())
    pool.allocate(100, 0)
    thread, errors = start(lambda: pool.allocate(30, 60_000))
    wait_for(lambda: pool.queued == 1)
    pool.deallocate(30)
    thread.join(5)
    assert not thread.is_alive()
    assert not errors
    assert pool.available_bytes == 0


def test_times_out_on_the_injected_clock() -> None:
    clock = MockClock()
    pool = BufferPool(100, clock)
    pool.allocate(100, 0)
    thread, errors = start(lambda: pool.allocate(10, 1_000))
    wait_for(lambda: pool.queued == 1)
    clock.advance(999)
    pool.wake_all()
    thread.join(0.05)
    assert thread.is_alive(), "still within max.block.ms"
    clock.advance(1)
    pool.wake_all()
    thread.join(5)
    assert len(errors) == 1
    assert isinstance(errors[0], KafkaTimeoutError)
    assert pool.queued == 0
    assert pool.available_bytes == 0


def test_waiters_are_served_in_arrival_order() -> None:
    pool = BufferPool(100, MockClock())
    pool.allocate(100, 0)
    order: list[str] = []
    big, _ = start(lambda: (pool.allocate(80, 60_000), order.append("big")))
    wait_for(lambda: pool.queued == 1)
    small, _ = start(lambda: (pool.allocate(10, 60_000), order.append("small")))
    wait_for(lambda: pool.queued == 2)
    pool.deallocate(50)  # enough for the small one only: it must not overtake
    small.join(0.05)
    assert order == []
    pool.deallocate(40)
    big.join(5)
    small.join(5)
    assert order == ["big", "small"]


def test_close_fails_waiters() -> None:
    pool = BufferPool(10, MockClock())
    pool.allocate(10, 0)
    thread, errors = start(lambda: pool.allocate(5, 60_000))
    wait_for(lambda: pool.queued == 1)
    pool.close()
    thread.join(5)
    assert isinstance(errors[0], ProducerClosedError)

"""Schedulers: ManualScheduler (due order, periodic tasks, failures, shutdown) on a MockClock,
and ThreadScheduler on the real clock — waiting on events with a timeout, never sleeping."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from odradek._clock import MockClock
from odradek.storage.scheduler import ManualScheduler, ThreadScheduler

WAIT_S = 10.0


def recorder(log: list[str], name: str) -> Callable[[], None]:
    return lambda: log.append(name)


# -- ManualScheduler --------------------------------------------------------------------------


def test_manual_tasks_run_only_when_due_in_due_order() -> None:
    clock = MockClock()
    scheduler = ManualScheduler(clock)
    ran: list[str] = []
    scheduler.schedule("late", recorder(ran, "late"), 300)
    scheduler.schedule("early", recorder(ran, "early"), 100)
    scheduler.schedule("now-1", recorder(ran, "now-1"))
    scheduler.schedule("now-2", recorder(ran, "now-2"), -5)  # a negative delay is now
    assert scheduler.pending() == ["now-1", "now-2", "early", "late"]
    assert scheduler.run_due() == 2
    assert ran == ["now-1", "now-2"]
    clock.advance(99)
    assert scheduler.run_due() == 0
    clock.advance(1_000)
    assert scheduler.run_due() == 2
    assert ran == ["now-1", "now-2", "early", "late"]
    assert scheduler.pending() == []


def test_manual_same_due_time_runs_in_submission_order() -> None:
    clock = MockClock()
    scheduler = ManualScheduler(clock)
    ran: list[str] = []
    for name in ("c", "a", "b"):
        scheduler.schedule(name, recorder(ran, name), 50)
    clock.advance(50)
    scheduler.run_due()
    assert ran == ["c", "a", "b"]


def test_manual_periodic_task_is_rescheduled_from_when_it_ran() -> None:
    clock = MockClock()
    scheduler = ManualScheduler(clock)
    ran: list[int] = []
    scheduler.schedule("tick", lambda: ran.append(clock.monotonic_ms()), 100, period_ms=100)
    clock.advance(100)
    assert scheduler.run_due() == 1  # once per run_due, even though it is periodic
    clock.advance(250)  # two periods late: runs once, next due 100 ms after this run
    assert scheduler.run_due() == 1
    clock.advance(99)
    assert scheduler.run_due() == 0
    clock.advance(1)
    assert scheduler.run_due() == 1
    assert ran == [100, 350, 450]
    assert scheduler.pending() == ["tick"]


def test_manual_a_failing_task_is_logged_and_others_run(caplog: pytest.LogCaptureFixture) -> None:
    clock = MockClock()
    scheduler = ManualScheduler(clock)
    ran: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    scheduler.schedule("boom", boom, 0, period_ms=10)
    scheduler.schedule("after", recorder(ran, "after"))
    assert scheduler.run_due() == 2
    assert ran == ["after"]
    assert "background task boom failed" in caplog.text
    assert scheduler.pending() == ["boom"]  # a failing periodic task keeps its schedule


def test_manual_shutdown_runs_one_off_tasks_and_drops_periodic_ones() -> None:
    clock = MockClock()
    scheduler = ManualScheduler(clock)
    ran: list[str] = []
    scheduler.schedule("periodic", recorder(ran, "periodic"), 10, period_ms=10)
    scheduler.schedule("later", recorder(ran, "later"), 60_000)
    scheduler.schedule("soon", recorder(ran, "soon"), 5)
    scheduler.shutdown()
    assert ran == ["soon", "later"]
    assert scheduler.pending() == []


# -- ThreadScheduler --------------------------------------------------------------------------


@pytest.fixture
def thread_scheduler() -> Iterator[ThreadScheduler]:
    scheduler = ThreadScheduler(name="test-scheduler")
    yield scheduler
    scheduler.shutdown()


def test_thread_runs_a_task(thread_scheduler: ThreadScheduler) -> None:
    done = threading.Event()
    names: list[str] = []
    thread_scheduler.schedule(
        "task", lambda: (names.append(threading.current_thread().name), done.set())
    )
    assert done.wait(WAIT_S)
    assert names == ["test-scheduler"]


def test_thread_runs_tasks_in_due_order(thread_scheduler: ThreadScheduler) -> None:
    ran: list[str] = []
    done = threading.Event()
    gate = threading.Event()
    # Hold the thread so that both tasks are queued before either runs.
    thread_scheduler.schedule("gate", lambda: gate.wait(WAIT_S))
    thread_scheduler.schedule("second", lambda: (ran.append("second"), done.set()), 300)
    thread_scheduler.schedule("first", lambda: ran.append("first"), 0)
    gate.set()
    assert done.wait(WAIT_S)
    assert ran == ["first", "second"]


def test_thread_periodic_task_repeats(thread_scheduler: ThreadScheduler) -> None:
    count = 0
    done = threading.Event()

    def tick() -> None:
        nonlocal count
        count += 1
        if count == 3:
            done.set()

    thread_scheduler.schedule("tick", tick, 0, period_ms=1)
    assert done.wait(WAIT_S)


def test_thread_survives_a_failing_task(
    thread_scheduler: ThreadScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    thread_scheduler.schedule("boom", boom)
    thread_scheduler.schedule("after", done.set)
    assert done.wait(WAIT_S)
    assert "background task boom failed" in caplog.text


def test_thread_shutdown_runs_pending_one_off_tasks() -> None:
    scheduler = ThreadScheduler()
    ran: list[str] = []
    periodic_ran = threading.Event()
    scheduler.schedule("in an hour", lambda: ran.append("in an hour"), 3_600_000)
    scheduler.schedule("periodic", periodic_ran.set, 3_600_000, period_ms=1_000)
    scheduler.shutdown()  # joins the thread: no waiting needed afterwards
    assert ran == ["in an hour"]
    assert not periodic_ran.is_set()
    with pytest.raises(RuntimeError):
        scheduler.schedule("too late", lambda: None)

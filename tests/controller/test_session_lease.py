from odradek.controller.session_lease import SessionLease


def test_ticks_without_a_gap_keep_the_session_trusted() -> None:
    lease = SessionLease(3.0, now=100.0)
    assert lease.gap_s == 1.0
    assert lease.tick_s == 0.25
    for step in range(1, 20):
        assert lease.tick(100.0 + step * 0.25) is None
        assert lease.trusted(100.0 + step * 0.25 + 0.5)
    assert lease.unconfirmed() is None


def test_a_question_after_a_stall_is_refused_before_the_ticker_runs() -> None:
    lease = SessionLease(3.0, now=100.0)
    assert lease.trusted(101.0)
    assert not lease.trusted(101.5)  # stopped since 100.0: the ticker has not run yet


def test_a_gap_stays_suspect_until_a_round_trip_after_it_confirms() -> None:
    lease = SessionLease(3.0, now=100.0)
    gap = lease.tick(110.0)
    assert gap is not None
    assert lease.unconfirmed() == gap
    assert not lease.trusted(110.1)
    assert lease.tick(110.2) is None  # no new gap: still waiting for the round trip
    assert not lease.trusted(110.3)
    lease.confirm(gap)
    assert lease.unconfirmed() is None
    assert lease.trusted(110.3)


def test_a_confirmation_of_an_older_gap_does_not_clear_a_newer_one() -> None:
    lease = SessionLease(3.0, now=100.0)
    first = lease.tick(105.0)
    second = lease.tick(110.0)
    assert first is not None
    assert second is not None
    assert second != first
    lease.confirm(first)  # sent before the second stall: says nothing about after it
    assert not lease.trusted(110.1)
    lease.confirm(second)
    assert lease.trusted(110.1)


def test_the_gap_is_a_third_of_the_session() -> None:
    assert SessionLease(18.0, now=0.0).gap_s == 6.0
    assert SessionLease(0.0, now=0.0).gap_s == 0.05

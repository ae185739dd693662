"""Questions first: a background unit waits while foreground work is in flight, and runs once it is over."""

from __future__ import annotations

import threading

import pytest

from rag.models.priority import Priority

NEVER = 0.3  # how long to watch for something that must not happen (no timing is measured)
SOON = 10.0  # generous bound for something that must happen


def _background(priority: Priority, ran: threading.Event, stop: threading.Event | None = None) -> threading.Thread:
    def work() -> None:
        priority.wait_for_turn(stop=stop)
        ran.set()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def test_a_background_unit_waits_while_a_question_is_in_flight() -> None:
    priority = Priority(grace_s=0.0)
    ran = threading.Event()
    with priority.foreground():
        assert priority.busy()
        worker = _background(priority, ran)
        assert not ran.wait(NEVER)  # held back for as long as the question runs
    assert ran.wait(SOON)  # and released when it ends
    worker.join(SOON)
    assert not priority.busy() and priority.waits == 1


def test_nested_and_concurrent_questions_all_hold_the_background_back() -> None:
    priority = Priority(grace_s=0.0)
    ran = threading.Event()
    first, second = priority.foreground(), priority.foreground()
    first.__enter__()
    with priority.foreground():  # re-entered by the same question (search inside stream)
        second.__enter__()  # and another question on another session
    _background(priority, ran)
    first.__exit__(None, None, None)
    assert not ran.wait(NEVER)  # the other question is still in flight
    second.__exit__(None, None, None)
    assert ran.wait(SOON)


def test_an_idle_process_lets_background_work_run_at_once() -> None:
    priority = Priority(grace_s=0.0)
    assert priority.wait_for_turn() == 0.0 and priority.waits == 0


def test_the_grace_period_keeps_the_gap_between_a_questions_steps_closed() -> None:
    now = [100.0]
    priority = Priority(grace_s=0.5, clock=lambda: now[0])
    with priority.foreground():
        pass
    assert priority.busy()  # just ended: a batch must not slip in before the next step starts
    now[0] += 0.6
    assert not priority.busy()


def test_an_abandoned_hold_stops_holding_after_max_hold() -> None:
    now = [0.0]
    priority = Priority(grace_s=0.0, max_hold_s=60.0, clock=lambda: now[0])
    abandoned = priority.foreground()
    abandoned.__enter__()  # a stream nobody closes (kept referenced, so not even garbage collection ends it)
    assert priority.busy()
    now[0] = 61.0
    assert not priority.busy()
    assert abandoned is not None


def test_a_stop_request_ends_the_wait() -> None:
    priority = Priority(grace_s=0.0)
    ran, stop = threading.Event(), threading.Event()
    with priority.foreground():
        _background(priority, ran, stop)
        assert not ran.wait(NEVER)
        stop.set()
        assert ran.wait(SOON)  # the worker may now see its stop flag and leave


def test_disabled_priority_never_waits() -> None:
    priority = Priority(enabled=False)
    with priority.foreground():
        assert priority.wait_for_turn() == 0.0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        Priority(grace_s=-1)

"""Calls tried again with backoff and jitter, every failed attempt kept as a fault
(alloc.adapters.retry, shared by the Slurm and Kubernetes executors): the waits double from
`backoff_s`, each drawn between half of it and all of it, never above `max_backoff_s`; the
last attempt is given up (its fault says so) and its failure raised; a failure not worth
another try is given up at once; anything else an attempt raises is an answer, neither tried
again nor kept. No cluster needed: the attempts are scripted, the sleeps recorded."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from alloc.adapters import retry
from alloc.adapters.base import FaultKind
from alloc.adapters.retry import Failed, Retrier


def retrier(**options: float) -> tuple[Retrier, list[float]]:
    waits: list[float] = []
    made = Retrier(sleep=waits.append, rng=random.Random(7), **options)  # type: ignore[arg-type]
    return made, waits


def failing(*failures: Failed, answer: str = "ok") -> Callable[[], str]:
    """An attempt that raises each of `failures` in turn, then answers."""
    left = list(failures)

    def attempt() -> str:
        if left:
            raise left.pop(0)
        return answer

    return attempt


def down(n: int = 1) -> list[Failed]:
    return [Failed(FaultKind.FAILED, "connection refused") for _ in range(n)]


def test_the_public_api_is_pinned():
    assert retry.__all__ == ["Failed", "Retrier"]


def test_an_answer_at_once_is_no_fault():
    run, waits = retrier()
    assert run.call("list pods", failing()) == "ok"
    assert (waits, run.take_faults()) == ([], ())


def test_the_waits_double_from_the_backoff_each_between_half_of_it_and_all_of_it():
    run, waits = retrier(attempts=6, backoff_s=1.0)
    assert run.call("squeue --json", failing(*down(5))) == "ok"
    assert len(waits) == 5
    for wait, backoff in zip(waits, (1.0, 2.0, 4.0, 8.0, 16.0), strict=True):
        assert backoff / 2 <= wait <= backoff
    assert waits == sorted(waits)  # each at least the one before
    faults = run.take_faults()
    assert [(f.command, f.attempt, f.retry_in_s) for f in faults] == [
        ("squeue --json", n, w) for n, w in zip(range(1, 6), waits, strict=True)
    ]
    assert not any(f.gave_up for f in faults)  # the sixth attempt answered


@pytest.mark.parametrize("seed", range(20))
def test_the_jitter_stays_within_its_bounds_whatever_the_draw(seed):
    run = Retrier(rng=random.Random(seed), backoff_s=0.5, max_backoff_s=30.0)
    for backoff in (0.5, 1.0, 2.0, 4.0, 100.0):
        capped = min(backoff, 30.0)
        assert capped / 2 <= run.jittered(backoff) <= capped


def test_the_waits_are_capped():
    run, waits = retrier(attempts=8, backoff_s=1.0, max_backoff_s=3.0)
    with pytest.raises(Failed):
        run.call("bind", failing(*down(8)))
    assert len(waits) == 7
    assert all(w <= 3.0 for w in waits)
    assert min(waits[2:]) >= 1.5  # from the third on: half the cap at least


def test_the_last_attempt_is_given_up_and_its_failure_raised():
    run, waits = retrier(attempts=3, backoff_s=0.2)
    last = Failed(FaultKind.TIMEOUT, "no answer within 1 s")
    with pytest.raises(Failed) as raised:
        run.call("evict", failing(*down(2), last))
    assert raised.value is last
    faults = run.take_faults()
    assert [(f.kind, f.attempt) for f in faults] == [
        (FaultKind.FAILED, 1),
        (FaultKind.FAILED, 2),
        (FaultKind.TIMEOUT, 3),
    ]
    assert [f.retry_in_s for f in faults] == [*waits, None]
    assert faults[-1].gave_up and faults[-1].message == "no answer within 1 s"
    assert run.take_faults() == ()  # each fault is handed on once


def test_a_failure_not_worth_another_try_is_given_up_at_once_and_kept():
    run, waits = retrier()
    with pytest.raises(Failed):
        run.call("scontrol", failing(Failed(FaultKind.FAILED, "Invalid job id", again=False)))
    assert waits == []
    (fault,) = run.take_faults()
    assert (fault.kind, fault.attempt, fault.gave_up) == (FaultKind.FAILED, 1, True)


def test_without_retry_one_attempt_only():
    run, waits = retrier(attempts=5)
    with pytest.raises(Failed):
        run.call("scontrol", failing(*down(1)), retry=False)
    assert waits == [] and [f.gave_up for f in run.take_faults()] == [True]


def test_a_refusal_is_an_answer_neither_tried_again_nor_kept():
    class Refused(Exception):
        pass

    def attempt() -> str:
        raise Refused("409 conflict")

    run, waits = retrier()
    with pytest.raises(Refused):
        run.call("bind", attempt)
    assert (waits, run.take_faults()) == ([], ())


def test_faults_nobody_takes_are_kept_up_to_the_last_thousand():
    run, _ = retrier(attempts=1)
    for _ in range(1005):
        with pytest.raises(Failed):
            run.call("list pods", failing(*down(1)))
    assert len(run.take_faults()) == 1000


def test_a_message_is_kept_to_500_characters():
    run, _ = retrier(attempts=1)
    with pytest.raises(Failed):
        run.call("list pods", failing(Failed(FaultKind.UNPARSABLE, "x" * 2000)))
    (fault,) = run.take_faults()
    assert fault.message == "x" * 500

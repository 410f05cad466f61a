"""What the executor-fault tests of both cluster managers check (tests/test_slurm_faults.py
behind a failing wrapper, tests/test_kubernetes_faults.py behind a faulty proxy): a round's
view of the cluster, its plan checked, and a call tried again after a backoff that grows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from alloc.adapters.base import ExecutorFault
from alloc.controller import RoundOutcome
from alloc.solve.validate import validate


class Attempt(Protocol):
    t: float  # when the call reached the wrapper or the proxy (time.time())


def checked(outcome: RoundOutcome) -> RoundOutcome:
    """A round that ran, its plan keeping every invariant of SPEC.md."""
    assert outcome.error == "", outcome.error
    assert outcome.plan is not None and outcome.snapshot is not None
    assert validate(outcome.snapshot, outcome.plan) == []
    return outcome


def round_view(outcome: RoundOutcome) -> tuple[dict[str, set[str]], set[str]]:
    """The workloads a round saw running (with their hosts) and those it saw waiting."""
    assert outcome.snapshot is not None
    workloads = outcome.snapshot.workloads
    return (
        {w.id: set(w.hosts) for w in workloads if w.running},
        {w.id for w in workloads if not w.running},
    )


def backed_off(faults: Sequence[ExecutorFault], calls: Sequence[Attempt]) -> None:
    """One call's failed attempts, numbered, each but the last tried again after a wait at
    least as long as the one before (exponential with jitter: between half the doubled
    backoff and all of it, from 0.2 s), and the wrapper or proxy saw each attempt at least that
    long after the one before (`calls`: the attempts as it logged them)."""
    assert [f.attempt for f in faults] == list(range(1, len(faults) + 1))
    waits = [f.retry_in_s for f in faults if f.retry_in_s is not None]
    assert len(waits) >= len(faults) - 1
    assert 0.1 <= waits[0] <= 0.2
    assert waits == sorted(waits)
    gaps = [b.t - a.t for a, b in zip(calls, calls[1:], strict=False)]
    assert len(gaps) >= len(waits)
    assert all(gap >= wait for gap, wait in zip(gaps, waits, strict=False))

"""How a Slurm command is run (alloc.adapters.slurm.commands): a timeout on every call, and a
call that fails for a reason worth another try, hangs, or answers with output that does not
read tried again after a backoff that doubles, with jitter, up to a cap; every failed attempt
is kept as a fault. Shell one-liners stand in for Slurm's commands (no cluster needed; the
real one with an injected failing wrapper is tests/test_slurm_faults.py)."""

from __future__ import annotations

import random
import re

import pytest

from alloc.adapters.base import FaultKind
from alloc.adapters.slurm.commands import SlurmCommands, SlurmError

DOWN = "Unable to contact slurm controller (connect failure)"


def commands(**options: float) -> tuple[SlurmCommands, list[float]]:
    waits: list[float] = []
    made = SlurmCommands(sleep=waits.append, rng=random.Random(1), **options)  # type: ignore[arg-type]
    return made, waits


def test_a_call_the_controller_does_not_answer_is_tried_again_with_growing_jittered_waits():
    run, waits = commands(attempts=5, backoff_s=1.0)
    with pytest.raises(SlurmError, match=re.escape(DOWN)):
        run.run("sh", "-c", f"echo '{DOWN}' >&2; exit 1")
    # Each wait lies between half the doubled backoff and all of it: 1, 2, 4, 8 s.
    assert len(waits) == 4
    for wait, backoff in zip(waits, (1.0, 2.0, 4.0, 8.0), strict=True):
        assert backoff / 2 <= wait <= backoff
    assert waits == sorted(waits)
    faults = run.take_faults()
    assert [(f.kind, f.command, f.attempt) for f in faults] == [
        (FaultKind.FAILED, "sh", n) for n in range(1, 6)
    ]
    assert [f.retry_in_s for f in faults] == [*waits, None]
    assert faults[-1].gave_up and faults[0].message == DOWN
    assert run.take_faults() == ()  # each fault is handed on once


def test_the_backoff_is_capped():
    run, waits = commands(attempts=6, backoff_s=1.0, max_backoff_s=3.0)
    with pytest.raises(SlurmError):
        run.run("sh", "-c", f"echo '{DOWN}' >&2; exit 1")
    assert all(w <= 3.0 for w in waits) and min(waits[2:]) >= 1.5


def test_a_refusal_is_not_tried_again():
    run, waits = commands()
    with pytest.raises(SlurmError, match="Invalid job id"):
        run.run("sh", "-c", "echo 'Invalid job id specified' >&2; exit 1")
    assert waits == []
    (fault,) = run.take_faults()
    assert (fault.kind, fault.attempt, fault.gave_up) == (FaultKind.FAILED, 1, True)


def test_a_call_that_hangs_is_killed_at_its_timeout_and_tried_again():
    run, waits = commands(timeout_s=0.2, attempts=2)
    with pytest.raises(SlurmError, match="no answer within 0.2 s"):
        run.run("sleep", "30")
    assert len(waits) == 1
    assert [f.kind for f in run.take_faults()] == [FaultKind.TIMEOUT] * 2


@pytest.mark.parametrize(
    "answer",
    ["<html>502 Bad Gateway</html>", '{"jobs": [{"job_id": 1', "[1, 2]"],
    ids=["garbage", "truncated JSON", "JSON but not an object"],
)
def test_an_answer_that_does_not_read_is_asked_again(tmp_path, answer):
    # The first answer does not read, the second does: the call succeeds, the fault is kept.
    once = tmp_path / "answered"
    script = (
        f"if [ -e {once} ]; then echo '{{\"jobs\": []}}'; else touch {once}; echo '{answer}'; fi"
    )
    run, waits = commands()
    assert run.json("sh", "-c", script) == {"jobs": []}
    (fault,) = run.take_faults()
    assert fault.kind is FaultKind.UNPARSABLE and not fault.gave_up
    assert len(waits) == 1 and fault.retry_in_s == waits[0]

"""Instances that once exposed a bug, each pinned by what a correct plan must do."""

from __future__ import annotations

from pathlib import Path

from conftest import solve_checked

from alloc.domain import Action
from alloc.io import load_instance

HERE = Path(__file__).parent / "regressions"


def test_a_preempted_run_is_kept_when_its_gpus_end_the_round_free(solver):
    # Found by the property tests: the MILP preempted w00 to start w22, the priority repair
    # then swapped w22 for the higher-priority w20 of its node, leaving w00's host empty.
    plan = solve_checked(load_instance(HERE / "needless-preemption.yaml"), solver)
    assert plan.decision("w00").action is Action.KEEP
    assert plan.decision("w20").action is Action.START

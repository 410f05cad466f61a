"""What the commands that read a plan file check before they trust it (`validate`, `explain
--plan`, `queue --plan`), and the one check of `--solver`: bad input names the file and the
fault."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from alloc.io.errors import InputError
from alloc.readable import counted

if TYPE_CHECKING:
    from alloc.domain import Plan, Snapshot


def check_solver(solver: str | None) -> None:
    if solver is not None and solver not in ("milp", "greedy"):
        raise InputError("--solver", "", f"expected milp or greedy, got {solver!r}")


def same_instance(snapshot: Snapshot, plan: Plan, path: Path) -> None:
    """A plan about workloads the instance lacks belongs to another instance: bad input."""
    unknown = sorted({d.workload for d in plan.decisions} - set(snapshot.by_id))
    if unknown:
        raise InputError(
            str(path),
            "decisions",
            f"{counted(len(unknown), 'decision')} "
            f"{'names a workload' if len(unknown) == 1 else 'name workloads'} the instance "
            f"does not have (e.g. {unknown[0]!r}): is this plan for another instance?",
        )


def checked_plan(snapshot: Snapshot, source: str, path: Path, decides: str | None = None) -> Plan:
    """The plan of `path`, about `snapshot` (read from `source`), deciding `decides` if given,
    and keeping every invariant on it: a view of a plan that breaks the contract on this
    instance (another instance's plan, an edited one) would state wrong reasons as facts."""
    from alloc.io import load_plan
    from alloc.solve.validate import validate

    plan = load_plan(path)
    same_instance(snapshot, plan, path)
    if decides is not None and decides not in plan.by_workload:
        raise InputError(str(path), "decisions", f"no decision for {decides!r}")
    problems = validate(snapshot, plan)
    if problems:
        raise InputError(
            str(path),
            "decisions",
            f"the plan breaks {counted(len(problems), 'invariant')} on {source} (first: "
            f"{problems[0]}): is it for another instance? `alloc validate` lists them",
        )
    return plan

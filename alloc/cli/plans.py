"""What the commands that read a plan file check before they trust it (`validate`, `explain
--plan`, `queue --plan`), how they word the invariants a plan breaks, and the one check of
`--solver`: bad input names the file and the fault."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from alloc.io.errors import InputError
from alloc.readable import counted, natural_key

if TYPE_CHECKING:
    from alloc.domain import Plan, Snapshot


# The number of the rule a violation breaks, which `alloc.solve.validate` writes at its end:
# `host h1: 12 GPUs given, it has 8 (1)`.
_RULE = re.compile(r"\s*\((\d+(?:\.\d+)?)\)$")


def violation(problem: str) -> tuple[str, str]:
    """A violation as `alloc.solve.validate` words it, split into the rule it breaks and the
    fact: `('invariant 1', 'host h1: 12 GPUs given, it has 8')`. Invariants 1 to 7 are SPEC.md's
    hard invariants; 8, 8.5 and 9 the rules of reservations, their backfill and event passes
    in models/round.md. ('', problem) when it names none."""
    found = _RULE.search(problem)
    if found is None:
        return "", problem
    return _rule(found.group(1)), problem[: found.start()]


def _rule(number: str) -> str:
    return f"invariant {number}" if float(number) < 8 else f"rule {number} of models/round.md"


def violations_summary(problems: Sequence[str]) -> str:
    """`2 violations of invariants 1 and 4`, `1 violation of rule 8.5 of models/round.md`."""
    numbers = sorted({m.group(1) for p in problems if (m := _RULE.search(p))}, key=float)
    invariants = [n for n in numbers if float(n) < 8]
    rules = [n for n in numbers if float(n) >= 8]
    parts = []
    if invariants:
        parts.append(f"invariant{'s' if len(invariants) > 1 else ''} {_listed(invariants)}")
    if rules:
        parts.append(f"rule{'s' if len(rules) > 1 else ''} {_listed(rules)} of models/round.md")
    of = f" of {' and '.join(parts)}" if parts else ""
    return counted(len(problems), "violation") + of


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def check_solver(solver: str | None) -> None:
    if solver is not None and solver not in ("milp", "greedy"):
        raise InputError("--solver", "", f"expected milp or greedy, got {solver!r}")


def same_instance(snapshot: Snapshot, plan: Plan, path: Path) -> None:
    """A plan about workloads the instance lacks belongs to another instance: bad input."""
    unknown = sorted({d.workload for d in plan.decisions} - set(snapshot.by_id), key=natural_key)
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
        rule, fact = violation(problems[0])
        raise InputError(
            str(path),
            "decisions",
            f"the plan has {violations_summary(problems)} on {source} (first: {fact}"
            f"{', ' + rule if rule else ''}): is it for another instance? `alloc validate` "
            "lists them",
        )
    return plan

"""What the commands that read a plan file check before they trust it (`validate`, `explain
--plan`, `queue --plan`) and how they word the invariants a plan breaks: bad input names the file
and the fault. (`--solver` is read by `alloc.cli.params.solver_option`.)"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from alloc.io.errors import InputError
from alloc.readable import counted, natural_key

if TYPE_CHECKING:
    from alloc.domain import Plan, Snapshot


# The rule a violation breaks, which `alloc.solve.validate` writes at its end: a number alone
# is an invariant of SPEC.md (1 to 7) or a rule of models/round.md (8, 8.5, 9);
# `(models/round.md 1.2)` names a section of models/round.md; `(plan format)` the format of a
# plan in SPEC.md (one decision per workload, GPUs above 0 on each host it names).
_RULE = re.compile(r"\s*\(((?:models/round\.md )?\d+(?:\.\d+)?|plan format)\)$")
_ROUND_MD = "models/round.md "
_PLAN_FORMAT = "plan format"


def violation(problem: str) -> tuple[str, str]:
    """A violation as `alloc.solve.validate` words it, split into the rule it breaks and the
    fact: `('invariant 1', 'host h1: 12 GPUs given, it has 8')`, `('rule 1.2 of
    models/round.md', ...)`, `('the plan format of SPEC.md', ...)`. ('', problem) when it
    names none (`validate` names one for every violation: a test holds it to that)."""
    found = _RULE.search(problem)
    if found is None:
        return "", problem
    kind, number = _rule(found.group(1))
    return _named(kind, [number]), problem[: found.start()]


def _rule(tag: str) -> tuple[str, str]:
    """The kind of rule a tag names (`invariant`, `rule`, `format`) and its number."""
    if tag == _PLAN_FORMAT:
        return "format", ""
    if tag.startswith(_ROUND_MD):
        return "rule", tag.removeprefix(_ROUND_MD)
    return ("invariant" if tag.isdigit() and 1 <= int(tag) <= 7 else "rule"), tag


def _named(kind: str, numbers: Sequence[str]) -> str:
    if kind == "format":
        return "the plan format of SPEC.md"
    plural = "s" if len(numbers) > 1 else ""
    of = " of models/round.md" if kind == "rule" else ""
    return f"{kind}{plural} {_listed(numbers)}{of}"


def violations_summary(problems: Sequence[str]) -> str:
    """`2 violations of invariants 1 and 4`, `1 violation of rule 8.5 of models/round.md`,
    `3 violations of invariant 3, rule 1.2 of models/round.md and the plan format of SPEC.md`:
    each rule the lines of `violation` name, once."""
    rules = {_rule(m.group(1)) for p in problems if (m := _RULE.search(p))}
    parts = [
        _named(kind, sorted((n for k, n in rules if k == kind), key=_order))
        for kind in ("invariant", "rule", "format")
        if any(k == kind for k, _ in rules)
    ]
    of = f" of {_listed(parts)}" if parts else ""
    return counted(len(problems), "violation") + of


def _order(number: str) -> tuple[int, ...]:
    return tuple(int(part) for part in number.split(".")) if number else ()


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


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

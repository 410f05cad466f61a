"""A plan's Slurm actions (alloc.adapters.slurm.actions) as a bash script a person can review
and run: `alloc export PLAN.json --to slurm`.

Every argument is quoted (alloc.adapters.shell.quote), so a job id, a host name or a node's reason
holding quotes, newlines, `$( )`, backticks, `;` or any other character stays one argument
and is never run. Names shown in comments are escaped (a newline is written `\\n`), so they
cannot end a comment and start a command; very long ones are shortened there (never in the
commands). Actions with nothing to do, and actions that cannot be done, are comments only.
"""

from __future__ import annotations

from collections.abc import Sequence

from alloc.adapters.shell import comment, quote
from alloc.adapters.slurm.actions import SlurmAction
from alloc.domain import Plan

SCRIPT_NAME = "alloc-plan.sh"


def slurm_script(plan: Plan, actions: Sequence[SlurmAction], source: Sequence[str]) -> str:
    """The script that runs `actions` (computed for `plan`); `source` says, in lines, where
    the state of the cluster they were chosen from came from."""
    doing = [a for a in actions if a.steps]
    commands = sum(len(a.steps) for a in doing)
    idle = sum(1 for a in actions if a.ok and not a.steps)
    undoable = sum(1 for a in actions if not a.ok)
    counts = f"# {len(doing)} actions ({commands} scontrol commands)"
    if idle or undoable:
        counts += f"; {idle} with nothing to do, {undoable} that cannot be done"
    lines = [
        "#!/usr/bin/env bash",
        f"# alloc plan for Slurm: the {plan.kind} round of {plan.now.isoformat()} "
        f"({comment(plan.report.solver)}, {comment(plan.report.status)})",
        counts,
        *(f"# {comment(line, None)}" for line in source),
        "# Review it, then run it with bash (`alloc export ... --apply` runs the same commands).",
        "# It stops at the first command that fails (set -e); those before it have been run.",
        "set -euo pipefail",
    ]
    for a in actions:
        lines.append("")
        lines.append("# " + describe(a))
        lines.extend(" ".join(quote(arg) for arg in s.argv) for s in a.steps)
    return "\n".join(lines) + "\n"


def describe(a: SlurmAction) -> str:
    """One line on an action for a person: what it is for and what it does."""
    who = f"host {comment(a.target)}" if a.kind == "drain" else f"job {comment(a.target)}"
    if not a.ok:
        return f"{who}: {a.kind}: NOT DONE: {comment(a.detail)}"
    if not a.steps:
        return f"{who}: {a.kind}: nothing to do ({comment(a.detail)})"
    return f"{who}: {a.kind}: " + ", then ".join(comment(s.label) for s in a.steps)

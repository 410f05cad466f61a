"""`alloc explain`: why a workload starts, waits or is preempted, the ratios along its budget
path, and what would have to change. Pure: snapshot and plan in, sentences out.

The facts (headline, contract, budget path) are `facts`, the "Why" is `why`, the suggestions
are `change`; `room` answers the questions about free GPUs on the hosts that both ask."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from alloc.domain import Plan, Snapshot, WorkloadId
from alloc.explain.change import change_lines
from alloc.explain.facts import budget_path, contract_facts, headline
from alloc.explain.why import why_lines
from alloc.printable import shown
from alloc.solve.context import RoundContext, round_context

__all__ = ["Explanation", "explain"]


@dataclass
class Explanation:
    headline: str
    facts: list[str] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    change: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [self.headline, ""]
        for title, items in (
            ("Contract", self.facts),
            ("Fair share along its budget path", self.path),
            ("Why", self.why),
            ("What would have to change", self.change),
        ):
            if items:
                out.append(f"{title}:")
                out += [f"  {line}" for line in items]
        return out

    def text(self, width: int | None = None) -> list[str]:
        """The lines as `alloc explain` prints them: names as the cluster wrote them made
        visible (`shown`), each line broken at spaces to fit `width` (None: whole), its
        continuation lines indented deeper than the line itself (two more for the headline,
        four more for an item, below the two of an item's own sub-line such as `entitled to`),
        so every section and every item keeps its indent (a word longer than the width stays
        whole)."""
        out = []
        for line in self.lines():
            line = shown(line)
            if width is None or len(line) <= width:
                out.append(line)
                continue
            body = line.lstrip(" ")
            indent = " " * (len(line) - len(body))
            out += textwrap.wrap(
                body,
                max(width, len(indent) + 5),
                initial_indent=indent,
                subsequent_indent=indent + ("    " if indent else "  "),
                break_long_words=False,
                break_on_hyphens=False,
            ) or [line]
        return out


def explain(
    snapshot: Snapshot,
    plan: Plan,
    workload: str,
    ctx: RoundContext | None = None,
    no_budget: str | None = None,
) -> Explanation:
    """`no_budget`: why the workload has no budget though its job named one, as the cluster's
    site mapping says (`Executor.no_budget`); said instead of "it names no budget"."""
    ctx = ctx or round_context(snapshot)
    wid = WorkloadId(workload)
    d = plan.decision(wid)
    budget = snapshot.by_id[wid].budget
    return Explanation(
        headline(plan, wid, snapshot, ctx, no_budget),
        facts=contract_facts(ctx, plan, wid, no_budget),
        path=budget_path(ctx, budget) if budget else [],
        why=why_lines(ctx, plan, wid, d),
        change=change_lines(ctx, plan, wid, d),
    )

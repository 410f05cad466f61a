"""`alloc explain`: why a workload starts, waits or is preempted, the ratios along its budget
path, and what would have to change. Pure: snapshot and plan in, sentences out.

The facts (headline, contract, budget path) are `facts`, the "Why" is `why`, the suggestions
are `change`; `room` answers the questions about free GPUs on the hosts that both ask."""

from __future__ import annotations

from dataclasses import dataclass, field

from alloc.domain import Plan, Snapshot, WorkloadId
from alloc.explain.change import change_lines
from alloc.explain.facts import budget_path, contract_facts, headline
from alloc.explain.why import why_lines
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


def explain(
    snapshot: Snapshot, plan: Plan, workload: str, ctx: RoundContext | None = None
) -> Explanation:
    ctx = ctx or round_context(snapshot)
    wid = WorkloadId(workload)
    d = plan.decision(wid)
    budget = snapshot.by_id[wid].budget
    return Explanation(
        headline(plan, wid, snapshot, ctx),
        facts=contract_facts(ctx, plan, wid),
        path=budget_path(ctx, budget) if budget else [],
        why=why_lines(ctx, plan, wid, d),
        change=change_lines(ctx, plan, wid, d),
    )

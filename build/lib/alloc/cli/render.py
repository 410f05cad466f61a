"""Rich tables for the terminal. Formatting only: every number comes from `alloc.summary`,
`alloc.explain` or the plan."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from alloc.domain import Plan
from alloc.io.durations import format_time
from alloc.summary import Summary


def ratio_text(r: float) -> str:
    return "inf" if math.isinf(r) else f"{r:.2f}"


def render_solve(console: Console, source: str, plan: Plan, summary: Summary, depth: int) -> None:
    r = plan.report
    m = plan.metrics
    gap = "-" if r.gap is None else f"{r.gap:.3%}"
    bound = "-" if r.bound is None else f"{r.bound:,.2f}"
    console.print(
        f"[bold]{escape(source)}[/] at {format_time(plan.now)}: solver [bold]{r.solver}[/] "
        f"status [bold]{r.status}[/], objective {r.objective:,.2f}, bound {bound}, gap {gap}, "
        f"solver {r.solve_seconds:.3f} s, round {m.get('round_seconds', 0.0):.3f} s"
    )
    if r.note:
        style = "yellow" if r.status == "fallback" else "dim"
        console.print(f"[{style}]note: {escape(r.note)}[/]")

    actions = Table(title="Decisions", title_justify="left")
    for col in ("action", "reason", "workloads", "GPUs"):
        actions.add_column(col, justify="right" if col in ("workloads", "GPUs") else "left")
    for (action, reason), (n, gpus) in summary.by_action.items():
        actions.add_row(action.value, reason.value, str(n), str(gpus))
    console.print(actions)

    nodes = Table(title="Budgets (GPUs)", title_justify="left")
    for col in (
        "node",
        "share",
        "of cluster",
        "owed (capped at demand)",
        "entitled",
        "assigned",
        "unalloc.",
        "demand",
        "waiting",
        "fair-share ratio",
    ):
        nodes.add_column(col, justify="left" if col == "node" else "right")
    for row in summary.nodes:
        if row.depth == 0 or row.depth > depth:
            continue
        name = "  " * (row.depth - 1) + escape(row.path.rsplit("/", 1)[-1])
        nodes.add_row(
            name,
            f"{row.share:.1%}",
            f"{row.effective:.1%}",
            f"{row.owed_gpus:.0f}",
            str(row.entitled_gpus),
            str(row.assigned_gpus),
            str(row.unallocated_gpus),
            str(row.demand_gpus),
            str(row.waiting),
            ratio_text(row.ratio),
        )
    console.print(nodes)

    ready = int(m.get("ready_gpus", 0))
    occ = Table(title="Occupancy of ready GPUs after the round", title_justify="left")
    for col in ("ready GPUs", "allocated", "unallocated", "idle"):
        occ.add_column(col, justify="right")
    occ.add_row(
        str(ready),
        f"{m.get('allocated_occupancy', 0):.1%}",
        f"{m.get('unallocated_occupancy', 0):.1%}",
        f"{1 - m.get('occupancy', 0):.1%}",
    )
    console.print(occ)

"""`alloc queue`: one row per workload, as Slurm's squeue lists jobs: what state the round
leaves it in, its budget path, GPUs, how long it has waited, its minimum runtime, its budget
node's fair-share ratio and the plan's reason. Pure: a snapshot, its plan, the window's
fair-share ratios and the round's order in; rows, sorted and selected, out.

The fields of `record` are the stable names of `alloc queue --format json|csv` (README).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from alloc.domain import (
    Action,
    BudgetPath,
    BudgetTree,
    Decision,
    Occupancy,
    Plan,
    Reason,
    Snapshot,
    Workload,
    WorkloadId,
)
from alloc.io.durations import format_time
from alloc.readable import natural_key

__all__ = [
    "FIELDS",
    "SORT_KEYS",
    "QueueRow",
    "State",
    "by_state",
    "has_gpu_types",
    "in_subtree",
    "known_paths",
    "queue_positions",
    "queue_rows",
    "record",
    "select",
    "sort_rows",
    "state_of",
]


class State(StrEnum):
    """Where a workload stands once the round's plan is carried out (in the default order)."""

    RUNNING_PROTECTED = "running-protected"  # kept, inside its minimum runtime
    RUNNING = "running"  # kept, past its protection (or never protected)
    PREEMPTED = "preempted"  # running now, stopped by this round
    STARTING = "starting"  # queued, started by this round
    WAITING = "waiting"  # queued, left waiting


_STATE_ORDER = {s: i for i, s in enumerate(State)}


@dataclass(frozen=True, slots=True)
class QueueRow:
    id: WorkloadId
    state: State
    budget: BudgetPath | None  # None: unfunded, no budget named
    gpus: int
    gpu_type: str | None  # the type it asks for; None: any
    priority: int
    wait_s: float | None  # since submitted, for queued work (waiting or starting); else None
    running_s: float | None  # since started, for running work (kept or preempted); else None
    min_runtime_s: float
    ratio: float | None  # its budget node's fair-share ratio over the window (inf: no share)
    action: Action
    reason: Reason
    occupancy: Occupancy
    rank: int | None  # place in the round's order (1 first); None: not ordered this round
    submitted: datetime
    started: datetime | None
    protected_until: datetime | None
    position: int | None = None  # place in the queue (queue_positions); None: running, or unranked


def state_of(w: Workload, d: Decision, now: datetime) -> State:
    if not w.running:
        return State.STARTING if d.action is Action.START else State.WAITING
    if d.action is Action.PREEMPT:
        return State.PREEMPTED
    if d.protected_until is not None and d.protected_until > now:
        return State.RUNNING_PROTECTED
    return State.RUNNING


def queue_positions(snapshot: Snapshot, order: Sequence[WorkloadId]) -> dict[WorkloadId, int]:
    """Each queued workload's place in the queue: the round's order counting queued work only,
    1 first (the `#` of `alloc status`, the `position` of `alloc queue`). The round's rank also
    counts the running work it weighs against the queue (kept, or rebalanced, past its
    protection), so the first queued workload's rank is rarely 1."""
    queued = {w.id for w in snapshot.workloads if not w.running}
    return {wid: i + 1 for i, wid in enumerate(wid for wid in order if wid in queued)}


def queue_rows(
    snapshot: Snapshot,
    plan: Plan,
    ratios: Mapping[BudgetPath, float],
    order: Sequence[WorkloadId],
) -> list[QueueRow]:
    """One row per workload of the snapshot, in the default order (`sort_rows(rows, None)`).
    `ratios`: each budget node's fair-share ratio over the window (`FairShare.ratios`, as
    `alloc solve` shows them); `order`: the round's order as people read it
    (`RoundContext.ranked`: fair-share order, then unallocated work), which `alloc explain`
    and `alloc status` count too."""
    now = snapshot.now
    rank = {wid: i + 1 for i, wid in enumerate(order)}
    position = queue_positions(snapshot, order)
    rows = []
    for w in snapshot.workloads:
        d = plan.decision(w.id)
        rows.append(
            QueueRow(
                id=w.id,
                state=state_of(w, d, now),
                budget=w.budget or None,
                gpus=w.gpus,
                gpu_type=w.gpu_type,
                priority=w.priority,
                wait_s=None if w.running else max(0.0, (now - w.submitted).total_seconds()),
                running_s=w.running_seconds(now) if w.running else None,
                min_runtime_s=w.min_runtime_s,
                ratio=ratios.get(w.budget, math.inf) if w.budget else None,
                action=d.action,
                reason=d.reason,
                occupancy=d.occupancy,
                rank=rank.get(w.id),
                submitted=w.submitted,
                started=w.started,
                protected_until=d.protected_until,
                position=position.get(w.id),
            )
        )
    return sort_rows(rows, None)


def has_gpu_types(snapshot: Snapshot) -> bool:
    """More than one GPU type among the hosts, or work that asks for one."""
    types = {h.gpu_type for h in snapshot.cluster.hosts}
    return len(types) > 1 or any(w.gpu_type for w in snapshot.workloads)


# --sort keys. wait and gpus: largest first; ratio: lowest window ratio first (the round's
# order weighs projected ratios, models/round.md 2.2); budget and
# id: in natural order (r2 before r10); state: in State's order. Ties keep the default order;
# -r reverses all.
SORT_KEYS = ("wait", "gpus", "budget", "state", "id", "ratio")


def _default_key(r: QueueRow) -> tuple[int, float, float, tuple[object, ...]]:
    """Running work first (protected, then the rest, then what this round preempts), then
    what it starts, then what waits; inside a state, the round's order, then the longest
    running or waiting first, then id (as squeue lists running jobs, then pending ones by
    priority)."""
    since = r.started if r.started is not None else r.submitted
    return (
        _STATE_ORDER[r.state],
        r.rank if r.rank is not None else math.inf,
        since.timestamp(),
        natural_key(r.id),
    )


def _ratio_key(r: QueueRow) -> float:
    return math.inf if r.ratio is None else r.ratio


_KEYS = {
    "wait": lambda r: -(r.wait_s or 0.0),
    "gpus": lambda r: -r.gpus,
    "budget": lambda r: (r.budget is None, natural_key(r.budget or "")),
    "state": lambda r: _STATE_ORDER[r.state],
    "id": lambda r: natural_key(r.id),
    "ratio": _ratio_key,
}


def sort_rows(rows: Iterable[QueueRow], by: str | None, reverse: bool = False) -> list[QueueRow]:
    """Rows in the default order, or by one of SORT_KEYS (ties in the default order)."""
    out = sorted(rows, key=_default_key)
    if by is not None:
        out.sort(key=_KEYS[by])  # stable: ties keep the default order
    if reverse:
        out.reverse()
    return out


def in_subtree(budget: BudgetPath | None, paths: Iterable[BudgetPath]) -> bool:
    return budget is not None and any(budget == p or budget.startswith(p + "/") for p in paths)


def select(
    rows: Iterable[QueueRow],
    states: Iterable[State] | None = None,
    budgets: Iterable[BudgetPath] | None = None,
) -> list[QueueRow]:
    """The rows in one of `states` (all when None) whose budget lies in the subtree of one of
    `budgets` (all when None; unfunded work without a budget lies in none)."""
    wanted = set(states) if states is not None else None
    paths = tuple(budgets) if budgets is not None else None
    return [
        r
        for r in rows
        if (wanted is None or r.state in wanted) and (paths is None or in_subtree(r.budget, paths))
    ]


def by_state(rows: Iterable[QueueRow]) -> dict[State, tuple[int, int]]:
    """Workloads and GPUs per state, in State's order; states without work left out."""
    count = dict.fromkeys(State, 0)
    gpus = dict.fromkeys(State, 0)
    for r in rows:
        count[r.state] += 1
        gpus[r.state] += r.gpus
    return {s: (count[s], gpus[s]) for s in State if count[s]}


def known_paths(tree: BudgetTree) -> list[BudgetPath]:
    """The paths `--budget` accepts: every node but the root."""
    return [p for p in tree.paths() if p]


# The fields of one workload in `alloc queue --format json|csv`, in this order.
FIELDS = (
    "id",
    "state",
    "budget",
    "gpus",
    "gpu_type",
    "priority",
    "wait_s",
    "running_s",
    "min_runtime_s",
    "ratio",
    "action",
    "reason",
    "occupancy",
    "rank",
    "submitted",
    "started",
    "protected_until",
    "position",
)


def record(r: QueueRow) -> dict[str, object]:
    """One workload as raw values: seconds as numbers, times in ISO 8601, None when absent.
    An infinite ratio (a node without a share) is None, as is the ratio of unfunded work."""
    return {
        "id": r.id,
        "state": r.state.value,
        "budget": r.budget,
        "gpus": r.gpus,
        "gpu_type": r.gpu_type,
        "priority": r.priority,
        "wait_s": _seconds(r.wait_s),
        "running_s": _seconds(r.running_s),
        "min_runtime_s": _seconds(r.min_runtime_s),
        "ratio": r.ratio if r.ratio is not None and math.isfinite(r.ratio) else None,
        "action": r.action.value,
        "reason": r.reason.value,
        "occupancy": r.occupancy.value,
        "rank": r.rank,
        "submitted": _time(r.submitted),
        "started": _time(r.started),
        "protected_until": _time(r.protected_until),
        "position": r.position,
    }


def _seconds(s: float | None) -> int | float | None:
    if s is None:
        return None
    whole = round(s, 3)
    return int(whole) if whole.is_integer() else whole


def _time(t: datetime | None) -> str | None:
    return format_time(t) if t is not None else None

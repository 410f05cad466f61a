"""Constraint (6) of the round MILP: priority inside a budget node (models/round.md, 5.2).

Split from `milp_model` (which calls `precedence` while building the model): one concept, the
rows that keep a lower-priority start from overtaking a higher-priority workload of its node.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from alloc.domain import Occupancy, WorkloadId
from alloc.solve.arrays import INF
from alloc.solve.context import RoundContext
from alloc.solve.problem import Shape

if TYPE_CHECKING:
    from alloc.solve.milp_model import RoundModel


def precedence(ctx: RoundContext, rm: RoundModel) -> None:
    """(6) Inside one budget node and occupancy class, a queued workload starts only if every
    queued one of higher priority that surely fits in its place starts too.

    Members with the same priority and shape form a class `c` with an indicator `z_c` that may
    be 1 only if all of them start (`|c| z_c <= sum y`); a workload of class `a` then needs
    `z_c` for every higher-priority class that fits in its place. Rows and terms grow with
    members x classes, not with pairs of members."""
    groups: dict[tuple[object, Occupancy], list[WorkloadId]] = defaultdict(list)
    for wid in rm.y:
        s = ctx.standings[wid]
        groups[(s.workload.budget, s.occupancy)].append(wid)
    mdl = rm.model
    for members in groups.values():
        classes: dict[tuple[int, int], list[WorkloadId]] = defaultdict(list)
        for w in members:
            classes[(ctx.standings[w].workload.priority, id(ctx.shapes[w]))].append(w)
        if len({p for p, _ in classes}) < 2:
            continue
        shape_of = {key: ctx.shapes[ws[0]] for key, ws in classes.items()}
        indicator: dict[tuple[int, int], int] = {}
        for key_a, ws in classes.items():
            ahead = [
                _all_start(rm, classes[key_b], indicator, key_b)
                for key_b in classes
                if key_b[0] > key_a[0] and fits_in_place(ctx, shape_of[key_b], shape_of[key_a])
            ]
            if not ahead:
                continue
            rows = mdl.rows("(6) priority inside a budget node", len(ws), -INF, 0.0)
            mdl.terms(rows, np.array([rm.y[w] for w in ws]), float(len(ahead)))
            mdl.terms(np.repeat(rows, len(ahead)), np.tile(np.array(ahead), len(ws)), -1.0)


def _all_start(
    rm: RoundModel,
    members: list[WorkloadId],
    indicator: dict[tuple[int, int], int],
    key: tuple[int, int],
) -> int:
    """The variable z of a class: 1 only if every member starts (|c| z <= sum of their y)."""
    if key not in indicator:
        mdl = rm.model
        indicator[key] = z = int(mdl.variables(1, 0, 1, 0.0, False)[0])
        row = mdl.rows("(6) priority inside a budget node", 1, -INF, 0.0)
        mdl.terms(row, np.array([z]), float(len(members)))
        mdl.terms(np.full(len(members), row[0]), np.array([rm.y[w] for w in members]), -1.0)
    return indicator[key]


def fits_in_place(ctx: RoundContext, sb: Shape, sa: Shape) -> bool:
    """Whether a request of shape `sb` fits wherever one of shape `sa` could be placed, whatever
    else is free (models/round.md 1.2): no larger, accepting every GPU type `sa` may get, and of
    a shape that fits `sa`'s."""
    if sb.gpus > sa.gpus or np.any(sa.types & ~sb.types):
        return False
    if np.any(sa.allowed & ~sb.allowed):  # a may backfill reserved hosts b may not (8.5)
        return False
    if sa.single:
        return sb.single  # b's host is a's host, large enough for a and so for b
    if not sb.single:
        # Whole hosts of one size either way; a gang inside one block fits only in a's place
        # if a's place is inside one block too.
        return not sb.block or sa.block
    hosts = ctx.hosts
    caps = [
        c
        for c in np.unique(hosts.cap[sa.allowed]).tolist()
        if np.count_nonzero(sa.allowed & (hosts.cap == c)) >= sa.hosts_needed(c)
    ]
    return bool(caps) and min(caps) >= sb.gpus

"""A dry run of the controller on simulated time (`alloc controller run --clock simulated`).

The controller loop, its state store and its metrics are those of a real run; only the clock
and the executor are plugged in (STYLE: no `if simulate` below this): the `sim` executor's
simulated cluster hands out its own clock (alloc.sim.clock), so the round interval and the
event polls pass at once, the cluster's jobs progress by that clock and every record is
stamped with it. The run ends when the trace is done, when what is left can never start (no
work runs, none is to come, and a full round started none of it), at `--until`, or after
`--rounds`; this module says when, and what to print meanwhile."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from alloc.adapters.base import Executor
from alloc.adapters.simcluster import SimCluster
from alloc.controller.loop import RoundOutcome
from alloc.controller.metrics import ControllerMetrics
from alloc.controller.state import StateStore
from alloc.domain import ROOT_PATH, BudgetPath, BudgetTree
from alloc.io import InputError
from alloc.readable import count, counted, natural_key
from alloc.report.fmt import duration, pct
from alloc.sim.clock import SimulatedClock


@dataclass
class DryRun:
    cluster: SimCluster
    clock: SimulatedClock
    began_s: float  # simulated seconds since the lab's `now` at the start of this run
    wall_began: float = field(default_factory=time.perf_counter)
    rounds: dict[str, int] = field(default_factory=lambda: {"full": 0, "event": 0})
    started: int = 0
    preempted: int = 0
    why_over: str = ""

    @classmethod
    def start(cls, cluster: Executor, until_s: float | None = None) -> DryRun:
        """The simulated cluster follows its own clock from now on; the clock ends at
        `until_s` (seconds since the lab's `now`), if given. A cluster that has run its whole
        trace, or is past `until_s`, is bad input: there is nothing to run."""
        if not isinstance(cluster, SimCluster):
            raise InputError("--clock", "", "a simulated clock needs the sim executor")
        where = str(cluster.path)
        now_s = cluster.now_s()
        again = f"remove {where} (and the controller's state) to run it again"
        if cluster.unfinished() == 0:
            message = f"the simulated cluster has run its whole trace (at {offset(now_s)}): {again}"
            raise InputError(where, "", message)
        if until_s is not None and until_s <= now_s:
            message = f"the simulated cluster is already at {offset(now_s)}, past --until: {again}"
            raise InputError(where, "", message)
        clock = cluster.simulated_clock(math.inf if until_s is None else until_s)
        return cls(cluster, clock, clock.t_s)

    def at(self, t_s: float | None = None) -> datetime:
        t = self.clock.t_s if t_s is None else t_s
        return datetime.fromtimestamp(self.clock.epoch_s + t, UTC)

    def line(self, o: RoundOutcome) -> str:
        """One round, for the console: the simulated time, then the round as a run on the
        wall clock says it (RoundOutcome.line)."""
        t = o.at_s - self.clock.epoch_s
        return f"{self.at(t):%Y-%m-%d %H:%M:%S} ({offset(t)}) {o.line()}"

    def observe(self, o: RoundOutcome) -> str:
        """Count this round; why the run is over after it ("": it goes on)."""
        if o.error:
            return ""
        self.rounds[o.kind] = self.rounds.get(o.kind, 0) + 1
        self.started += o.started
        self.preempted += o.preempted
        left = self.cluster.unfinished()
        if left == 0:
            self.why_over = "the trace is done"
        elif (
            o.kind == "full"
            and o.started == 0
            and o.failed == 0
            and o.snapshot is not None
            and not any(w.running for w in o.snapshot.workloads)
            and self.cluster.to_arrive() == 0
        ):
            self.why_over = (
                f"nothing runs, nothing more arrives, and a full round started none of the "
                f"{left} jobs left: they cannot start on this cluster"
            )
        return self.why_over

    def summary(
        self,
        metrics: ControllerMetrics,
        budgets: BudgetTree,
        rounds: int | None = None,
        wide: bool = False,
    ) -> list[str]:
        """What the run did, and the teams' delivered over owed as /metrics has it (in 80
        columns, or every budget node's with `wide`: `delivered_over_owed_lines`)."""
        span = self.clock.t_s - self.began_s
        wall = time.perf_counter() - self.wall_began
        n = sum(self.rounds.values())
        if self.why_over:
            why = self.why_over
        elif self.clock.t_s >= self.clock.end_s:
            why = "the simulated clock reached --until"
        elif rounds is not None and n >= rounds:
            why = f"--rounds {rounds} done"
        else:
            why = "interrupted"
        lines = [
            f"simulated {self.at(self.began_s):%Y-%m-%d %H:%M} to {self.at():%Y-%m-%d %H:%M} "
            f"UTC ({duration(span)}) in {wall:.1f} s: {why}",
            f"{counted(n, 'round')} ({counted(self.rounds.get('full', 0), 'full round')}, "
            f"{counted(self.rounds.get('event', 0), 'event pass', 'event passes')}), "
            f"{self.started} started, "
            f"{self.preempted} preempted",
        ]
        ratios = {}
        for path in budgets.paths():
            value = metrics.registry.get_sample_value("alloc_delivered_over_owed", {"budget": path})
            if value is not None:
                ratios[path] = value
        return lines + delivered_over_owed_lines(ratios, budgets, wide)


def check_state(store: StateStore, cluster_s: float) -> None:
    """The state must be the simulated cluster's: none of its rounds after the cluster's time
    (epoch seconds; a state left by an earlier run of a cluster file since removed would mix
    two runs)."""
    last = store.rounds(last=1)
    at = last[0]["at_s"] if last else None
    if isinstance(at, int | float) and at > cluster_s + 1e-6:
        raise InputError(
            store.url,
            "state",
            f"it holds rounds up to {datetime.fromtimestamp(at, UTC):%Y-%m-%d %H:%M:%S} UTC, "
            f"after the simulated cluster's time "
            f"({datetime.fromtimestamp(cluster_s, UTC):%Y-%m-%d %H:%M:%S} UTC): it is "
            "an earlier run's; remove it, or name another state in the config",
        )


SUMMARY_WIDTH = 80  # the summary's lines fit a terminal of 80 columns (and a log's line)
LOWEST = 5  # the most teams named as the lowest
NOTHING_OWED = "(-: owed nothing in the window, so nothing to deliver)"


def delivered_over_owed_lines(
    ratios: Mapping[BudgetPath, float], budgets: BudgetTree, wide: bool = False
) -> list[str]:
    """Delivered over owed (`ratios`, NaN: owed nothing, `-`, said so below; none owed
    anything: one line saying so) for people: every team on one line when that fits in 80
    columns (`delivered/owed: nlp/olmo 100.0%, vision 98.2%`);
    else the top-level nodes, the lowest teams and where the rest is (a lab's 169 nodes
    made a line of 4,000 characters), each line in 80 columns:

        delivered/owed: nlp 93.2%, vision 96.3%, robotics 100.0%, science 100.0%
        lowest: nlp/team1/r3 0.0%, nlp/team7/r1 20.0%, nlp/team2/r3 25.0%
        (150 teams, 40 owed nothing: every budget node with --wide, or on /metrics)

    With `wide`, every budget node's, a line each, in the tree's order."""

    def said(path: BudgetPath) -> str:
        value = ratios[path]
        return f"{path} {'-' if math.isnan(value) else pct(value)}"

    teams = [p for p in budgets.leaves() if p in ratios]
    if not teams:
        return []
    if all(math.isnan(ratios[p]) for p in teams):  # a short run: nothing to measure yet
        return ["delivered/owed: none yet, no team was owed anything in the window"]
    legend = [NOTHING_OWED] if any(math.isnan(ratios[p]) for p in teams) else []
    if wide:
        nodes = [p for p in budgets.paths() if p in ratios]
        every = [f"  {said(p)}" for p in nodes]
        return ["delivered/owed of every budget node:", *every, *legend]
    whole = "delivered/owed: " + ", ".join(said(p) for p in teams)
    if len(whole) <= SUMMARY_WIDTH:
        return [whole, *legend]
    top = [said(p) for p in budgets.children(ROOT_PATH) if p in ratios]
    owed = sorted(
        (p for p in teams if not math.isnan(ratios[p])),
        key=lambda p: (ratios[p], natural_key(p)),
    )
    nothing = len(teams) - len(owed)
    return [
        _fitted("delivered/owed: ", top),
        _fitted("lowest: ", [said(p) for p in owed[:LOWEST]], more=False),
        f"({count(len(teams))} teams"
        + (f", {count(nothing)} owed nothing" if nothing else "")
        + ": every budget node with --wide, or on /metrics)",
    ]


def _fitted(head: str, items: list[str], more: bool = True) -> str:
    """`head` and as many of `items` as fit in SUMMARY_WIDTH (at least one), then, with
    `more`, `+N more` for those left out."""
    shown: list[str] = []
    for item in items:
        rest = len(items) - len(shown) - 1
        tail = f", +{count(rest)} more" if rest and more else ""
        if shown and len(head + ", ".join([*shown, item]) + tail) > SUMMARY_WIDTH:
            break
        shown.append(item)
    rest = len(items) - len(shown)
    return head + ", ".join(shown) + (f", +{count(rest)} more" if rest and more else "")


def offset(seconds: float) -> str:
    """Simulated time since the trace's start: +0:05:00, +27:30:00."""
    s = round(seconds)
    return f"+{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"

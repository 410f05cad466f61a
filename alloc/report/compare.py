"""Side-by-side comparison of simulations (`alloc whatif`): comparison.csv, comparison.json,
comparison.png and comparison.html. Each run's deltas are against its baseline: the first run
unless `baselines` names another per run (whatif: a scenario against the base tree under the
same policy). A run stopped before its end (partial) is compared as far as it went: its
deltas are left out unless its baseline covers the same simulated time, and the comparison
names it, and the runs that never started (`not_run`)."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alloc.io.files import atomic_path, write_atomically
from alloc.readable import natural_key
from alloc.report.data import CLASSES, Run, fnum, load_run
from alloc.report.fmt import count, duration, pct, signed, signed_duration

# Per team: (key in metrics.json, higher is better; None: neither, shown for context).
TEAM_KEYS: tuple[tuple[str, bool | None], ...] = (
    ("delivered_gpu_hours", True),
    ("owed_gpu_hours", None),  # what its share and demand entitled it to: context, not a score
    ("delivered_over_owed", True),  # over the window's periods (metrics/pyramid.py)
    ("delivered_over_owed_hourly", True),
    ("wait_p50_s", False),
    ("wait_p90_s", False),
    ("preemptions", False),
)
# Over the run: (key, higher is better, or None when neither is).
OVERALL_KEYS: tuple[tuple[str, bool | None], ...] = (
    ("availability", True),
    ("occupancy", True),
    ("allocated_occupancy", True),
    ("unallocated_occupancy", None),
    ("occupancy_while_queued", True),
    ("delivered_over_owed", True),
    ("delivered_over_owed_hourly", True),
    ("worst_team_delivered_over_owed", True),
    ("worst_team_hourly_delivered_over_owed_hourly", True),
    ("preemptions", False),
    ("preempted_gpu_hours_lost", False),
    ("drains_completed", None),
    ("drain_hours_p50", False),
    ("utilization", True),
    ("invariant_violations", False),
    ("rounds", None),
    ("wall_seconds", None),
    *((f"wait_{cls}_{q}_s", False) for cls in CLASSES for q in ("p50", "p90")),
    # all allocated work (debug, small and large together): metrics.json's wait_allocated_s
    *((f"wait_allocated_{q}_s", False) for q in ("p50", "p90")),
)
# The worst-team rows of OVERALL_KEYS: metrics.json's entry and the ratio in it.
WORST: dict[str, tuple[str, str]] = {
    "worst_team_delivered_over_owed": ("worst_team", "delivered_over_owed"),
    "worst_team_hourly_delivered_over_owed_hourly": (
        "worst_team_hourly",
        "delivered_over_owed_hourly",
    ),
}
COUNTS = ("preemptions", "drains_completed", "invariant_violations", "rounds")
# Deltas smaller than this count as no change (for colouring only).
TOLERANCE = {
    "delivered_gpu_hours": 0.05,
    "owed_gpu_hours": 0.05,
    "delivered_over_owed": 5e-4,
    "delivered_over_owed_hourly": 5e-4,
    "wait_p50_s": 0.5,
    "wait_p90_s": 0.5,
    "preemptions": 0.5,
}


@dataclass
class Comparison:
    labels: list[str]
    runs: list[Run]
    teams: list[str]  # the union of the runs' teams (scenarios may change the budget tree)
    baseline: list[int]  # per run, the run its deltas are against (itself: a baseline)
    not_run: list[str] = field(default_factory=list)  # runs asked for that never started

    def is_baseline(self, i: int) -> bool:
        return self.baseline[i] == i

    def partial(self, i: int) -> bool:
        return bool(self.runs[i].metrics.get("partial"))

    @property
    def any_partial(self) -> bool:
        return bool(self.not_run) or any(self.partial(i) for i in range(len(self.runs)))

    def simulated_days(self, i: int) -> float:
        m = self.runs[i].metrics
        return fnum(m.get("simulated_days", m.get("days")))

    def comparable(self, i: int) -> bool:
        """Run i has deltas against its baseline: neither is partial, or both cover the same
        simulated time (a partial run's totals against a whole run's would be differences of
        spans, not of policies)."""
        b = self.baseline[i]
        if not (self.partial(i) or self.partial(b)):
            return True
        return abs(self.simulated_days(i) - self.simulated_days(b)) < 1e-9

    @property
    def single_baseline(self) -> bool:
        return all(b == 0 for b in self.baseline)

    def team(self, team: str, i: int) -> dict[str, float | None] | None:
        """One team's numbers in run i; None when the team is not in that run. A wait is None
        when the team had no job to wait (not 0 s)."""
        t = self.runs[i].team_metrics.get(team)
        if t is None:
            return None
        values: dict[str, float | None] = {
            key: None if t.get(key) is None else fnum(t.get(key)) for key, _ in TEAM_KEYS
        }
        values["preemptions"] = int(values["preemptions"] or 0)
        return values

    def team_delta(self, team: str, i: int) -> dict[str, float | None] | None:
        base, other = self.team(team, self.baseline[i]), self.team(team, i)
        if base is None or other is None or not self.comparable(i):
            return None
        return {key: _d_or_none(other[key], base[key]) for key, _ in TEAM_KEYS}

    def overall(self, i: int) -> dict[str, float | None]:
        m = self.runs[i].metrics
        out: dict[str, float | None] = {}
        for key, _ in OVERALL_KEYS:
            if key in WORST:
                which, ratio = WORST[key]
                value = (m.get(which) or {}).get(ratio)
            elif key.startswith("wait_"):
                _, cls, q, _ = key.split("_")
                waits = {"allocated": m.get("wait_allocated_s"), **(m.get("wait_s") or {})}
                w = waits.get(cls) or {}
                value = None if w.get("count") == 0 else w.get(q)  # no jobs: no quantile
            else:
                value = m.get(key)
            out[key] = None if value is None else fnum(value)
            if key in COUNTS and out[key] is not None:
                out[key] = int(out[key] or 0)
        return out

    def overall_delta(self, i: int) -> dict[str, float | None]:
        base, other = self.overall(self.baseline[i]), self.overall(i)
        if not self.comparable(i):
            return dict.fromkeys(base)
        return {k: _d_or_none(other[k], base[k]) for k in base}


def _d(a: float, b: float) -> float:
    return round(a - b, 6)


def _d_or_none(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else _d(a, b)


def compare(
    runs: list[tuple[str, Path]],
    baselines: list[int] | None = None,
    not_run: list[str] | None = None,
) -> Comparison:
    """`baselines`: per run, the index of the run its deltas are against (default: the
    first); a baseline's own baseline is itself or an earlier run. `not_run`: labels of runs
    asked for that never started (stopped before), named in the comparison."""
    if not runs:
        raise ValueError("nothing to compare: no runs")
    labels = [label for label, _ in runs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"run labels must be distinct: {labels}")
    baseline = list(baselines) if baselines is not None else [0] * len(runs)
    if len(baseline) != len(runs) or any(not 0 <= b <= i for i, b in enumerate(baseline)):
        raise ValueError(f"each run's baseline is itself or an earlier run: {baseline}")
    loaded = [load_run(folder) for _, folder in runs]
    teams = sorted({t for run in loaded for t in run.team_metrics}, key=natural_key)
    return Comparison(labels, loaded, teams, baseline, list(not_run or []))


def comparison_table(
    runs: list[tuple[str, Path]], baselines: list[int] | None = None
) -> list[list[str]]:
    """Rows of strings for a terminal table, one per team and run (narrow enough for a
    terminal whatever the number of runs); the first row is the header: team, run, delivered
    GPU-hours, delivered / owed, wait p50 and p90, preemptions, and each run's delta against
    its baseline ("-" where a team is missing from a run; the baseline named in the cell when
    runs have different ones)."""
    c = compare(runs, baselines)
    rows = [
        [
            "team",
            "run",
            "delivered",
            "owed",
            "d/o",
            "wait p50",
            "wait p90",
            "preempt.",
            f"against {c.labels[0]}" if c.single_baseline else "against its baseline",
        ]
    ]
    for team in c.teams:
        for i, label in enumerate(c.labels):
            t = c.team(team, i)
            cells = (
                ["-"] * 6
                if t is None
                else [
                    f"{t['delivered_gpu_hours'] or 0.0:,.0f} h",
                    f"{t['owed_gpu_hours'] or 0.0:,.0f} h",
                    pct(t["delivered_over_owed"]),
                    duration(t["wait_p50_s"]),
                    duration(t["wait_p90_s"]),
                    count(t["preemptions"] or 0),
                ]
            )
            against = "" if c.is_baseline(i) else _delta_cell(c.team_delta(team, i))
            if against and not c.single_baseline:
                against = f"{c.labels[c.baseline[i]]}: {against}"
            rows.append([team if i == 0 else "", label, *cells, against])
    return rows


def _delta_cell(d: dict[str, float | None] | None) -> str:
    if d is None:
        return "-"

    def wait(x: float | None) -> str:
        return "-" if x is None else signed_duration(x)

    ratio = d["delivered_over_owed"]  # None when one side was owed nothing
    return (
        f"{signed(d['delivered_gpu_hours'] or 0.0, 0, ' h')} / "
        f"{'-' if ratio is None else signed(100 * ratio, 1, ' pp')} / "
        f"{wait(d['wait_p50_s'])} / {wait(d['wait_p90_s'])} / "
        f"{signed(d['preemptions'] or 0.0, 0)}"
    )


COMPARISON_FILES = ("comparison.csv", "comparison.json", "comparison.png", "comparison.html")


def write_comparison(
    out_dir: Path,
    runs: list[tuple[str, Path]],
    credit: str | None = None,
    baselines: list[int] | None = None,
    not_run: list[str] | None = None,
) -> Path:
    """Write comparison.csv, comparison.json, comparison.png and comparison.html into
    `out_dir`, each whole or not at all; `runs` are (label, output folder), `baselines` and
    `not_run` as for `compare`. Without `credit`, the first credit any run recorded in its
    metrics.json is shown. Returns the HTML's path."""
    from alloc.report.compare_view import write_html, write_png

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    c = compare(runs, baselines, not_run)
    credit = credit or next((r.credit(None) for r in c.runs if r.credit(None)), None)
    _write_csv(out_dir / "comparison.csv", c)
    write_atomically(
        out_dir / "comparison.json", json.dumps(_json(c, credit, out_dir), indent=1) + "\n"
    )
    png = write_png(out_dir / "comparison.png", c)
    return write_html(out_dir / "comparison.html", c, png, credit)


def _write_csv(path: Path, c: Comparison) -> None:
    keys = [k for k, _ in TEAM_KEYS]
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["team", "run", "baseline", *keys, *(f"delta_{k}" for k in keys)])
        for team in c.teams:
            for i, label in enumerate(c.labels):
                values, delta = c.team(team, i), c.team_delta(team, i)
                w.writerow(
                    [
                        team,
                        label,
                        c.labels[c.baseline[i]],
                        *(_csv_num(values[k]) if values else "" for k in keys),
                        *(_csv_num(delta[k]) if delta else "" for k in keys),
                    ]
                )


def _csv_num(x: float | None) -> str:
    return "" if x is None else str(x)  # preemptions are ints, the rest floats


def _folder(folder: Path, out_dir: Path) -> str:
    """A run's folder as comparison.json names it: relative to the file when inside its
    folder (whatif's runs), else absolute (not relative to wherever the command ran)."""
    folder, out_dir = Path(folder).resolve(), Path(out_dir).resolve()
    return str(folder.relative_to(out_dir)) if folder.is_relative_to(out_dir) else str(folder)


def _json(c: Comparison, credit: str | None, out_dir: Path) -> dict[str, Any]:
    runs = []
    for i, (label, run) in enumerate(zip(c.labels, c.runs, strict=True)):
        m = run.metrics
        runs.append(
            {
                "label": label,
                "folder": _folder(run.folder, out_dir),
                "policy": m.get("policy"),
                "seed": m.get("seed"),
                "days": m.get("days"),
                "partial": c.partial(i),
                "simulated_days": c.simulated_days(i),
                **({"stopped_at": m["stopped_at"]} if m.get("stopped_at") else {}),
                "worst_team": m.get("worst_team"),
                "baseline": c.labels[c.baseline[i]],
                "overall": c.overall(i),
                "delta": c.overall_delta(i),
            }
        )
    teams: dict[str, dict[str, Any]] = {}
    for team in c.teams:
        teams[team] = {}
        for i, label in enumerate(c.labels):
            values = c.team(team, i)
            if values is not None:
                delta = c.team_delta(team, i)
                teams[team][label] = {**values, "delta": delta}
    return {
        "baseline": c.labels[0],
        "credit": credit,
        # stopped before the end: some run is partial or never started (`not_run`)
        "partial": c.any_partial,
        "not_run": c.not_run,
        "runs": runs,
        "teams": teams,
    }

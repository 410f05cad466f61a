"""Simulation benchmarks (issues 3 and 14): `.venv/bin/python -m benchmarks.simulation [--quick]
[--only LABEL,...]`.

- The synthetic 1,024-GPU lab (alloc.sim.synthetic) for 30 days: seed 1 under milp, greedy,
  legacy-priority and fifo with the two kinds of rounds (event passes between full rounds,
  models/round.md 9); seeds 1-3 under milp and greedy with a full round on every event as
  well (`--rounds full`, the model before event passes), so that the quality of the two
  models is compared over several seeds in one run (`synthetic-full`, `synthetic-s2`,
  `synthetic-s2-full`, ...); seed 1 with every pass's whole plan validated from scratch
  (`synthetic-validated`); and 7 days (its own 7-day trace) under milp and greedy (the
  README's first command is the 7-day milp run).
- The full Microsoft Philly trace (82,247 jobs submitted over 108 days, replayed for 110 from
  its first day's midnight; CC BY 4.0, ATC'19) imported with `alloc trace import philly`
  (cluster sized from its node counts, 8 GPUs a node), under greedy, milp, legacy-priority and
  fifo, and on a quarter of the cluster (2 GPUs a node).

Every run is a fresh process (its peak memory is its own); the figures and their targets are
written between markers into benchmarks/RESULTS.md (and raw into results-simulation.json).
Runs go two at a time (this machine has 2 cores); wall seconds are each run's own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from alloc.report.fmt import demand as fmt_demand
from alloc.report.fmt import duration as _s
from alloc.report.fmt import pct
from alloc.traces.philly import ATTRIBUTION as PHILLY_CREDIT

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TRACES = REPO.parent / "shared" / "traces"
OUT = Path("/tmp/alloc-bench-sim")
BEGIN, END = "<!-- simulation:begin -->", "<!-- simulation:end -->"
POLICIES = ("milp", "greedy", "legacy-priority", "fifo")
CONTRACT = ("milp", "greedy")  # the policies with two kinds of rounds
SEEDS = (1, 2, 3)
# source label -> (seed, rounds, validate every pass); the synthetic lab's 30-day runs
SYNTHETIC = {
    "synthetic": (1, "events", False),
    "synthetic-full": (1, "full", False),
    "synthetic-validated": (1, "events", True),
    **{f"synthetic-s{s}": (s, "events", False) for s in SEEDS[1:]},
    **{f"synthetic-s{s}-full": (s, "full", False) for s in SEEDS[1:]},
}
SOURCES = (*SYNTHETIC, "synthetic-7d", "philly", "philly-2gpu")
LABELS = [f"{source}/{policy}" for source in SOURCES for policy in POLICIES]


def seed_labels(policy: str, rounds: str) -> list[str]:
    """The 30-day synthetic runs of `policy` with that round model, seeds 1-3 in order."""
    suffix = "-full" if rounds == "full" else ""
    return [
        (f"synthetic{suffix}" if s == 1 else f"synthetic-s{s}{suffix}") + f"/{policy}"
        for s in SEEDS
    ]


def child(spec_json: str) -> None:
    from alloc.sim.run import RunSpec, run

    spec = RunSpec(**json.loads(spec_json))
    started = time.perf_counter()
    metrics = run(spec)
    metrics["process_seconds"] = time.perf_counter() - started
    metrics["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(metrics))


def _run(spec: dict[str, Any]) -> dict[str, Any]:
    # One hash seed for every child, so that any dependence on it that comes back cannot move
    # a comparison (the last one, a search memo keyed by object ids, was fixed at 4e13e67).
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.simulation", "--child", json.dumps(spec)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        return {"label": spec["label"], "error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def specs(quick: bool, only: set[str] | None = None) -> list[dict[str, Any]]:
    from alloc.io import dump_instance
    from alloc.sim.synthetic import SyntheticLab, synthetic_lab

    days = 3.0 if quick else 30.0
    out = []
    for source, (seed, rounds, validated) in SYNTHETIC.items():
        if quick and source != "synthetic":
            continue
        lab, _ = synthetic_lab(SyntheticLab(days=days, seed=seed))
        lab_text = dump_instance(lab, f"synthetic lab (alloc.sim.synthetic, seed {seed})")
        for policy in POLICIES if source == "synthetic" else CONTRACT:
            out.append(
                dict(
                    label=f"{source}/{policy}",
                    lab_yaml=lab_text,
                    lab_file="synthetic",
                    policy=policy,
                    days=days,
                    seed=seed,
                    rounds=rounds,
                    validate_passes=validated,
                    out=str(OUT / f"{source}-{policy}"),
                )
            )
    if not quick:
        lab, _ = synthetic_lab(SyntheticLab(days=7.0))
        lab_text = dump_instance(lab, "synthetic lab (alloc.sim.synthetic, seed 1)")
        for policy in CONTRACT:
            out.append(
                dict(
                    label=f"synthetic-7d/{policy}",
                    lab_yaml=lab_text,
                    lab_file="synthetic",
                    policy=policy,
                    days=7.0,
                    out=str(OUT / f"synthetic-7d-{policy}"),
                )
            )
    if only is not None:
        out = [s for s in out if s["label"] in only]
    if only is not None and not any(label.startswith("philly") for label in only):
        return out
    # Philly at 8 GPUs a node (the importer's default, an upper estimate of its capacity) is
    # offered ~13% load: no contention to compare. At 2 GPUs a node (Philly also had 2-GPU
    # servers) the same trace meets a cluster a quarter the size.
    for source, per_node in (("philly", 8), ("philly-2gpu", 2)):
        wanted = [p for p in POLICIES if only is None or f"{source}/{p}" in only]
        if not wanted:
            continue
        folder = OUT / source
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "alloc"),
                "trace",
                "import",
                "philly",
                str(TRACES / "philly-sia"),
                "-o",
                str(folder / "trace.csv"),
                "--lab",
                str(folder / "lab.yaml"),
                "--gpus-per-node",
                str(per_node),
            ],
            check=True,
            capture_output=True,
        )
        philly_days = 10.0 if quick else 110.0  # the last submission: day 109.3
        philly_lab = (folder / "lab.yaml").read_text(encoding="utf-8")
        for policy in wanted:
            out.append(
                dict(
                    label=f"{source}/{policy}",
                    lab_yaml=philly_lab,
                    lab_file=f"{source} lab",
                    policy=policy,
                    days=philly_days,
                    out=str(OUT / f"{source}-{policy}"),
                    trace=str(folder / "trace.csv"),
                    credit=PHILLY_CREDIT,
                )
            )
    return out


def _idle(r: dict[str, Any]) -> str:
    """The idle GPU time while work was queued, split by whether waiting work fit into the
    free GPUs (runs before the split was measured show nothing)."""
    idle = r.get("idle_while_queued")
    if not idle:
        return ""
    return f" ({pct(idle['work_fit'], 2)} / {pct(idle['nothing_fit'], 2)})"


def render(results: list[dict[str, Any]], machine_line: str, when: str) -> str:
    by = {r["label"]: r for r in results}
    lines = [
        BEGIN,
        "",
        "## Simulation (issues 3 and 14)",
        "",
        f"`.venv/bin/python -m benchmarks.simulation`, last written {when}; {machine_line}. "
        "Each run is its own process (at most two at a time on the 2 cores) and names "
        "the commit it measured.",
        "",
    ]
    head = (
        "| run | simulation s (process s) | peak MiB "
        "| full rounds (skipped as quiet) + event passes (skipped) "
        "| delivered/owed | worst team "
        "| occupancy while queued (idle: waiting work fit / nothing fit) "
        "| debug p90 | small p90 | large p90 (never started) "
        "| preemptions (GPU-h lost) | invariant violations | allocated demand / ready "
        "| commit |"
    )
    lines += [head, "|" + "---|" * 14]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['label']} | failed |" + " |" * 12)
            continue
        w = r["wait_s"]
        worst = r.get("worst_team") or {}
        lines.append(
            f"| {r['label']} | {r['wall_seconds']:.0f} ({r['process_seconds']:.0f}) | "
            f"{r['peak_mib']:.0f} | {r['rounds']} "
            f"({r['skipped_rounds']}) + {r.get('event_passes', 0)} "
            f"({r.get('skipped_passes', '-')}) | "
            f"{pct(r['delivered_over_owed'], 2)} | "
            f"{worst.get('budget', '-')} {pct(worst.get('delivered_over_owed'), 2)} | "
            f"{pct(r['occupancy_while_queued'], 2)}{_idle(r)} | {_s(w['debug']['p90'])} | "
            f"{_s(w['small']['p90'])} | {_s(w['large']['p90'])} "
            f"({w['large'].get('never_started', '-')}) | {r['preemptions']} "
            f"({r['preempted_gpu_hours_lost']:,.0f}) | {r['invariant_violations']} | "
            f"{fmt_demand(r.get('allocated_demand_over_ready'))} | {r.get('commit', '-')} |"
        )

    def get(label: str, *keys: str) -> Any:
        v: Any = by.get(label, {})
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        return v

    def verdict(ok: bool | None) -> str:  # None: a figure it needs was not measured
        return "-" if ok is None else ("met" if ok else "NOT MET")

    sg, sm = "synthetic/greedy", "synthetic/milp"
    sg7, sm7 = "synthetic-7d/greedy", "synthetic-7d/milp"
    rows = [
        (
            "Philly (whole trace, 110 days), greedy <= 120 s",
            get("philly/greedy", "wall_seconds"),
            lambda v: v <= 120,
        ),
        ("Philly, greedy < 2 GiB", get("philly/greedy", "peak_mib"), lambda v: v < 2048),
        (
            "synthetic milp delivered/owed >= 99%",
            get(sm, "delivered_over_owed"),
            lambda v: v >= 0.99,
        ),
        (
            "synthetic milp worst team >= 97%",
            get(sm, "worst_team", "delivered_over_owed"),
            lambda v: v >= 0.97,
        ),
        (
            "synthetic milp occupancy while queued >= 99%",
            get(sm, "occupancy_while_queued"),
            lambda v: v >= 0.99,
        ),
        (
            "synthetic milp debug p90 wait <= 60 s",
            get(sm, "wait_s", "debug", "p90"),
            lambda v: v <= 60,
        ),
        (
            "synthetic milp large p90 <= half of greedy's",
            get(sm, "wait_s", "large", "p90"),
            lambda v: _below(v, get(sg, "wait_s", "large", "p90"), 0.5),
        ),
        (
            "synthetic milp invariant violations = 0",
            get(sm, "invariant_violations"),
            lambda v: v == 0,
        ),
        (
            "7 days synthetic: milp delivered/owed >= 99%",
            get(sm7, "delivered_over_owed"),
            lambda v: v >= 0.99,
        ),
        (
            "7 days synthetic: milp worst team >= 97%",
            get(sm7, "worst_team", "delivered_over_owed"),
            lambda v: v >= 0.97,
        ),
        (
            "7 days synthetic: milp debug p90 wait <= 60 s",
            get(sm7, "wait_s", "debug", "p90"),
            lambda v: v <= 60,
        ),
        (
            "7 days synthetic: milp large p90 <= half of greedy's",
            get(sm7, "wait_s", "large", "p90"),
            lambda v: _below(v, get(sg7, "wait_s", "large", "p90"), 0.5),
        ),
        (
            "7 days synthetic: milp invariant violations = 0",
            get(sm7, "invariant_violations"),
            lambda v: v == 0,
        ),
        (
            "legacy-priority: worst team below milp's",
            get("synthetic/legacy-priority", "worst_team", "delivered_over_owed"),
            lambda v: _below(v, get(sm, "worst_team", "delivered_over_owed")),
        ),
        (
            "legacy-priority: worst team below greedy's",
            get("synthetic/legacy-priority", "worst_team", "delivered_over_owed"),
            lambda v: _below(v, get(sg, "worst_team", "delivered_over_owed")),
        ),
        (
            "legacy-priority: debug waits of hours (longest wait, s)",
            get("synthetic/legacy-priority", "wait_s", "debug", "max"),
            lambda v: v >= 3600,
        ),
    ]
    lines += ["", "| target | measured | verdict |", "|---|---|---|"]
    for name, value, test in rows:
        shown = "-" if value is None else (f"{value:.4g}" if isinstance(value, float) else value)
        lines.append(f"| {name} | {shown} | {verdict(None if value is None else test(value))} |")
    lines += [
        "",
        "### Issue 14: event passes between full rounds",
        "",
        "Two kinds of rounds (models/round.md 9) against a full round on every event "
        "(`--rounds full`), seeds 1-3 of the synthetic lab, 30 days each. Deltas are "
        "events minus full, in points; median (range) over the seeds.",
        "",
    ]
    lines += [
        "| policy | delivered/owed | worst team | occupancy while queued "
        "| debug p90 wait, events (full) | simulation s, events (full), seed 1 |",
        "|---|---|---|---|---|---|",
    ]
    for policy in CONTRACT:
        ev = [by.get(lab) for lab in seed_labels(policy, "events")]
        full = [by.get(lab) for lab in seed_labels(policy, "full")]
        pairs = [(e, f) for e, f in zip(ev, full, strict=True) if _ok(e) and _ok(f)]
        cells = []
        for keys in (
            ("delivered_over_owed",),
            ("worst_team", "delivered_over_owed"),
            ("occupancy_while_queued",),
        ):
            deltas = [
                100 * (_get(e, *keys) - _get(f, *keys))
                for e, f in pairs
                if _get(e, *keys) is not None and _get(f, *keys) is not None
            ]
            cells.append(_spread(deltas))
        debug = ", ".join(
            f"{_s(_get(e, 'wait_s', 'debug', 'p90'))} ({_s(_get(f, 'wait_s', 'debug', 'p90'))})"
            for e, f in pairs
        )
        walls = (
            f"{_get(ev[0], 'wall_seconds'):.0f} ({_get(full[0], 'wall_seconds'):.0f})"
            if _ok(ev[0]) and _ok(full[0])
            else "-"
        )
        lines.append(f"| {policy} | {' | '.join(cells)} | {debug or '-'} | {walls} |")
    lines += ["", "| target (issue 14) | measured | verdict |", "|---|---|---|"]
    rows14: list[tuple[str, Any, Any]] = [
        (
            "30 days synthetic, seed 1, greedy <= 20 s (stretch 10 s)",
            get(sg, "wall_seconds"),
            lambda v: v <= 20,
        ),
        ("30 days synthetic, seed 1, milp <= 120 s", get(sm, "wall_seconds"), lambda v: v <= 120),
        (
            "30 days synthetic, greedy and milp: peak memory < 1 GiB",
            max((get(x, "peak_mib") or 0) for x in (sg, sm)) or None,
            lambda v: v < 1024,
        ),
        (
            "Philly (whole trace, 110 days), greedy <= 40 s",
            get("philly/greedy", "wall_seconds"),
            lambda v: v <= 40,
        ),
        (
            "README's first command (7 days synthetic, milp): simulation <= 60 s",
            get(sm7, "wall_seconds"),
            lambda v: v <= 60,
        ),
    ]
    for policy in CONTRACT:
        pairs = [
            (by.get(e), by.get(f))
            for e, f in zip(seed_labels(policy, "events"), seed_labels(policy, "full"), strict=True)
        ]
        pairs = [(e, f) for e, f in pairs if _ok(e) and _ok(f)]

        def median_delta(keys: tuple[str, ...], pairs=pairs) -> float | None:
            d = [
                100 * (_get(e, *keys) - _get(f, *keys))
                for e, f in pairs
                if _get(e, *keys) is not None and _get(f, *keys) is not None
            ]
            return statistics.median(d) if d else None

        rows14 += [
            (
                f"{policy}: delivered/owed within 0.5 points of full rounds (median delta)",
                median_delta(("delivered_over_owed",)),
                lambda v: abs(v) <= 0.5 or v > 0,
            ),
            (
                f"{policy}: worst team within 1 point (median delta)",
                median_delta(("worst_team", "delivered_over_owed")),
                lambda v: v >= -1.0,
            ),
            (
                f"{policy}: debug p90 wait <= 60 s (worst seed, s)",
                max((_get(e, "wait_s", "debug", "p90") for e, _ in pairs), default=None),
                lambda v: v <= 60,
            ),
            (
                f"{policy}: occupancy while queued no lower (median delta, points)",
                median_delta(("occupancy_while_queued",)),
                lambda v: v >= 0,
            ),
            (
                f"{policy}: invariant violations with every pass validated whole",
                get(f"synthetic-validated/{policy}", "invariant_violations"),
                lambda v: v == 0,
            ),
        ]
    for name, value, test in rows14:
        shown = "-" if value is None else (f"{value:.4g}" if isinstance(value, float) else value)
        lines.append(f"| {name} | {shown} | {verdict(None if value is None else test(value))} |")
    lines += ["", f"Philly rows: {PHILLY_CREDIT}.", ""]
    notes = HERE / "simulation-notes.md"  # the written reading of these figures, kept by hand
    if notes.exists():
        lines += [notes.read_text(encoding="utf-8").rstrip(), ""]
    lines += [END]
    return "\n".join(lines) + "\n"


def _ok(r: dict[str, Any] | None) -> bool:
    return r is not None and "error" not in r


def _get(r: dict[str, Any] | None, *keys: str) -> Any:
    v: Any = r or {}
    for k in keys:
        v = v.get(k) if isinstance(v, dict) else None
    return v


def _spread(values: list[float]) -> str:
    """Median (min to max) in points, signed."""
    if not values:
        return "-"
    return (
        f"{statistics.median(values):+.2f} ({min(values):+.2f} to {max(values):+.2f})"
        if len(values) > 1
        else f"{values[0]:+.2f}"
    )


def _below(value: float, other: float | None, factor: float = 1.0) -> bool | None:
    """value < factor x other (value <= for factor < 1); None when `other` was not measured."""
    if other is None:
        return None
    return value <= factor * other if factor < 1.0 else value < other


def with_section(text: str, section: str, markers: tuple[str, str] = (BEGIN, END)) -> str:
    """`text` with its section between `markers` (the simulation's by default) replaced by
    `section` (appended when absent)."""
    begin, end = markers
    if begin in text and end in text:
        return text[: text.index(begin)] + section + text[text.index(end) + len(end) + 1 :]
    return text.rstrip("\n") + "\n\n" + section


def kept_section(text: str, markers: tuple[str, str] = (BEGIN, END)) -> str:
    """The section between `markers` of an existing RESULTS.md, or "" (benchmarks.run keeps
    the sections other benchmarks write)."""
    begin, end = markers
    if begin in text and end in text:
        return text[text.index(begin) : text.index(end) + len(end)] + "\n"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only",
        help="comma-separated run labels, e.g. synthetic/greedy; "
        "the other runs' figures are kept from results-simulation.json",
    )
    parser.add_argument("--workers", type=int, default=2, help="runs at a time")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    from benchmarks.machine import machine

    all_specs = specs(args.quick, set(args.only.split(",")) if args.only else None)
    info = machine(REPO)
    commit = info["git_commit"] + (" (uncommitted changes)" if info["alloc_dirty"] else "")
    mine: dict[str, dict[str, Any]] = {}  # this invocation's runs, by label
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(_run, spec) for spec in all_specs]
        for future in as_completed(futures):
            result = future.result() | {"commit": commit, "date": info["date"]}
            mine[result["label"]] = result
            # The kept figures are read again at every write, so that two invocations with
            # --only running side by side keep each other's runs.
            kept = kept_results(args.only is not None)
            results = [r for r in kept if r["label"] not in mine] + list(mine.values())
            results.sort(key=lambda r: LABELS.index(r["label"]) if r["label"] in LABELS else 99)
            _write(results, info)  # written as each run ends: a long run loses nothing
    print((HERE / "RESULTS.md").read_text(encoding="utf-8").split(BEGIN)[1].split(END)[0])


def kept_results(keep: bool) -> list[dict[str, Any]]:
    """With --only, the figures of the runs not repeated (each names its commit and date)."""
    path = HERE / "results-simulation.json"
    if not keep or not path.exists():
        return []
    return [r for r in json.loads(path.read_text(encoding="utf-8")) if "error" not in r]


def _write(results: list[dict[str, Any]], info: dict[str, Any]) -> None:
    (HERE / "results-simulation.json").write_text(json.dumps(results, indent=1) + "\n")
    dirty = " (uncommitted changes)" if info["alloc_dirty"] else ""
    machine_line = (
        f"{info['cpu_model']}, {info['cores']} cores, alloc at commit {info['git_commit']}{dirty}"
    )
    when = info["date"]
    section = render(results, machine_line, when)
    results_md = HERE / "RESULTS.md"
    old = results_md.read_text(encoding="utf-8") if results_md.exists() else ""
    results_md.write_text(with_section(old, section), encoding="utf-8")


if __name__ == "__main__":
    main()

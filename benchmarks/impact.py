"""Impact benchmarks (issue 15): `.venv/bin/python -m benchmarks.impact [--days 30]
[--seeds 1,2,3,4,5] [--policies milp,greedy,fairshare-sort] [--only LABEL,...] [--workers 2]
[--philly [--philly-days 110]]`.

The synthetic 1,024-GPU lab (alloc.sim.synthetic) for 30 days, seeds 1-5, under the round
allocator (`milp`, `greedy`) and the published design (`fairshare-sort`), each run a fresh
process (`benchmarks.simulation`'s child). Quality is reported per policy as the median and the
range over the seeds (one seed of a contended month moves by a point when any decision
changes): delivered/owed over the window and hour by hour, overall and for the worst team,
occupancy while work is queued, p90 waits by class, large jobs never started, GPU-hours
destroyed by preemption over GPU-hours delivered, invariant violations. The figures and
issue 15's targets are written between markers into benchmarks/RESULTS.md (raw runs into
results-impact.json; `--only` keeps the other runs' figures; `--render` rewrites the section from
results-impact.json and benchmarks/impact-notes.md without running anything). `--philly`
runs the Philly replay at 2 GPUs a node instead, one run per policy, shown in a table of its
own (Philly's data is CC BY 4.0; credited under the table).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from benchmarks.simulation import _get

HERE = Path(__file__).resolve().parent
OUT = Path("/tmp/alloc-bench-impact")
MARKERS = ("<!-- impact:begin -->", "<!-- impact:end -->")
POLICIES = ("milp", "greedy", "fairshare-sort")
SEEDS = (1, 2, 3, 4, 5)


def label(policy: str, seed: int) -> str:
    return f"synthetic-s{seed}/{policy}"


def philly_specs(days: float, policies: tuple[str, ...]) -> list[dict[str, Any]]:
    """The Philly trace at 2 GPUs a node (`benchmarks.simulation`'s philly-2gpu: at 8 a node
    it offers ~13% load, nothing to compare), one run per policy (the trace is fixed)."""
    import subprocess

    from alloc.traces.philly import ATTRIBUTION
    from benchmarks.simulation import REPO, TRACES

    folder = OUT / "philly-2gpu"
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(REPO / ".venv" / "bin" / "alloc"), "trace", "import", "philly",
         str(TRACES / "philly-sia"), "-o", str(folder / "trace.csv"), "--lab",
         str(folder / "lab.yaml"), "--gpus-per-node", "2"],
        check=True, capture_output=True,
    )  # fmt: skip
    lab = (folder / "lab.yaml").read_text(encoding="utf-8")
    return [
        dict(label=f"philly-2gpu/{policy}", lab_yaml=lab, lab_file="philly-2gpu lab",
             policy=policy, days=days, out=str(OUT / f"philly-2gpu-{policy}"),
             trace=str(folder / "trace.csv"), credit=ATTRIBUTION)
        for policy in policies
    ]  # fmt: skip


def specs(days: float, seeds: tuple[int, ...], policies: tuple[str, ...]) -> list[dict[str, Any]]:
    from alloc.io import dump_instance
    from alloc.sim.synthetic import SyntheticLab, synthetic_lab

    out = []
    for seed in seeds:
        lab, _ = synthetic_lab(SyntheticLab(days=days, seed=seed))
        text = dump_instance(lab, f"synthetic lab (alloc.sim.synthetic, seed {seed})")
        for policy in policies:
            out.append(
                dict(
                    label=label(policy, seed),
                    lab_yaml=text,
                    lab_file="synthetic",
                    policy=policy,
                    days=days,
                    seed=seed,
                    out=str(OUT / f"s{seed}-{policy}"),
                )
            )
    return out


def preempted_share(m: dict[str, Any]) -> float | None:
    """GPU-hours destroyed by preemption over allocated GPU-hours delivered."""
    delivered = sum(t.get("delivered_gpu_hours") or 0.0 for t in (m.get("teams") or {}).values())
    lost = m.get("preempted_gpu_hours_lost")
    return None if lost is None or delivered <= 0 else lost / delivered


# (name, how to read it from metrics.json, unit)
FIGURES: tuple[tuple[str, Callable[[dict[str, Any]], Any], str], ...] = (
    ("delivered/owed (window)", lambda m: m.get("delivered_over_owed"), "pct"),
    ("worst team (window)", lambda m: _get(m, "worst_team", "delivered_over_owed"), "pct"),
    ("delivered/owed (hourly)", lambda m: m.get("delivered_over_owed_hourly"), "pct"),
    (
        "worst team (hourly)",
        lambda m: _get(m, "worst_team_hourly", "delivered_over_owed_hourly"),
        "pct",
    ),
    ("occupancy while queued", lambda m: m.get("occupancy_while_queued"), "pct"),
    ("wait p90 debug", lambda m: _get(m, "wait_s", "debug", "p90"), "s"),
    ("wait p90 small", lambda m: _get(m, "wait_s", "small", "p90"), "s"),
    ("wait p90 large", lambda m: _get(m, "wait_s", "large", "p90"), "s"),
    ("large never started", lambda m: _get(m, "wait_s", "large", "never_started"), "n"),
    ("preempted GPU-h lost / delivered", preempted_share, "pct"),
    ("preemptions", lambda m: m.get("preemptions"), "n"),
    ("invariant violations", lambda m: m.get("invariant_violations"), "n"),
    ("wall seconds", lambda m: m.get("wall_seconds"), "n"),
)


def _fmt(value: Any, unit: str) -> str:
    from alloc.report.fmt import duration

    if value is None:
        return "-"
    if unit == "pct":
        return f"{100 * value:.2f}%"
    if unit == "s":
        return duration(value)
    return (
        f"{value:,.0f}" if isinstance(value, int) or float(value).is_integer() else f"{value:,.1f}"
    )


def spread(values: list[Any], unit: str) -> str:
    """Median (min to max) over the seeds measured."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return _fmt(med, unit)
    return f"{_fmt(med, unit)} ({_fmt(min(values), unit)} to {_fmt(max(values), unit)})"


def median(
    results: dict[str, dict[str, Any]], policy: str, read: Callable[[dict[str, Any]], Any]
) -> float | None:
    values = [read(r) for lab, r in results.items() if lab.endswith("/" + policy)]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def render(every: dict[str, dict[str, Any]], machine_line: str, when: str) -> str:
    results = {k: r for k, r in every.items() if k.startswith("synthetic-s")}
    philly = {k: r for k, r in every.items() if k.startswith("philly-2gpu/")}
    policies = [p for p in POLICIES if any(k.endswith("/" + p) for k in results)]
    seeds = sorted({int(k.split("/")[0].removeprefix("synthetic-s")) for k in results})
    lines = [
        MARKERS[0],
        "## Impact (issue 15): 30 synthetic days, seeds "
        + ", ".join(map(str, seeds))
        + ", median (range) over the seeds",
        "",
        f"{when}; {machine_line}. `.venv/bin/python -m benchmarks.impact` (each row of a policy "
        "is the median over the seeds, the range in parentheses; every run's commit is in "
        "benchmarks/results-impact.json).",
        "",
        "| figure | " + " | ".join(policies) + " |",
        "|---|" + "---|" * len(policies),
    ]
    for name, read, unit in FIGURES:
        cells = [
            spread([read(r) for k, r in sorted(results.items()) if k.endswith("/" + p)], unit)
            for p in policies
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    commits = sorted({r.get("commit", "?") for r in results.values()})
    lines += ["", "Runs at commit(s): " + ", ".join(commits) + ".", ""]

    def med(policy: str, read: Callable[[dict[str, Any]], Any]) -> float | None:
        return median(results, policy, read)

    worst = FIGURES[1][1]
    large = FIGURES[7][1]
    checks: list[tuple[str, float | None, Callable[[float], bool], str]] = [
        (
            "milp delivered/owed over the window >= 99% (median)",
            med("milp", FIGURES[0][1]),
            lambda v: v >= 0.99,
            "pct",
        ),
        ("milp worst team >= 97% (median)", med("milp", worst), lambda v: v >= 0.97, "pct"),
        (
            "milp occupancy while queued >= 99%",
            med("milp", FIGURES[4][1]),
            lambda v: v >= 0.99,
            "pct",
        ),
        ("milp debug p90 <= 60 s", med("milp", FIGURES[5][1]), lambda v: v <= 60, "s"),
        ("milp small p90 <= 15 min", med("milp", FIGURES[6][1]), lambda v: v <= 900, "s"),
        ("milp large p90 <= 12 h", med("milp", large), lambda v: v <= 12 * 3600, "s"),
        (
            "milp large jobs never started = 0 (median)",
            med("milp", FIGURES[8][1]),
            lambda v: v == 0,
            "n",
        ),
        (
            "milp GPU-hours destroyed by preemption <= 3% of delivered",
            med("milp", preempted_share),
            lambda v: v <= 0.03,
            "pct",
        ),
    ]
    for other in ("greedy", "fairshare-sort"):
        mine, theirs = med("milp", worst), med(other, worst)
        checks.append(
            (
                f"milp ahead of {other} on the worst team (medians, points)",
                None if mine is None or theirs is None else 100 * (mine - theirs),
                lambda v: v > 0,
                "pts",
            )
        )
        mine, theirs = med("milp", large), med(other, large)
        checks.append(
            (
                f"milp ahead of {other} on the large p90 (medians, milp - {other})",
                None if mine is None or theirs is None else mine - theirs,
                lambda v: v < 0,
                "ds",
            )
        )
    checks.append(
        (
            "zero invariant violations (every run of every policy)",
            max((r.get("invariant_violations") or 0 for r in results.values()), default=None),
            lambda v: v == 0,
            "n",
        )
    )
    lines += ["| issue 15 target | measured | verdict |", "|---|---|---|"]
    for name, value, test, unit in checks:
        if unit == "pts":
            shown = "-" if value is None else f"{value:+.2f}"
        elif unit == "ds":
            shown = "-" if value is None else ("+" if value >= 0 else "-") + _fmt(abs(value), "s")
        else:
            shown = _fmt(value, unit)
        verdict = "not measured" if value is None else ("met" if test(value) else "NOT MET")
        lines.append(f"| {name} | {shown} | {verdict} |")
    lines += [
        "",
        "Per run:",
        "",
        "| run | d/o window | worst (window) | d/o hourly | "
        "occupancy while queued | large p90 | preempted lost | violations | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k, r in sorted(results.items()):
        worst_ratio = _fmt(_get(r, "worst_team", "delivered_over_owed"), "pct")
        lines.append(
            f"| {k} | {_fmt(r.get('delivered_over_owed'), 'pct')} | "
            f"{_get(r, 'worst_team', 'budget')} {worst_ratio} | "
            f"{_fmt(r.get('delivered_over_owed_hourly'), 'pct')} | "
            f"{_fmt(r.get('occupancy_while_queued'), 'pct')} | "
            f"{_fmt(_get(r, 'wait_s', 'large', 'p90'), 's')} | "
            f"{_fmt(preempted_share(r), 'pct')} | {r.get('invariant_violations')} | "
            f"{_fmt(r.get('wall_seconds'), 'n')} |"
        )
    lines += _philly_table(philly)
    notes = HERE / "impact-notes.md"  # the written reading of these figures, kept by hand
    if notes.exists():
        lines += ["", notes.read_text(encoding="utf-8").rstrip()]
    lines += [MARKERS[1]]
    return "\n".join(lines) + "\n"


def _philly_table(philly: dict[str, dict[str, Any]]) -> list[str]:
    """The same figures side by side on the Philly replay at 2 GPUs a node (issue 15)."""
    if not philly:
        return []
    from alloc.traces.philly import ATTRIBUTION

    policies = [p for p in POLICIES if f"philly-2gpu/{p}" in philly]
    days = sorted({r["days"] for r in philly.values() if r.get("days")})
    lines = [
        "",
        f"Philly replay at 2 GPUs a node ({', '.join(f'{d:g}' for d in days)} days; one "
        "run per policy, the trace is fixed; `python -m benchmarks.impact --philly`):",
        "",
        "| figure | " + " | ".join(policies) + " |",
        "|---|" + "---|" * len(policies),
    ]
    for name, read, unit in FIGURES:
        cells = [_fmt(read(philly[f"philly-2gpu/{p}"]), unit) for p in policies]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    commits = sorted({r.get("commit", "?") for r in philly.values()})
    lines += [
        "",
        "Runs at commit(s): " + ", ".join(commits) + ".",
        "",
        f"Philly rows: {ATTRIBUTION}.",
    ]
    return lines


def main() -> None:
    from benchmarks.machine import machine
    from benchmarks.simulation import _run

    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--only", help="comma-separated run labels, e.g. synthetic-s2/greedy")
    parser.add_argument("--workers", type=int, default=2, help="runs at a time")
    parser.add_argument("--render", action="store_true", help="rewrite the section only")
    parser.add_argument(
        "--philly", action="store_true", help="the Philly replay at 2 GPUs a node instead"
    )
    parser.add_argument("--philly-days", type=float, default=110.0)
    args = parser.parse_args()
    raw = HERE / "results-impact.json"
    if args.render:
        kept = json.loads(raw.read_text(encoding="utf-8"))
        _write({k: r for k, r in kept.items() if "error" not in r}, machine(HERE.parent))
        return
    seeds = tuple(int(s) for s in args.seeds.split(","))
    policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    todo = (
        philly_specs(args.philly_days, policies)
        if args.philly
        else specs(args.days, seeds, policies)
    )
    if args.only:
        wanted = set(args.only.split(","))
        todo = [s for s in todo if s["label"] in wanted]
    info = machine(HERE.parent)
    commit = info["git_commit"] + (" (uncommitted changes)" if info["alloc_dirty"] else "")
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for future in as_completed([pool.submit(_run, s) for s in todo]):
            result = future.result() | {"commit": commit, "date": info["date"]}
            print(
                json.dumps(
                    {
                        k: result.get(k)
                        for k in ("label", "delivered_over_owed", "wall_seconds", "error")
                    }
                ),
                flush=True,
            )
            # Read again at every write: two invocations side by side keep each other's runs.
            kept = json.loads(raw.read_text(encoding="utf-8")) if raw.exists() else {}
            kept[result["label"]] = result
            raw.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            _write({k: r for k, r in kept.items() if "error" not in r}, info)
    print(
        (HERE / "RESULTS.md").read_text(encoding="utf-8").split(MARKERS[0])[1].split(MARKERS[1])[0]
    )


def _write(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> None:
    from benchmarks.simulation import with_section

    machine_line = f"{info['cpu_model']}, {info['cores']} cores"
    section = render(results, machine_line, info["date"])
    md = HERE / "RESULTS.md"
    old = md.read_text(encoding="utf-8") if md.exists() else ""
    md.write_text(with_section(old, section, MARKERS), encoding="utf-8")


if __name__ == "__main__":
    main()

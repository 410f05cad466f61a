"""The benchmark harness: `.venv/bin/python -m benchmarks.run [--quick] [--only NAME]`.

Every run (one instance, one solver) happens in a fresh subprocess (`benchmarks.child`), so its
peak memory is its own. The full run writes benchmarks/RESULTS.md and benchmarks/results.json;
`--quick` and `--only` write RESULTS-partial.md / results-partial.json instead, so a smoke check
never overwrites the recorded baseline (`--out` picks another directory).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import machine
from benchmarks.report import render
from benchmarks.simulation import kept_section, with_section
from benchmarks.summary import fragmentation_summary, scale_summary, stopgap_summary, targets

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FAMILIES = ("scale", "stopgap", "fragmentation")

# GPUs -> the MILP's stopping gap (the target gap at that size).
SCALE_GAPS = {128: 0.001, 1024: 0.001, 16384: 0.01, 65536: 0.02}
TIME_LIMIT_S = 10.0
SEEDS = (1, 2, 3, 4, 5)
FRAGMENTATION_SIZES = (1024, 4096)
FRAGMENTATION_GAP = 0.001  # Policy's default
# Stop-gap sensitivity (MILP only, scale instances): what the MILP achieves below the target gap.
STOPGAP = {16384: (0.001,), 65536: (0.01, 0.001)}
QUICK_STOPGAP = {16384: (0.001,)}
QUICK_SCALE = (128, 1024, 16384)
QUICK_FRAGMENTATION = (1024,)
QUICK_SEEDS = (1, 2)
CHILD_TIMEOUT_S = 300.0


def jobs(family: str, quick: bool) -> list[dict[str, Any]]:
    seeds = QUICK_SEEDS if quick else SEEDS
    out = []
    if family == "scale":
        sizes = QUICK_SCALE if quick else tuple(SCALE_GAPS)
        for gpus in sizes:
            for seed in seeds:
                for solver in ("greedy", "milp"):
                    out.append(
                        dict(
                            family=family,
                            gpus=gpus,
                            seed=seed,
                            solver=solver,
                            mip_gap=SCALE_GAPS[gpus],
                            time_limit_s=TIME_LIMIT_S,
                        )
                    )
    elif family == "stopgap":
        for gpus, gaps in (QUICK_STOPGAP if quick else STOPGAP).items():
            for gap in gaps:
                for seed in seeds:
                    out.append(
                        dict(
                            family=family,
                            gpus=gpus,
                            seed=seed,
                            solver="milp",
                            mip_gap=gap,
                            time_limit_s=TIME_LIMIT_S,
                        )
                    )
    else:
        sizes = QUICK_FRAGMENTATION if quick else FRAGMENTATION_SIZES
        for gpus in sizes:
            for seed in seeds:
                for solver in ("greedy", "milp"):
                    out.append(
                        dict(
                            family=family,
                            gpus=gpus,
                            seed=seed,
                            solver=solver,
                            mip_gap=FRAGMENTATION_GAP,
                            time_limit_s=TIME_LIMIT_S,
                        )
                    )
    return out


def run_child(job: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.child", json.dumps(job)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {**job, "error": f"timed out after {CHILD_TIMEOUT_S:.0f} s"}
    elapsed = time.perf_counter() - started
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-5:]
        return {**job, "error": f"exit {proc.returncode}: " + " | ".join(tail)}
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        return {**job, "error": f"unreadable output ({exc}): {lines[-1][:200]}"}
    result["process_seconds"] = elapsed
    return result


def _progress(r: dict[str, Any]) -> str:
    head = f"{r['family']:>13} {r['gpus']:>6} GPUs seed {r['seed']} {r['solver']:>6}"
    if "error" in r:
        return f"{head}: ERROR {r['error']}"
    gap = "-" if r.get("gap") is None else f"{100 * r['gap']:.3f}%"
    return (
        f"{head}: {r['status']:>8} solve {r['solve_seconds']:.3f}s round {r['round_seconds']:.3f}s "
        f"gap {gap} occ {r['occupancy']:.4f} rss {r['peak_rss_mib']:.0f}MiB "
        f"violations {r['violations']} [{r['process_seconds']:.1f}s]"
    )


def _summarise(data: dict[str, Any]) -> None:
    runs = {f: data[f]["runs"] for f in FAMILIES if f in data}
    if "scale" in runs:
        data["scale"]["summary"] = scale_summary(runs["scale"])
    if "stopgap" in runs:
        data["stopgap"]["summary"] = stopgap_summary(runs["stopgap"], runs.get("scale", []))
    if "fragmentation" in runs:
        data["fragmentation"]["summary"] = fragmentation_summary(runs["fragmentation"])
    data["targets"] = targets(data)


def _write_md(md_path: Path, text: str) -> None:
    """Write `text`, keeping the sections the other benchmarks put there (simulation, slurm,
    kubernetes, kube-flow, impact, startup: any `<!-- NAME:begin -->` ... `<!-- NAME:end -->`),
    in the order they had."""
    old = md_path.read_text(encoding="utf-8") if md_path.exists() else ""
    for name in re.findall(r"<!-- ([a-z0-9-]+):begin -->", old):
        markers = (f"<!-- {name}:begin -->", f"<!-- {name}:end -->")
        kept = kept_section(old, markers)
        if kept:
            text = with_section(text, kept, markers)
    md_path.write_text(text, encoding="utf-8")


def _rerender(json_path: Path) -> int:
    """Recompute summaries and targets from the raw runs and rewrite the markdown beside it."""
    data = json.loads(json_path.read_text())
    _summarise(data)
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    name = "RESULTS-partial.md" if json_path.stem.endswith("-partial") else "RESULTS.md"
    md_path = json_path.parent / name
    _write_md(md_path, render(data))
    print(f"re-rendered {md_path} from {json_path}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer seeds and sizes (smoke check)")
    parser.add_argument("--only", choices=FAMILIES, help="run one family only")
    parser.add_argument("--out", type=Path, help="directory for the results (default: benchmarks/)")
    parser.add_argument(
        "--render",
        type=Path,
        metavar="RESULTS_JSON",
        help="only re-render the markdown from an existing results JSON (no runs)",
    )
    args = parser.parse_args(argv)
    if args.render is not None:
        return _rerender(args.render)
    partial = args.quick or args.only is not None
    out_dir = args.out or HERE
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = "-partial" if partial else ""
    md_path = out_dir / f"RESULTS{suffix}.md"
    json_path = out_dir / f"results{suffix}.json"

    info = machine(REPO)
    families = (args.only,) if args.only else FAMILIES
    t0 = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {}
    for family in families:
        runs[family] = []
        for job in jobs(family, args.quick):
            r = run_child(job)
            runs[family].append(r)
            print(_progress(r), file=sys.stderr, flush=True)
    total = time.perf_counter() - t0
    info["loadavg_end"] = os.getloadavg()
    data: dict[str, Any] = {
        "machine": info,
        "command": "python -m benchmarks.run"
        + (" --quick" if args.quick else "")
        + (f" --only {args.only}" if args.only else ""),
        "total_seconds": total,
        "time_limit_s": TIME_LIMIT_S,
        "scale_gaps": {str(k): v for k, v in SCALE_GAPS.items()},
    }
    for family, family_runs in runs.items():
        data[family] = {"runs": family_runs}
    _summarise(data)
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    _write_md(md_path, render(data))
    print(f"wrote {md_path} and {json_path} in {total:.0f} s", file=sys.stderr)
    errors = sum("error" in r for rs in runs.values() for r in rs)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())

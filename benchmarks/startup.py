"""Start-up of the command line (issue 17): the wall time of `alloc --help`, `alloc schema`,
`alloc validate` and `alloc solve` of small instances, for this checkout and for an earlier
commit, measured in one run, alternating the two so both see the same noise.

    python -m benchmarks.startup                   # against f11a8ae (before issue 17's work)
    python -m benchmarks.startup --before 4caac5e --runs 15

Each command runs as `python -m alloc.cli.app ...` in a fresh process whose working directory
is the checkout (so that checkout's `alloc` is the one imported), with the same interpreter and
installed libraries. The earlier commit is checked out in a temporary git worktree. Target:
median <= 0.3 s for each command.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import publish

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- startup:begin -->", "<!-- startup:end -->"
TARGET_S = 0.3
EXAMPLES = REPO / "instances" / "examples"
DRAIN = str(EXAMPLES / "drain.yaml")

# (label, arguments); {plan} is a plan of drain.yaml written once per checkout.
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("alloc --help", ("--help",)),
    ("alloc schema", ("schema",)),
    ("alloc validate drain.yaml plan", ("validate", DRAIN, "{plan}")),
    ("alloc solve drain.yaml", ("solve", DRAIN)),
    ("alloc solve unfunded.yaml (builds a model)", ("solve", str(EXAMPLES / "unfunded.yaml"))),
    (
        "alloc solve --solver greedy drain.yaml",
        ("solve", "--solver", "greedy", DRAIN),
    ),
)


def _run(checkout: Path, args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "alloc.cli.app", *args],
        cwd=checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def measure(checkouts: dict[str, Path], runs: int, scratch: Path) -> list[dict[str, Any]]:
    plans = {}
    for name, checkout in checkouts.items():
        plans[name] = scratch / f"{name}-plan.json"
        _run(checkout, ["solve", DRAIN, "-o", str(plans[name])])
        _run(checkout, ["--help"])  # compiles the checkout's bytecode before timing
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(runs):
        for label, args in COMMANDS:
            for name, checkout in checkouts.items():
                filled = [a.replace("{plan}", str(plans[name])) for a in args]
                times.setdefault((label, name), []).append(_run(checkout, filled))
    return [
        {
            "command": label,
            "checkout": name,
            "runs": runs,
            "median_s": statistics.median(t),
            "min_s": min(t),
            "max_s": max(t),
        }
        for (label, name), t in times.items()
    ]


def render(results: list[dict[str, Any]], line: str) -> str:
    by = {(r["command"], r["checkout"]): r for r in results}
    commands = list(dict.fromkeys(r["command"] for r in results))
    before = next(r["checkout"] for r in results if r["checkout"] != "now")
    rows = [
        "| command | before: median (min-max) s | now: median (min-max) s | now/before | "
        f"target <= {TARGET_S} s |",
        "|---|---|---|---|---|",
    ]
    for c in commands:
        b, n = by[(c, before)], by[(c, "now")]
        verdict = "met" if n["median_s"] <= TARGET_S else "**NOT MET**"
        rows.append(
            f"| `{c}` | {b['median_s']:.3f} ({b['min_s']:.3f}-{b['max_s']:.3f}) | "
            f"{n['median_s']:.3f} ({n['min_s']:.3f}-{n['max_s']:.3f}) | "
            f"{n['median_s'] / b['median_s']:.2f} | {verdict} |"
        )
    runs = results[0]["runs"]
    return "\n".join(
        [
            BEGIN,
            "",
            "## Start-up of the command line (issue 17)",
            "",
            f"{line}. `python -m benchmarks.startup --before {before}`: each command {runs} "
            f"times as a fresh `python -m alloc.cli.app` process, the checkout of {before} "
            "(before) and this one (now) alternating, same interpreter and libraries. Wall "
            "time of the whole command, interpreter start included.",
            "",
            *rows,
            "",
            END,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="f11a8ae", help="commit to compare with")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        old = scratch / "before"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), args.before],
            check=True,
            capture_output=True,
        )
        try:
            results = measure({args.before: old, "now": REPO}, args.runs, scratch)
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], check=False
            )
    print(publish("startup", results, render, (BEGIN, END)))


if __name__ == "__main__":
    main()

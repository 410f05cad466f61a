"""Start-up of the command line (issue 17): the wall time of `alloc --help`, `alloc schema`,
`alloc validate` and `alloc solve` of small instances, for this checkout and for an earlier
commit, measured in one run, alternating the two so both see the same noise.

    python -m benchmarks.startup                   # against f11a8ae (before issue 17's work)
    python -m benchmarks.startup --before 4caac5e --runs 15

Each command runs as `python -m alloc.cli.app ...` in a fresh process whose working directory
is the checkout (so that checkout's `alloc` is the one imported), with the same interpreter and
installed libraries. The earlier commit is checked out in a temporary git worktree. Target:
median <= 0.3 s for each command.

Bytecode: the processes run with Python's bytecode cache on, as on any installed copy (`pip
install` compiles a package; an editable install writes its cache at the first run), even where
PYTHONDONTWRITEBYTECODE is set in the environment (this machine sets it, which made every run
compile alloc's ~60 modules from source). One warm-up run per checkout writes the cache.

Floors: in the same alternation, processes that import only what the commands cannot do
without: the interpreter (`python -c pass`), the command-line library (typer 0.29; parsing a
command's arguments and options loads pydantic, which typer validates them with), and those
plus PyYAML and NumPy (reading an instance, the round's arrays). A command's time over its
floor is alloc's own cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import checkout_of, publish

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


# (label, Python statement): what every command, or validate and solve, has to import.
# typer 0.29 coerces every parameter it parses with pydantic, so a command with arguments or
# options loads pydantic whatever it does; its own --help flag no longer does (since 9f806a3,
# alloc.cli.commands._HelpOption), so `alloc --help` and `alloc schema` stand on typer alone.
FLOORS: tuple[tuple[str, str], ...] = (
    ("floor: the interpreter (python -c pass)", "pass"),
    ("floor: typer", "import typer"),
    ("floor: typer with its pydantic coercion", "import typer._adapters"),
    ("floor: typer, pydantic, PyYAML and NumPy", "import typer._adapters, yaml, numpy"),
)
# Which floor each command stands on (index into FLOORS).
FLOOR_OF = {"alloc --help": 1, "alloc schema": 1}
DEFAULT_FLOOR = 3
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(checkout: Path, args: list[str], module: bool = True) -> float:
    command = [sys.executable, "-m", "alloc.cli.app", *args] if module else [sys.executable, *args]
    start = time.perf_counter()
    subprocess.run(
        command,
        cwd=checkout,
        env=ENV,
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
        for _, args in COMMANDS:  # a warm-up writes each module's bytecode cache
            _run(checkout, [a.replace("{plan}", str(plans[name])) for a in args])
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(runs):
        for label, args in COMMANDS:
            for name, checkout in checkouts.items():
                filled = [a.replace("{plan}", str(plans[name])) for a in args]
                times.setdefault((label, name), []).append(_run(checkout, filled))
        for label, statement in FLOORS:
            times.setdefault((label, "floor"), []).append(
                _run(scratch, ["-c", statement], module=False)
            )
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
    commands = list(dict.fromkeys(r["command"] for r in results if r["checkout"] != "floor"))
    before = next(r["checkout"] for r in results if r["checkout"] not in ("now", "floor"))
    floors = [by[(label, "floor")] for label, _ in FLOORS]

    def span(r: dict[str, Any]) -> str:
        return f"{r['median_s']:.3f} ({r['min_s']:.3f}-{r['max_s']:.3f})"

    rows = [
        "| command | before: median (min-max) s | now: median (min-max) s | now/before | "
        f"target <= {TARGET_S} s | now over its floor s |",
        "|---|---|---|---|---|---|",
    ]
    for c in commands:
        b, n = by[(c, before)], by[(c, "now")]
        verdict = "met" if n["median_s"] <= TARGET_S else "**NOT MET**"
        floor = FLOOR_OF.get(c, DEFAULT_FLOOR)
        rows.append(
            f"| `{c}` | {span(b)} | {span(n)} | {n['median_s'] / b['median_s']:.2f} | "
            f"{verdict} | {n['median_s'] - floors[floor]['median_s']:.3f} (floor {floor + 1}) |"
        )
    for i, (label, statement) in enumerate(FLOORS):
        rows.append(f"| {i + 1}. {label}: `{statement}` | | {span(floors[i])} | | | |")
    runs = results[0]["runs"]
    return "\n".join(
        [
            BEGIN,
            "",
            "## Start-up of the command line (issue 17)",
            "",
            f"{line}. `python -m benchmarks.startup --before {before}`: each command {runs} "
            f"times as a fresh `python -m alloc.cli.app` process, the checkout of {before} "
            "(before) and this one (now) alternating, same interpreter and libraries, bytecode "
            "cache on (as installed). Wall time of the whole command, interpreter start "
            "included. The floors (last rows) import only the libraries a command cannot do "
            "without, in the same alternation: what a command takes over its floor is alloc's "
            "own.",
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
    with checkout_of(REPO, args.before) as (old, scratch):
        results = measure({args.before: old, "now": REPO}, args.runs, scratch)
    print(publish("startup", results, render, (BEGIN, END)))


if __name__ == "__main__":
    main()

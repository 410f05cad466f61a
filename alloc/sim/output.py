"""Writing a simulation's results to its output folder: metrics.json and CSV timelines (the
plots and report.html are drawn from these files by `alloc.report`)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from alloc.metrics import job_rows, metrics, team_rows, timeline_rows
from alloc.sim.engine import SimResult

WRITTEN = ("metrics.json", "timeline.csv", "teams.csv", "jobs.csv", "rounds.csv")


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        if not rows:
            f.write("")
            return
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_run(
    result: SimResult, out: Path, policy: str, seed: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write metrics.json, timeline.csv, teams.csv, jobs.csv and rounds.csv; returns the
    metrics."""
    out.mkdir(parents=True, exist_ok=True)
    m = metrics(result, policy, seed)
    if extra:
        m.update(extra)
    (out / "metrics.json").write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")
    write_csv(out / "timeline.csv", timeline_rows(result))
    write_csv(out / "teams.csv", team_rows(result))
    write_csv(out / "jobs.csv", job_rows(result))
    write_csv(
        out / "rounds.csv",
        [
            {
                "t_s": round(r.t_s, 3),
                "kind": r.kind,
                "seconds": round(r.seconds, 6),
                "status": r.status,
                "violations": r.violations,
                "starts": r.starts,
                "preempts": r.preempts,
            }
            for r in result.recorder.rounds
        ],
    )
    return m

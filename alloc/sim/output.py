"""Writing a simulation's results to its output folder: metrics.json and CSV timelines (the
plots and report.html are drawn from these files by `alloc.report`). Each file is written
whole or not at all (`alloc.io.files`)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from alloc.io.files import write_atomically
from alloc.metrics import job_rows, metrics, team_rows, timeline_rows
from alloc.sim.engine import SimResult

WRITTEN = ("metrics.json", "timeline.csv", "teams.csv", "jobs.csv", "rounds.csv")


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    text = io.StringIO(newline="")
    if rows:
        writer = csv.DictWriter(text, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    write_atomically(path, text.getvalue())


def write_run(
    result: SimResult, out: Path, policy: str, seed: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write timeline.csv, teams.csv, jobs.csv, rounds.csv and then metrics.json (the file
    that makes the folder a run's: the timelines it describes are there before it); returns
    the metrics."""
    out.mkdir(parents=True, exist_ok=True)
    m = metrics(result, policy, seed)
    if extra:
        m.update(extra)
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
    write_atomically(out / "metrics.json", json.dumps(m, indent=1) + "\n")
    return m

"""Reading a simulation's output folder back: metrics.json and the CSV timelines."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alloc.metrics.quantiles import summary

CLASSES = ("debug", "small", "large", "unallocated")
PLOTS = ("occupancy.png", "delivered_vs_owed.png", "waits_cdf.png", "fairshare.png")

Row = dict[str, str]


def read_csv(path: Path) -> list[Row]:
    """Rows of a CSV file; a missing or empty file has none."""
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def num(row: Row, key: str, default: float = 0.0) -> float:
    """A numeric cell; empty or missing cells give `default`."""
    text = row.get(key, "")
    if text is None or text == "":
        return default
    value = float(text)
    return value if math.isfinite(value) else default


def fnum(value: Any, default: float = 0.0) -> float:
    """A number from metrics.json, tolerating null."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


@dataclass
class Run:
    """One simulation's output folder, loaded."""

    folder: Path
    metrics: dict[str, Any]
    timeline: list[Row]
    teams: list[Row]
    jobs: list[Row]
    rounds: list[Row]

    @property
    def team_metrics(self) -> dict[str, dict[str, Any]]:
        teams = self.metrics.get("teams") or {}
        return {str(k): v for k, v in teams.items() if isinstance(v, dict)}

    def waits(self, cls: str) -> list[float]:
        """Waits (seconds, >= 0) of the jobs of one class, from jobs.csv."""
        return sorted(max(0.0, num(r, "wait_s")) for r in self.jobs if r.get("class") == cls)

    def never_started(self, cls: str) -> int:
        """Jobs of the class that never started (jobs.csv writes `false`; older runs `False`)."""
        return sum(
            1
            for r in self.jobs
            if r.get("class") == cls and (r.get("started") or "").lower() == "false"
        )

    def wait_summary(self, cls: str) -> dict[str, float | None]:
        """p50, p90, max and count of the class's waits in jobs.csv, by the one percentile
        definition metrics.json's `wait_s` uses (so the wait plot and the tables agree)."""
        return summary(self.waits(cls))

    def credit(self, given: str | None) -> str | None:
        """The credit line to show: the one given, else the one the run recorded."""
        if given:
            return given
        recorded = self.metrics.get("credit")
        return str(recorded) if recorded else None


def load_run(folder: Path) -> Run:
    folder = Path(folder)
    path = folder / "metrics.json"
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no metrics.json (not a simulation output folder)")
    metrics = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(metrics, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return Run(
        folder,
        metrics,
        read_csv(folder / "timeline.csv"),
        read_csv(folder / "teams.csv"),
        read_csv(folder / "jobs.csv"),
        read_csv(folder / "rounds.csv"),
    )

"""Names listed for people are in natural order, as a person counts (`r1, r2, r10`), not in
the order of their text (`r1, r10, r2`): one key (alloc.readable.natural_key) for the queue,
the status, the reports and what the controller and the budgets print."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import yaml
from conftest import ago, instance, snapshot_of, solve_checked, workload
from test_report import _team, make_run
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.readable import natural_key
from alloc.report.compare import compare
from alloc.solve.context import round_context
from alloc.status import queue_rows

NAMES = ["r10", "r2", "r1"]
COUNTED = ["r1", "r2", "r10"]


@pytest.mark.parametrize(
    ("names", "ordered"),
    [
        pytest.param(NAMES, COUNTED, id="numbers in names are counted"),
        pytest.param(
            ["nlp/team10", "nlp/team9", "nlp", "cv/team1"],
            ["cv/team1", "nlp", "nlp/team9", "nlp/team10"],
            id="budget paths, level by level",
        ),
        pytest.param(["a10b10", "a10b2", "a9"], ["a9", "a10b2", "a10b10"], id="every number"),
        pytest.param(["r1", "r01", "r001"], ["r001", "r01", "r1"], id="leading zeros, by text"),
        pytest.param(["r", "ra", "r1", ""], ["", "r", "r1", "ra"], id="a name is before longer"),
        pytest.param(["job-" + "9" * 5000, "job-1"], ["job-1", "job-" + "9" * 5000], id="huge"),
    ],
)
def test_names_sort_in_natural_order(names, ordered):
    assert sorted(names, key=natural_key) == ordered


def _lab(tmp_path: Path) -> Path:
    """Three workloads of one budget, submitted together, too large to start: every key of
    the queue's default order ties but the id."""
    jobs = [workload(n, 32, submitted=ago(hours=1)) for n in NAMES]
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(instance(workloads=jobs), sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("order", [[], ["--sort", "id"]], ids=["default", "by id"])
def test_the_queue_lists_ids_in_natural_order(tmp_path, order):
    result = CliRunner().invoke(app, ["queue", str(_lab(tmp_path)), *order, "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert [row["id"] for row in csv.DictReader(io.StringIO(result.stdout))] == COUNTED


def test_the_queue_sorts_budgets_in_natural_order(tmp_path):
    tree = {
        "name": "root",
        "children": [{"name": n, "share": f"{100 / 3:.4f}%"} for n in ("t10", "t2", "t1")],
    }
    jobs = [workload(f"w-{n}", 32, budget=n, submitted=ago(hours=1)) for n in ("t10", "t2", "t1")]
    path = tmp_path / "lab.yaml"
    data = instance(budgets=tree, workloads=jobs)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["queue", str(path), "--sort", "budget", "--format", "csv"])
    assert result.exit_code == 0, result.output
    budgets = [row["budget"] for row in csv.DictReader(io.StringIO(result.stdout))]
    assert budgets == ["t1", "t2", "t10"]


def test_the_status_lists_ties_in_natural_order(tmp_path):
    snapshot = snapshot_of(
        instance(workloads=[workload(n, 32, submitted=ago(hours=1)) for n in NAMES])
    )
    plan = solve_checked(snapshot, "greedy")
    rows = queue_rows(round_context(snapshot), plan)
    assert [r.workload for r in rows] == COUNTED


def test_a_comparison_lists_teams_in_natural_order(tmp_path):
    teams = {f"lab/team{i}": _team(90.0, 0.9, 30.0, 600.0, 0) for i in (10, 2, 1)}
    runs = [(label, make_run(tmp_path / label, teams)) for label in ("base", "alt")]
    assert compare(runs).teams == ["lab/team1", "lab/team2", "lab/team10"]

"""Which solver answered, said honestly (issue 17): a plan the greedy made because it was asked
for says `greedy`; `fallback` is kept for a MILP that found nothing in time, so that whatever
counts fallbacks (the controller's `alloc_fallbacks_total`, a report) counts only those. Plans
written before `greedy` existed (`fallback` for both) still load."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import yaml
from conftest import instance, solve_checked
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.controller.loop import RoundOutcome
from alloc.controller.metrics import ControllerMetrics
from alloc.io import load_instance, load_plan
from alloc.round import RoundOptions, run_round
from alloc.solve.validate import validate

EXAMPLES = Path(__file__).resolve().parents[1] / "instances" / "examples"
# The greedy plan of this example is not within the stopping gap of the quick bound, so the
# MILP needs time to solve it: without any, the greedy answers in its place.
NEEDS_THE_MILP = EXAMPLES / "topology-block.yaml"


def run(*args: str | Path) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_a_greedy_asked_for_says_greedy_and_gives_no_note():
    plan = solve_checked(load_instance(NEEDS_THE_MILP), solver="greedy")
    assert (plan.report.solver, plan.report.status, plan.report.note) == ("greedy", "greedy", "")


def test_solve_says_greedy_once_when_the_greedy_was_asked_for(tmp_path):
    out = tmp_path / "plan.json"
    result = run("solve", "--solver", "greedy", EXAMPLES / "drain.yaml", "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].startswith("solver greedy in ")  # its status, said once
    assert "fallback" not in result.stdout
    written = json.loads(out.read_text())
    assert (written["solver"], written["status"], written["note"]) == ("greedy", "greedy", "")


def test_a_milp_that_found_nothing_in_time_falls_back_and_says_why():
    snapshot = load_instance(NEEDS_THE_MILP)
    plan = run_round(snapshot, RoundOptions(solver="milp", time_limit_s=1e-6))
    assert validate(snapshot, plan) == []
    assert (plan.report.solver, plan.report.status) == ("greedy", "fallback")
    assert plan.report.note == "time limit spent before the solve"


def test_a_milp_with_time_is_not_a_fallback():
    plan = solve_checked(load_instance(NEEDS_THE_MILP), solver="milp")
    assert plan.report.status in ("optimal", "feasible")


def _counted(plans: list[Any]) -> ControllerMetrics:
    snapshot = load_instance(NEEDS_THE_MILP)
    metrics = ControllerMetrics()
    for i, plan in enumerate(plans):
        metrics.observe(RoundOutcome(at_s=60.0 * i, plan=plan, snapshot=snapshot))
    return metrics


def test_the_fallback_counter_counts_the_milps_failures_not_greedy_rounds_asked_for():
    snapshot = load_instance(NEEDS_THE_MILP)
    greedy = run_round(snapshot, RoundOptions(solver="greedy"))
    fallback = run_round(snapshot, RoundOptions(solver="milp", time_limit_s=1e-6))
    milp = run_round(snapshot, RoundOptions(solver="milp"))
    metrics = _counted([greedy, greedy, greedy, fallback, milp])
    value = metrics.registry.get_sample_value
    assert value("alloc_fallbacks_total") == 1
    assert value("alloc_rounds_total", {"status": "greedy"}) == 3
    assert value("alloc_rounds_total", {"status": "fallback"}) == 1
    assert value("alloc_rounds_total", {"status": milp.report.status}) == 1


def test_a_plan_from_before_the_greedy_status_still_loads_and_validates(tmp_path):
    fresh = tmp_path / "new.json"
    assert run("solve", "--solver", "greedy", EXAMPLES / "drain.yaml", "-o", fresh).exit_code == 0
    old = json.loads(fresh.read_text())
    old["status"] = "fallback"  # what a greedy asked for said until issue 17
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    plan = load_plan(path)
    assert (plan.report.solver, plan.report.status, plan.report.note) == ("greedy", "fallback", "")
    checked = run("validate", EXAMPLES / "drain.yaml", path)
    assert checked.exit_code == 0, checked.output


def test_the_simulator_records_greedy_rounds_as_greedy(tmp_path):
    lab = tmp_path / "lab.yaml"
    data = instance()
    data.pop("workloads")
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        "j1,a,8,0,3600,1h,true,0,\nj2,b,8,600,1800,30m,true,0,\n"
    )
    out = tmp_path / "out"
    result = run(
        "simulate", lab, "--trace", trace, "--policy", "greedy", "--days", "0.1", "--out", out
    )
    assert result.exit_code == 0, result.output
    with (out / "rounds.csv").open() as f:
        statuses = {r["status"] for r in csv.DictReader(f) if r["kind"] == "full"}
    assert statuses == {"greedy"}
    assert "fallback" not in (out / "report.html").read_text()

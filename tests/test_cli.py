"""The `alloc` command line: solve, validate, explain, generate and schema keep the contract of
SPEC.md (plan format, exit codes 0 / 1 / 2, nothing written on bad input)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ago, host, instance, solve_checked, workload
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.io import load_instance

PLAN_KEYS = {
    "now",
    "solver",
    "status",
    "objective",
    "bound",
    "gap",
    "solve_seconds",
    "decisions",
    "drained_hosts",
    "metrics",
}


def run(*args: str | Path) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """Two hosts of 8 GPUs: `keeper` runs protected on h1 (started 1h ago, minimum 2h), `queued`
    waits for 8 GPUs of team b, `scratch` is unfunded work of 1 GPU."""
    data = instance(
        hosts=[host("h1"), host("h2")],
        workloads=[
            workload("keeper", 4, budget="a", hosts={"h1": 4}, started=ago(hours=1)),
            workload("queued", 8, budget="b"),
            workload("scratch", 1, budget=None, min_runtime="0s"),
        ],
    )
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def plan_json(lab: Path, *options: str) -> dict[str, Any]:
    result = run("solve", lab, "--json", *options)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def decision(plan: dict[str, Any], workload_id: str) -> dict[str, Any]:
    return next(d for d in plan["decisions"] if d["workload"] == workload_id)


def write_plan(path: Path, plan: dict[str, Any]) -> Path:
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


# solve and validate


def test_a_plan_written_by_solve_is_accepted_by_validate(lab, tmp_path):
    out = tmp_path / "plan.json"
    solved = run("solve", lab, "-o", out)
    assert solved.exit_code == 0, solved.output
    assert out.exists()
    checked = run("validate", lab, out)
    assert checked.exit_code == 0, checked.output
    assert "valid" in checked.stdout


def test_solve_of_a_bad_instance_exits_2_and_writes_no_plan(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(instance(workloads=[workload("w", 0)])), encoding="utf-8")
    out = tmp_path / "out.json"
    result = run("solve", bad, "-o", out)
    assert result.exit_code == 2
    assert "workloads[0].gpus" in result.stderr
    assert not out.exists()


def test_validate_rejects_a_plan_that_preempts_a_protected_workload(lab, tmp_path):
    plan = plan_json(lab)
    assert decision(plan, "keeper")["action"] == "keep"
    keeper = decision(plan, "keeper")
    keeper.update(action="preempt", reason="rebalanced")
    keeper.pop("hosts", None)
    keeper.pop("protected_until", None)
    result = run("validate", lab, write_plan(tmp_path / "tampered.json", plan))
    assert result.exit_code == 1, result.output
    assert "violation" in result.stdout
    assert "keeper" in result.stdout


def test_validate_rejects_a_plan_that_starts_work_on_a_full_host(lab, tmp_path):
    plan = plan_json(lab)
    queued = decision(plan, "queued")
    assert queued["action"] == "start"
    queued["hosts"] = {"h1": 8}  # keeper already holds 4 of h1's 8 GPUs
    result = run("validate", lab, write_plan(tmp_path / "tampered.json", plan))
    assert result.exit_code == 1, result.output
    assert "violation" in result.stdout
    assert "h1" in result.stdout


def test_validate_names_the_gpus_given_against_the_gpus_asked_for(lab, tmp_path):
    plan = plan_json(lab)
    scratch = decision(plan, "scratch")  # 1 GPU, unfunded: it fills h2 beside queued
    assert scratch["action"] == "start"
    scratch["hosts"] = {"h1": 4}
    result = run("validate", lab, write_plan(tmp_path / "tampered.json", plan))
    assert result.exit_code == 1, result.output
    assert "violation of invariant 2: scratch: given 4 GPUs (h1: 4), but it asks for 1 GPU\n" in (
        result.stdout
    )
    assert "fits on one host" not in result.stdout


def test_validate_names_each_broken_invariant_and_ends_with_a_summary(lab, tmp_path):
    plan = plan_json(lab)
    decision(plan, "scratch")["hosts"] = {"h1": 4}  # 4 GPUs for a 1-GPU job (2)
    keeper = decision(plan, "keeper")  # protected: preempting it breaks (3)
    keeper.update(action="preempt", reason="rebalanced")
    keeper.pop("hosts", None)
    keeper.pop("protected_until", None)
    path = write_plan(tmp_path / "tampered.json", plan)
    result = run("validate", lab, path)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert all(line.startswith("violation of invariant ") for line in lines[:-1]), lines
    assert not any(line.endswith(")") for line in lines[:-1]), lines  # no bare "(2)"
    assert lines[-1] == f"{path}: {len(lines) - 1} violations of invariants 2 and 3"


@pytest.mark.parametrize(
    ("problems", "summary"),
    [
        (["h1: 12 GPUs given, it has 8 (1)"], "1 violation of invariant 1"),
        (["a (4)", "b (1)", "c (4)", "d (6)"], "4 violations of invariants 1, 4 and 6"),
        (["a (8.5)", "b (2)"], "2 violations of invariant 2 and rule 8.5 of models/round.md"),
        (["a plan without a rule"], "1 violation"),
        (
            ["a (plan format)", "b (models/round.md 1.2)", "c (3)", "d (models/round.md 1.1)"],
            "4 violations of invariant 3, rules 1.1 and 1.2 of models/round.md and the plan "
            "format of SPEC.md",
        ),
        (
            ["a (models/round.md 2.4)", "b (9)"],
            "2 violations of rules 2.4 and 9 of models/round.md",
        ),
    ],
)
def test_a_summary_of_violations_names_the_rules_they_break(problems, summary):
    from alloc.cli.plans import violation, violations_summary

    assert violations_summary(problems) == summary
    assert violation("h1: 12 GPUs given, it has 8 (1)") == (
        "invariant 1",
        "h1: 12 GPUs given, it has 8",
    )
    assert violation("w: no decision (plan format)") == (
        "the plan format of SPEC.md",
        "w: no decision",
    )
    assert violation("w: kept on h2 (models/round.md 1.2)") == (
        "rule 1.2 of models/round.md",
        "w: kept on h2",
    )


def test_validate_names_the_rule_of_every_violation_as_its_summary_does(lab, tmp_path):
    """Issue 17: a wrong protection end, running work "started", a ready host listed as
    drained and a missing decision were printed as bare `violation:` lines while the summary
    named only the invariants of the other lines."""
    plan = plan_json(lab)
    keeper = decision(plan, "keeper")
    keeper.update(action="start", protected_until="2026-11-30T16:00:00Z")  # (1.2), (1.1), (3)
    plan["drained_hosts"] = ["h2"]  # ready, and holds work (1.1)
    plan["decisions"].remove(decision(plan, "scratch"))  # (plan format)
    path = write_plan(tmp_path / "tampered.json", plan)
    result = run("validate", lab, path)
    assert result.exit_code == 1, result.output
    *lines, summary = result.stdout.splitlines()
    named = [line.split(": ", 1)[0].removeprefix("violation of ") for line in lines]
    assert all(line.startswith("violation of ") for line in lines), lines
    assert set(named) == {
        "invariant 3",
        "rule 1.1 of models/round.md",
        "rule 1.2 of models/round.md",
        "the plan format of SPEC.md",
    }, lines
    assert summary == (
        f"{path}: {len(lines)} violations of invariant 3, rules 1.1 and 1.2 of models/round.md "
        "and the plan format of SPEC.md"
    )


def test_validate_of_a_plan_that_is_not_json_exits_2(lab, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    result = run("validate", lab, broken)
    assert result.exit_code == 2
    assert str(broken) in result.stderr


@pytest.mark.parametrize("solver", ["milp", "greedy"])
def test_solve_accepts_either_solver(lab, tmp_path, solver):
    out = tmp_path / "plan.json"
    result = run("solve", lab, "--solver", solver, "-o", out)
    assert result.exit_code == 0, result.output
    plan = json.loads(out.read_text())
    assert plan["solver"] == solver
    assert run("validate", lab, out).exit_code == 0


def test_solve_with_an_unknown_solver_exits_2_and_writes_no_plan(lab, tmp_path):
    out = tmp_path / "plan.json"
    result = run("solve", lab, "--solver", "foo", "-o", out)
    assert result.exit_code == 2
    assert "--solver" in result.stderr
    assert "foo" in result.stderr
    assert not out.exists()


def test_solve_accepts_a_time_limit_given_as_a_duration(lab):
    assert run("solve", lab, "--time-limit", "5s").exit_code == 0


def test_solve_with_a_malformed_time_limit_exits_2_and_writes_no_plan(lab, tmp_path):
    out = tmp_path / "plan.json"
    result = run("solve", lab, "--time-limit", "xyz", "-o", out)
    assert result.exit_code == 2
    assert "--time-limit" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("0", "--time-limit: expected a duration above 0, got '0'"),
        ("1e400", "--time-limit: expected a finite duration above 0, got '1e400'"),
        ("inf", "--time-limit: expected a finite duration above 0, got 'inf'"),
    ],
)
def test_solve_refuses_a_time_limit_of_no_time_or_without_end(lab, tmp_path, limit, message):
    out = tmp_path / "plan.json"
    result = run("solve", lab, "--time-limit", limit, "-o", out)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: alloc solve: {message}\n"
    assert not out.exists()


def test_solve_says_when_the_milp_was_not_needed(tmp_path):
    # reservation.yaml: the greedy plan is within the gap of the knapsack bound; no model
    example = Path(__file__).resolve().parents[1] / "instances" / "examples" / "reservation.yaml"
    result = run("solve", example, "-o", tmp_path / "plan.json")
    assert result.exit_code == 0, result.output
    solver = result.stdout.splitlines()[1]
    assert solver.startswith("solver milp: optimal without a MILP, objective "), solver
    assert " in 0.000 s" not in result.stdout
    plan = json.loads((tmp_path / "plan.json").read_text())  # the plan JSON as before
    assert (plan["solver"], plan["status"], plan["solve_seconds"]) == ("milp", "optimal", 0.0)
    assert plan["note"] == "the greedy plan is within the gap of the knapsack bound"


def test_solve_json_prints_the_plan_in_the_spec_format(lab):
    plan = plan_json(lab)
    assert set(plan) >= PLAN_KEYS
    assert plan["now"] == "2026-11-30T12:00:00Z"
    assert plan["status"] in ("optimal", "feasible", "fallback")
    assert sorted(d["workload"] for d in plan["decisions"]) == ["keeper", "queued", "scratch"]
    for d in plan["decisions"]:
        assert d["action"] in ("start", "keep", "preempt", "wait")
        assert ("hosts" in d) == (d["action"] in ("start", "keep"))
        assert "reason" in d
    assert {"occupancy", "allocated_occupancy", "unallocated_occupancy"} <= set(plan["metrics"])


def test_solve_json_with_an_output_file_writes_the_same_plan(lab, tmp_path):
    out = tmp_path / "plan.json"
    result = run("solve", lab, "--json", "-o", out)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(out.read_text())


# explain


def test_explain_names_the_workload_its_action_and_reason(lab, tmp_path):
    plan = plan_json(lab)
    path = write_plan(tmp_path / "plan.json", plan)
    for d in plan["decisions"]:
        result = run("explain", lab, d["workload"], "--plan", path)
        assert result.exit_code == 0, result.output
        first = result.stdout.splitlines()[0]
        assert d["workload"] in first
        assert d["action"] in first
        assert d["reason"] in first


def test_explain_solves_when_no_plan_is_given(lab):
    result = run("explain", lab, "queued")
    assert result.exit_code == 0, result.output
    assert "queued" in result.stdout
    assert "start" in result.stdout


def test_explain_of_an_unknown_workload_exits_2(lab):
    result = run("explain", lab, "nope")
    assert result.exit_code == 2
    assert "'nope'" in result.stderr
    assert "Traceback" not in result.output


# schema


def test_schema_prints_a_json_schema_of_the_instance():
    result = run("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert "workloads" in schema["properties"]
    assert {"now", "cluster", "budgets"} <= set(schema["required"])


def test_the_shipped_schema_is_the_one_the_models_generate():
    """`alloc schema` prints a copy shipped with the package (it starts without pydantic): the
    copy must be what the models generate today, to the byte."""
    from alloc.io import SCHEMA_FILE
    from alloc.io.schema import schema_text

    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "alloc/io/instance.schema.json is stale: run `python -m alloc.io.schema`"
    )
    assert run("schema").stdout == schema_text()


# generate (through a real process: the file's header records the command line)


def generate(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "alloc.cli.app", "generate", *options],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )


GENERATE = ("--hosts", "16", "--levels", "2,4", "--seed", "3", "-o", "g.yaml")


def test_generate_writes_an_instance_that_loads_and_solves(tmp_path):
    result = generate(tmp_path, *GENERATE)
    assert result.returncode == 0, result.stderr
    snapshot = load_instance(tmp_path / "g.yaml")
    assert len(snapshot.cluster.hosts) == 16
    plan = solve_checked(snapshot, "milp")
    assert len(plan.decisions) == len(snapshot.workloads)
    assert run("solve", tmp_path / "g.yaml", "--solver", "greedy").exit_code == 0


def test_generate_with_the_same_seed_writes_the_same_bytes(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    assert generate(first, *GENERATE).returncode == 0
    assert generate(second, *GENERATE).returncode == 0
    assert (first / "g.yaml").read_bytes() == (second / "g.yaml").read_bytes()


def test_generate_with_another_seed_writes_another_instance(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    assert generate(first, *GENERATE).returncode == 0
    other = tuple("4" if a == "3" else a for a in GENERATE)
    assert generate(second, *other).returncode == 0
    assert (first / "g.yaml").read_text() != (second / "g.yaml").read_text()


def test_generate_with_malformed_levels_exits_2_and_writes_nothing(tmp_path):
    result = run("generate", "--levels", "2,x", "-o", tmp_path / "g.yaml")
    assert result.exit_code == 2
    assert "--levels" in result.stderr  # the field of a command line is its option
    assert not (tmp_path / "g.yaml").exists()


def test_version_prints_the_installed_package_version_and_exits_0():
    from importlib.metadata import version

    for args in (["--version"], ["--version", "solve", "missing.yaml"]):  # eager: before all
        result = run(*args)
        assert result.exit_code == 0, result.output
        assert result.stdout == f"alloc {version('alloc')}\n"


def test_the_module_runs_as_a_program_with_exit_2_on_bad_input(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "alloc.cli.app", "solve", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "no such file" in result.stderr
    assert "Traceback" not in result.stderr


def test_explain_with_a_plan_of_another_instance_exits_2(lab, tmp_path):
    other = tmp_path / "other.json"
    plan = plan_json(lab)
    plan["decisions"][0]["workload"] = "someone-else"
    write_plan(other, plan)
    result = run("explain", lab, "queued", "--plan", other)
    assert result.exit_code == 2
    assert "another instance" in result.stderr


def test_explain_refuses_a_plan_that_breaks_the_contract_on_this_instance(lab, tmp_path):
    # Same workload ids, but the plan preempts `keeper`, which this instance protects (a plan
    # of another instance with the same names, or an edited one): its reasons would be false.
    plan = plan_json(lab)
    for d in plan["decisions"]:
        if d["workload"] == "keeper":
            d.update(action="preempt", reason="rebalanced", hosts={}, protected_until=None)
    path = write_plan(tmp_path / "p.json", plan)
    result = run("explain", lab, "queued", "--plan", path)
    assert result.exit_code == 2, result.output
    assert "keeper: preempt, but it is protected until" in result.stderr
    assert "alloc validate" in result.stderr
    assert "Traceback" not in result.output


def test_explain_with_an_unknown_solver_exits_2(lab):
    result = run("explain", lab, "queued", "--solver", "foo")
    assert result.exit_code == 2
    assert "--solver" in result.stderr and "'foo'" in result.stderr
    assert "internal error" not in result.output


def test_validate_of_a_plan_for_another_instance_exits_2(lab, tmp_path):
    plan = plan_json(lab)
    plan["decisions"][0]["workload"] = "someone-else"
    result = run("validate", lab, write_plan(tmp_path / "p.json", plan))
    assert result.exit_code == 2
    assert "decisions" in result.stderr


def test_files_written_follow_the_umask_like_any_other_file(lab, tmp_path):
    out = tmp_path / "plan.json"
    assert run("solve", lab, "-o", out).exit_code == 0
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask


def test_generate_with_fewer_nodes_at_a_deeper_level_exits_2(tmp_path):
    result = run("generate", "--levels", "4,2", "-o", tmp_path / "g.yaml")
    assert result.exit_code == 2
    assert "--levels" in result.stderr
    assert not (tmp_path / "g.yaml").exists()


def test_a_written_instance_quotes_names_a_yaml_1_2_reader_would_take_for_numbers():
    import yaml

    from alloc.io import dump_instance, parse_instance

    snapshot = parse_instance(
        yaml.safe_dump(
            instance(
                budgets={
                    "name": "root",
                    "children": [
                        {"name": "6214e9", "share": "50%"},
                        {"name": "103959", "share": "50%"},
                    ],
                }
            )
        )
    )
    text = dump_instance(snapshot)
    assert "name: '6214e9'" in text and "name: '103959'" in text
    assert parse_instance(text).budgets == snapshot.budgets


@pytest.mark.parametrize(
    ("command", "what"),
    [(["generate", "--hosts", "4", "--levels", "2"], "instance"), (["solve", "LAB"], "plan")],
)
def test_a_command_that_writes_a_file_says_so_on_stdout_as_its_result(lab, tmp_path, command, what):
    """Results to stdout, diagnostics to stderr: `generate -o` said `instance written to` on
    stderr while `solve -o` said `plan written to` on stdout (`alloc.cli.common.say_written`;
    `trace import`: tests/test_traces.py)."""
    out = tmp_path / "out.file"
    result = run(*[str(lab) if word == "LAB" else word for word in command], "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"{what} written to {out}"
    assert "written" not in result.stderr

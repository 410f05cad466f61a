"""`alloc simulate` and `alloc whatif` (SPEC.md, "Simulation and what-if"): what a run writes,
and bad input: exit 2, the file, line and field named, nothing written."""

from __future__ import annotations

import csv
import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alloc.cli.app import app

SPEC_KEYS = {
    "policy",
    "seed",
    "days",
    "rounds",
    "wall_seconds",
    "availability",
    "occupancy",
    "allocated_occupancy",
    "unallocated_occupancy",
    "delivered_over_owed",
    "delivered_over_owed_hourly",
    "worst_team",
    "teams",
    "wait_s",
    "preemptions",
    "preempted_gpu_hours_lost",
    "drains_completed",
    "drain_hours_p50",
    "utilization",
    "invariant_violations",
}
TEAM_KEYS = {
    "owed_gpu_hours",
    "delivered_gpu_hours",
    "delivered_over_owed",
    "delivered_over_owed_hourly",
    "wait_p50_s",
    "wait_p90_s",
    "preemptions",
}
RUN_FILES = {
    "metrics.json",
    "timeline.csv",
    "teams.csv",
    "jobs.csv",
    "report.html",
    "occupancy.png",
    "delivered_vs_owed.png",
    "waits_cdf.png",
    "fairshare.png",
}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

LAB = """\
now: 2026-11-30T12:00:00Z
cluster:
  name: tiny
  hosts:
    - {name: h1, gpus: 8, gpu_type: h100, block: b1, rack: r1}
    - {name: h2, gpus: 8, gpu_type: h100, block: b1, rack: r1}
budgets:
  name: root
  children:
    - name: p
      share: 50%
      children:
        - {name: x, share: 50%}
        - {name: y, share: 50%}
    - {name: b, share: 50%}
"""
HEADER = "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology"
# j1: team p/x, 8 GPUs from 0 s for 1 h; j2: team b, 4 GPUs from 600 s for 30 min;
# j3: no budget, 2 GPUs from 0 s for 2 h. 16 GPUs, room for all at once.
TRACE = f"""\
{HEADER}
j1,p/x,8,0,3600,1h,true,0,
j2,b,4,600,1800,30m,false,1,any
j3,,2,0,7200,0,true,0,
"""
SCENARIO = """\
name: alt
budgets:
  name: root
  children:
    - name: p
      share: 80%
      children:
        - {name: x, share: 50%}
        - {name: y, share: 50%}
    - {name: b, share: 20%}
"""


def run(*args: str | Path) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("lab.yaml", LAB), ("trace.csv", TRACE), ("alt.yaml", SCENARIO)):
        out[name] = tmp_path / name
        out[name].write_text(text, encoding="utf-8")
    return out


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def on_trace(
    command: str, files: dict[str, Path], out: Path, *args: str | Path, days: str = "0.01"
) -> Any:
    """`alloc simulate` or `alloc whatif` of the test lab and trace, with `args`."""
    return run(
        command,
        files["lab.yaml"],
        "--trace",
        files["trace.csv"],
        *args,
        "--days",
        days,
        "--out",
        out,
    )


def whatif(files: dict[str, Path], out: Path, *args: str | Path) -> Any:
    return on_trace("whatif", files, out, *args)


def check_run_folder(folder: Path) -> dict[str, Any]:
    assert {p.name for p in folder.iterdir()} >= RUN_FILES
    for png in folder.glob("*.png"):
        assert png.read_bytes().startswith(PNG_MAGIC), png
    assert "<html" in (folder / "report.html").read_text(encoding="utf-8").lower()
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert set(metrics) >= SPEC_KEYS
    return metrics


# what a run writes


def test_simulate_synthetic_writes_every_output_with_specs_keys(tmp_path):
    out = tmp_path / "out"
    result = run("simulate", "--synthetic", "--days", "0.05", "--policy", "greedy", "--out", out)
    assert result.exit_code == 0, result.output + result.stderr
    m = check_run_folder(out)
    assert (m["policy"], m["seed"], m["days"]) == ("greedy", 1, 0.05)
    assert isinstance(m["rounds"], int) and m["rounds"] > 0
    for key in ("availability", "occupancy", "allocated_occupancy", "unallocated_occupancy"):
        assert 0.0 <= m[key] <= 1.0, key
    assert m["occupancy"] == pytest.approx(
        m["allocated_occupancy"] + m["unallocated_occupancy"], abs=1e-5
    )
    assert 0.0 <= m["delivered_over_owed_hourly"] <= m["delivered_over_owed"] <= 1.0
    assert set(m["worst_team"]) == {"budget", "delivered_over_owed"}
    assert set(m["worst_team_hourly"]) == {"budget", "delivered_over_owed_hourly"}
    for team in m["teams"].values():  # the window credits at least what the hours do
        if team["owed_gpu_hours"] > 0:
            assert team["delivered_over_owed_hourly"] <= team["delivered_over_owed"] <= 1.0
    assert m["worst_team"]["budget"] in m["teams"]
    # The built-in lab: 15 teams (budget leaves).
    assert len(m["teams"]) == 15
    assert all(set(team) >= TEAM_KEYS for team in m["teams"].values())
    for cls in ("debug", "small", "large"):
        assert {"p50", "p90", "max"} <= set(m["wait_s"][cls])
    assert m["invariant_violations"] == 0
    assert m["utilization"] is None  # the synthetic trace states no util
    # 0.05 day = 72 min: the timeline has one row per (started) hour.
    assert [row["hour"] for row in read_csv(out / "timeline.csv")] == ["0", "1"]
    assert {row["team"] for row in read_csv(out / "teams.csv")} == set(m["teams"])
    assert len(read_csv(out / "jobs.csv")) == m["jobs"]["submitted"]


def test_simulate_a_lab_with_a_trace(files, tmp_path):
    # Two hosts for 3 h (0.125 day): 16 x 3 = 48 ready GPU-hours. Everything starts on
    # submission and completes: allocated j1 8 GPU-hours + j2 2 GPU-hours = 10 (10/48);
    # unallocated j3 4 GPU-hours (4/48).
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, "--policy", "greedy", days="0.125")
    assert result.exit_code == 0, result.output + result.stderr
    m = check_run_folder(out)
    assert m["jobs"] == {
        "submitted": 3,
        "completed": 3,
        "running_at_end": 0,
        "queued_at_end": 0,
        "never_fit": 0,
    }
    assert m["availability"] == 1.0
    assert m["allocated_occupancy"] == pytest.approx(10 / 48, abs=1e-6)
    assert m["unallocated_occupancy"] == pytest.approx(4 / 48, abs=1e-6)
    assert set(m["teams"]) == {"p/x", "p/y", "b"}
    assert m["teams"]["p/x"]["delivered_gpu_hours"] == 8.0
    assert m["teams"]["b"]["delivered_gpu_hours"] == 2.0
    assert m["wait_s"]["small"]["max"] == 0.0
    assert m["preemptions"] == 0
    jobs = {row["id"]: row for row in read_csv(out / "jobs.csv")}
    assert (jobs["j2"]["first_start_s"], jobs["j2"]["end_s"]) == ("600.0", "2400.0")
    assert jobs["j3"]["class"] == "unallocated"
    # Hourly average GPUs: hour 0 allocated 8 (j1) + 4 x 1800/3600 (j2) = 10, unallocated 2
    # (j3), idle 4; hour 1 j3 alone; hour 2 nothing.
    timeline = [
        (row["allocated"], row["unallocated"], row["idle"], row["ready"])
        for row in read_csv(out / "timeline.csv")
    ]
    assert timeline == [
        ("10.0", "2.0", "4.0", "16.0"),
        ("0.0", "2.0", "14.0", "16.0"),
        ("0.0", "0.0", "16.0", "16.0"),
    ]
    # The lab as given, under a line naming the options it ran with (to run it again).
    assert (out / "lab.yaml").read_text(encoding="utf-8") == (
        "# alloc simulate ran this lab with --policy greedy --days 0.125 --seed 1\n" + LAB
    )


def test_whatif_runs_every_scenario_under_every_policy_side_by_side(files, tmp_path):
    out = tmp_path / "out"
    result = run(
        "whatif",
        files["lab.yaml"],
        "--trace",
        files["trace.csv"],
        "--scenario",
        files["alt.yaml"],
        "--policies",
        "greedy,fifo",
        "--jobs",
        "2",
        "--days",
        "1",
        "--out",
        out,
        "--teams",
    )
    assert result.exit_code == 0, result.output + result.stderr
    runs = {"base-greedy", "base-fifo", "alt-greedy", "alt-fifo"}
    assert runs <= {p.name for p in out.iterdir() if p.is_dir()}
    for name in runs:
        m = check_run_folder(out / name)
        assert m["policy"] == name.split("-")[1]
        assert m["jobs"]["completed"] == 3
    for name in ("comparison.csv", "comparison.json", "comparison.png", "comparison.html"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "comparison.png").read_bytes().startswith(PNG_MAGIC)
    comparison = (out / "comparison.json").read_text(encoding="utf-8")
    for label in ("base/greedy", "base/fifo", "alt/greedy", "alt/fifo"):
        assert label in comparison
    # The scenario's tree is the one its runs used: b holds 20% there.
    assert "share: 20" in (out / "alt-greedy" / "lab.yaml").read_text(encoding="utf-8")
    # Deltas separate the two effects: a scenario's run against the base tree under the same
    # policy, the base tree's runs against its first (the policies).
    folders = {r["label"]: r["folder"] for r in json.loads(comparison)["runs"]}
    assert folders["alt/fifo"] == "alt-fifo"  # beside comparison.json, wherever one ran from
    baselines = {r["label"]: r["baseline"] for r in json.loads(comparison)["runs"]}
    assert baselines == {
        "base/greedy": "base/greedy",
        "base/fifo": "base/greedy",
        "alt/greedy": "base/greedy",
        "alt/fifo": "base/fifo",
    }
    with (out / "comparison.csv").open(newline="", encoding="utf-8") as f:
        rows = {(r["team"], r["run"]): r for r in csv.DictReader(f)}
    alt_fifo, base_fifo = rows[("b", "alt/fifo")], rows[("b", "base/fifo")]
    assert alt_fifo["baseline"] == "base/fifo"
    assert float(alt_fifo["delta_delivered_gpu_hours"]) == pytest.approx(
        float(alt_fifo["delivered_gpu_hours"]) - float(base_fifo["delivered_gpu_hours"])
    )
    # The per-team table (--teams) says which run each delta is against.
    assert (
        "against each run's baseline: base/greedy (for base/fifo, alt/greedy), base/fifo "
        "(for alt/fifo)"
    ) in " ".join(result.stdout.split())
    # 14 GPUs of work on a 16-GPU cluster: the runs are told they can differ little.
    assert "note: allocated demand averaged at most" in " ".join(result.stdout.split())


def test_simulate_starts_from_the_workloads_the_lab_holds(tmp_path):
    # The lab says w1 (team b, 8 GPUs) runs on h1 with 1 h of work left; the trace is empty.
    # w1 is part of the run: it holds h1 for the first hour of the 0.1 day (2.4 h).
    lab = write(
        tmp_path,
        "lab.yaml",
        LAB
        + "workloads:\n"
        + "  - {id: w1, budget: b, gpus: 8, min_runtime: 1h, submitted: 2026-11-30T11:00:00Z,\n"
        + "     started: 2026-11-30T11:30:00Z, hosts: {h1: 8}, runtime: 1h}\n",
    )
    trace = write(tmp_path, "empty.csv", HEADER + "\n")
    out = tmp_path / "out"
    result = run(
        "simulate", lab, "--trace", trace, "--policy", "greedy", "--days", "0.1", "--out", out
    )
    assert result.exit_code == 0, result.output + result.stderr
    m = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert m["jobs"]["submitted"] == 1
    assert m["jobs"]["completed"] == 1
    assert m["occupancy"] > 0


def test_a_lab_workload_without_its_runtime_cannot_be_simulated(tmp_path):
    lab = write(
        tmp_path,
        "lab.yaml",
        LAB
        + "workloads:\n"
        + "  - {id: w1, budget: b, gpus: 8, min_runtime: 1h, submitted: 2026-11-30T11:00:00Z}\n",
    )
    trace = write(tmp_path, "empty.csv", HEADER + "\n")
    out = tmp_path / "out"
    result = run("simulate", lab, "--trace", trace, "--policy", "greedy", "--out", out)
    assert_bad_input(result, out, "lab.yaml", "workloads[0].runtime")
    assert (
        "workload 'w1' is queued but states no runtime: the simulation needs the work it has "
        "to do (e.g. runtime: 2h)"
    ) in " ".join(result.stderr.split())
    queued = "submitted: 2026-11-30T11:00:00Z}"
    running = queued[:-1] + ", started: 2026-11-30T11:30:00Z, hosts: {h1: 8}}"
    lab.write_text(lab.read_text(encoding="utf-8").replace(queued, running), encoding="utf-8")
    result = run("simulate", lab, "--trace", trace, "--policy", "greedy", "--out", out)
    assert_bad_input(result, out, "workloads[0].runtime")
    assert (
        "workload 'w1' is running but states no runtime: the simulation needs the work it "
        "still has to do (e.g. runtime: 2h)"
    ) in " ".join(result.stderr.split())


# bad input: exit 2, file, line and field named, nothing written


def assert_bad_input(result: Any, out: Path, *named: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.stderr)
    for text in named:
        assert text in result.stderr, (text, result.stderr)
    assert not out.exists()


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("j1,zz,8,0,3600,1h,true,0,", "budget"),  # not in the tree
        ("j1,p,8,0,3600,1h,true,0,", "budget"),  # an internal node, not a team
        ("j1,b,8,0,3600,1h,true,0", "topology"),  # one column short
        ("j1,b,8,0,3600,1h,true,0,,extra", "more columns"),
        ("j1,b,8,0,-5,1h,true,0,", "runtime"),
        ("j1,b,8,0,0,1h,true,0,", "runtime"),
        ("j1,b,eight,0,3600,1h,true,0,", "gpus"),
        ("j1,b,0,0,3600,1h,true,0,", "gpus"),
        ("j1,b,8,0,3600,9h,true,0,", "min_runtime"),  # above max_min_runtime (8h)
        ("j1,b,8,0,3600,1h,maybe,0,", "resumable"),
        ("j1,b,8,0,3600,1h,true,high,", "priority"),
        ("j1,b,8,0,3600,1h,true,0,ring", "topology"),
        ("j1,b,8,soon,3600,1h,true,0,", "submitted"),
    ],
    ids=[
        "unknown-budget",
        "internal-budget",
        "too-few-columns",
        "too-many-columns",
        "negative-runtime",
        "zero-runtime",
        "non-numeric-gpus",
        "zero-gpus",
        "min-runtime-above-max",
        "resumable",
        "priority",
        "topology",
        "submitted",
    ],
)
@pytest.mark.parametrize("command", ["simulate", "whatif"])
def test_a_bad_trace_row_is_named_by_file_line_and_field(files, tmp_path, command, row, field):
    # The bad row is the trace's third line (after the header and a good row).
    trace = write(tmp_path, "bad.csv", f"{HEADER}\nok,b,1,0,60,0,true,0,\n{row}\n")
    out = tmp_path / "out"
    result = run(command, files["lab.yaml"], "--trace", trace, "--days", "0.01", "--out", out)
    assert_bad_input(result, out, f"{trace}:3", field)


def test_a_trace_without_the_specs_columns_is_bad_input(files, tmp_path):
    trace = write(tmp_path, "bad.csv", "id,budget,gpus\nj1,b,8\n")
    out = tmp_path / "out"
    result = run("simulate", files["lab.yaml"], "--trace", trace, "--out", out)
    assert_bad_input(result, out, f"{trace}:1", "missing columns", "runtime")


@pytest.mark.parametrize("command", ["simulate", "whatif"])
def test_a_trace_naming_a_gpu_type_the_lab_lacks_is_bad_input(files, tmp_path, command):
    # The lab's hosts are all h100; the optional gpu_type column asks for a100 on line 3.
    trace = write(
        tmp_path,
        "bad.csv",
        HEADER.rstrip("\n") + ",gpu_type\nok,b,1,0,60,0,true,0,,h100\nj1,b,8,0,60,0,true,0,,a100\n",
    )
    out = tmp_path / "out"
    result = run(command, files["lab.yaml"], "--trace", trace, "--days", "0.01", "--out", out)
    assert_bad_input(result, out, f"{trace}:3", "gpu_type", "a100", "h100")


def test_a_duplicate_job_id_names_both_lines(files, tmp_path):
    trace = write(tmp_path, "bad.csv", f"{HEADER}\nj1,b,1,0,60,0,true,0,\nj1,b,1,0,60,0,,0,\n")
    out = tmp_path / "out"
    result = run("simulate", files["lab.yaml"], "--trace", trace, "--out", out)
    assert_bad_input(result, out, f"{trace}:3", "id", "line 2")


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--trace", "{trace}", "--synthetic"], ["--trace", "--synthetic"]),
        ([], ["--trace", "--synthetic"]),
        (["--trace", "{trace}", "--policy", "best"], ["--policy", "best"]),
        (["--trace", "{trace}", "--round-interval", "often"], ["--round-interval", "often"]),
        (["--trace", "{trace}", "--round-interval", "-5m"], ["--round-interval"]),
        (["--trace", "{trace}", "--checkpoint", "1x"], ["--checkpoint"]),
        (["--trace", "{dir}/missing.csv"], ["missing.csv", "no such file"]),
        (["--trace", "{trace}", "--legacy-top", "1.5"], ["--legacy-top"]),
        (["--trace", "{trace}", "--legacy-cap", "-1"], ["--legacy-cap"]),
        (["--trace", "{trace}", "--rounds", "sometimes"], ["--rounds", "sometimes"]),
    ],
    ids=[
        "trace-and-synthetic",
        "neither",
        "unknown-policy",
        "round-interval-word",
        "round-interval-negative",
        "checkpoint",
        "missing-trace",
        "legacy-top-above-1",
        "legacy-cap-negative",
        "rounds-unknown",
    ],
)
def test_bad_options_of_simulate_are_bad_input(files, tmp_path, args, named):
    out = tmp_path / "out"
    fill = {"trace": str(files["trace.csv"]), "dir": str(tmp_path)}
    argv = [a.format(**fill) for a in args]
    result = run("simulate", files["lab.yaml"], *argv, "--days", "0.01", "--out", out)
    assert_bad_input(result, out, *named)


def test_a_bad_host_events_file_is_bad_input(files, tmp_path):
    events = write(tmp_path, "hosts.csv", "time,host,state\n600,h9,unhealthy\n")
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, "--host-events", events)
    assert_bad_input(result, out, f"{events}:2", "host", "h9")


@pytest.mark.parametrize(
    ("command", "earlier"), [("simulate", "metrics.json"), ("whatif", "comparison.csv")]
)
def test_a_bad_host_events_file_is_found_before_an_earlier_run_is_said_to_be_replaced(
    files, tmp_path, command, earlier
):
    # A new user saw "replacing metrics.json, ... in bt" and only then the error about an
    # unknown host (nothing was replaced).
    events = write(tmp_path, "hosts.csv", "time,host,state\n600,h9,unhealthy\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / earlier).write_text("an earlier run's\n", encoding="utf-8")
    result = on_trace(command, files, out, "--host-events", events)
    assert result.exit_code == 2, result.stderr
    assert "replacing" not in result.stderr and "unknown host 'h9'" in result.stderr
    assert (out / earlier).read_text(encoding="utf-8") == "an earlier run's\n"


def test_a_bad_lab_is_bad_input(files, tmp_path):
    lab = write(
        tmp_path,
        "lab.yaml",
        LAB.replace(
            "gpus: 8, gpu_type: h100, block: b1, rack: r1}\nbudgets",
            "gpus: -8, gpu_type: h100}\nbudgets",
        ),
    )
    out = tmp_path / "out"
    result = run("simulate", lab, "--trace", files["trace.csv"], "--out", out)
    assert_bad_input(result, out, f"{lab}:6", "cluster.hosts[1].gpus")


def test_unknown_policy_in_whatif_is_bad_input(files, tmp_path):
    out = tmp_path / "out"
    assert_bad_input(whatif(files, out, "--policies", "greedy,best"), out, "--policies", "best")


def test_an_unknown_round_model_in_whatif_is_bad_input(files, tmp_path):
    out = tmp_path / "out"
    assert_bad_input(whatif(files, out, "--rounds", "half"), out, "--rounds", "half")


def test_the_round_models_and_full_validation_are_run_and_reported(files, tmp_path):
    # The same small lab simulated with event passes (validated whole) and with a full round
    # on every event: both keep every invariant, and metrics.json and rounds.csv say which
    # rounds ran.
    import csv
    import json

    trace = write(
        tmp_path,
        "odd.csv",
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        "j1,p/x,8,7,3601,1h,true,0,\nj2,b,4,611,1799,30m,false,1,any\nj3,,2,13,7200,0,true,0,\n",
    )
    runs = {}
    for model, extra in (("events", ["--validate-passes"]), ("full", [])):
        out = tmp_path / model
        result = run(
            "simulate",
            files["lab.yaml"],
            "--trace",
            trace,
            "--days",
            "0.1",
            "--out",
            out,
            "--rounds",
            model,
            *extra,
        )
        assert result.exit_code == 0, result.output
        runs[model] = json.loads((out / "metrics.json").read_text())
        kinds = {r["kind"] for r in csv.DictReader((out / "rounds.csv").open())}
        assert kinds == ({"full", "event"} if model == "events" else {"full"})
    assert runs["events"]["round_model"] == "events" and runs["events"]["event_passes"] > 0
    assert runs["full"]["round_model"] == "full" and runs["full"]["event_passes"] == 0
    assert runs["events"]["invariant_violations"] == runs["full"]["invariant_violations"] == 0


def test_whatif_into_a_folder_with_other_runs_says_they_are_not_compared(files, tmp_path):
    out = tmp_path / "out"
    first = whatif(files, out, "--scenario", files["alt.yaml"], "--policies", "greedy")
    assert first.exit_code == 0, first.output
    result = whatif(files, out, "--policies", "greedy")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert (
        "also holds runs of an earlier comparison, left as they were and not compared: "
        "alt-greedy" in text
    )
    assert "alt/greedy" not in (out / "comparison.json").read_text(encoding="utf-8")


def test_whatif_without_any_policy_is_bad_input(files, tmp_path):
    out = tmp_path / "out"
    assert_bad_input(whatif(files, out, "--policies", ","), out, "--policies")


SCENARIO_WITHOUT_B = """\
budgets:
  name: root
  children:
    - name: p
      share: 100%
      children:
        - {name: x, share: 50%}
        - {name: y, share: 50%}
"""


@pytest.mark.parametrize("with_alt", [True, False], ids=["second scenario", "only scenario"])
def test_a_scenario_that_lacks_a_budget_the_trace_uses_is_bad_input(files, tmp_path, with_alt):
    # The trace's j2 is team b's; the scenario nob.yaml has no b: the scenario is at fault.
    scenario = write(tmp_path, "nob.yaml", SCENARIO_WITHOUT_B)
    out = tmp_path / "out"
    alt = ["--scenario", files["alt.yaml"]] if with_alt else []
    result = whatif(files, out, *alt, "--scenario", scenario, "--policies", "greedy")
    said = (
        f"{scenario}: budgets: has no node 'b', which 1 workload of the trace {files['trace.csv']}"
    )
    assert_bad_input(result, out, said)


def test_a_scenario_that_lacks_a_node_the_synthetic_trace_uses_is_its_fault(tmp_path):
    # A new user saw `the synthetic trace:96: budget: unknown budget node 'science/team1'`: a
    # line of a trace alloc drew itself. The scenario file lacks the node; it is named.
    scenario = write(tmp_path, "nob.yaml", SCENARIO_WITHOUT_B.replace("root", "lab"))
    out = tmp_path / "out"
    result = run("whatif", "--synthetic", "--scenario", scenario, "--days", "0.01", "--out", out)
    assert_bad_input(result, out, f"error: {scenario}: budgets: has no node 'nlp/team1'")
    assert "of the synthetic trace drawn from the lab are charged to" in result.stderr
    assert "synthetic trace:" not in result.stderr


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("budgets: [1, 2\n", [":1:", "YAML"]),  # the one line: the list it leaves open
        (SCENARIO.replace("share: 20%", "share: 70%"), [":4", "budgets.children", "150%"]),
        ("policy: {lookback: forever}\n" + SCENARIO, [":1", "policy.lookback"]),
        (SCENARIO + "bogus: 1\n", [":11", "bogus"]),
        ("- just\n- a list\n", ["mapping"]),
    ],
    ids=["yaml", "shares-over-100", "policy", "unknown-field", "not-a-mapping"],
)
def test_a_malformed_scenario_is_bad_input(files, tmp_path, text, named):
    scenario = write(tmp_path, "bad.yaml", text)
    out = tmp_path / "out"
    result = whatif(files, out, "--scenario", scenario, "--policies", "greedy")
    assert_bad_input(result, out, str(scenario), *named)


class _Hung(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise _Hung inside the code under test if it runs longer than `seconds`."""

    def alarm(signum: int, frame: object) -> None:
        raise _Hung(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_round_interval_of_zero_is_bad_input(files, tmp_path):
    out = tmp_path / "out"
    with time_limit(3.0):
        result = on_trace("simulate", files, out, "--round-interval", "0s")
    assert_bad_input(result, out, "--round-interval")


def test_whatif_with_the_synthetic_generator_replays_one_trace_under_every_scenario(tmp_path):
    # Teams a and b hold 50% each in the lab and 80% / 20% in the scenario; the generator sizes
    # each team's submissions to its share, so it must be drawn once, from the base lab.
    lab = write(
        tmp_path,
        "lab.yaml",
        "now: 2026-11-30T12:00:00Z\n"
        "cluster:\n  name: tiny\n  host_groups:\n"
        "    - {prefix: h, count: 16, gpus: 8, gpu_type: h100, hosts_per_block: 16}\n"
        "budgets:\n  name: root\n  children:\n"
        "    - {name: a, share: 50%}\n    - {name: b, share: 50%}\n",
    )
    scenario = write(
        tmp_path,
        "alt.yaml",
        "budgets:\n  name: root\n  children:\n"
        "    - {name: a, share: 80%}\n    - {name: b, share: 20%}\n",
    )
    out = tmp_path / "out"
    result = run(
        "whatif",
        lab,
        "--synthetic",
        "--scenario",
        scenario,
        "--policies",
        "greedy",
        "--days",
        "0.2",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output + result.stderr
    assert "note: allocated demand" not in result.stdout  # the generator's 2x is contended

    def submissions(run_dir: str) -> list[tuple[str, str, str, str]]:
        rows = read_csv(out / run_dir / "jobs.csv")
        return sorted((r["id"], r["team"], r["gpus"], r["submitted_s"]) for r in rows)

    assert submissions("base-greedy") == submissions("alt-greedy")


def test_simulate_keeps_its_ledger_in_the_file_given(files, tmp_path):
    # 0.125 day: j1 and j2 complete, j3 (2 h from 0 s) too; all three intervals are in the file,
    # only the allocated ones charged.
    ledger = tmp_path / "ledger.sqlite"
    out = tmp_path / "out"
    result = on_trace(
        "simulate", files, out, "--policy", "greedy", "--ledger", ledger, days="0.125"
    )
    assert result.exit_code == 0, result.output + result.stderr
    from alloc.ledger import SQLiteStore

    store = SQLiteStore(ledger)
    rows = {
        (i.workload, i.budget, i.gpus, i.end_s - i.start_s, i.charged) for i in store.intervals()
    }
    store.close()
    assert rows == {
        ("j1", "p/x", 8, 3600.0, True),
        ("j2", "b", 4, 1800.0, True),
        ("j3", None, 2, 7200.0, False),
    }


def test_a_ledger_path_that_cannot_be_opened_is_bad_input(files, tmp_path):
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, "--ledger", tmp_path / "no" / "such" / "dir" / "l.db")
    assert_bad_input(result, out, "--ledger")


# found by a new user's review (2026-11-30): each is bad input, found before anything runs


@pytest.mark.parametrize("command", ["simulate", "whatif"])
@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_output_folder_that_cannot_be_written_is_bad_input_before_the_run(
    files, tmp_path, command, where
):
    blocker = write(tmp_path, "taken", "not a folder\n")
    out = blocker if where == "a file" else blocker / "sub"
    result = on_trace(
        command,
        files,
        out,
        "--policies" if command == "whatif" else "--policy",
        "greedy",
        days="30",
    )  # 30 days: would take long if it ran first
    assert result.exit_code == 2, result.stderr
    assert "--out" in result.stderr and "taken" in result.stderr
    assert blocker.read_text() == "not a folder\n"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--policies", "greedy,greedy"], ["--policies", "twice"]),
        (["--policies", "greedy", "--scenario", "base.yaml"], ["base.yaml", "name", "base"]),
    ],
    ids=["a policy twice", "a scenario named base"],
)
def test_two_runs_of_one_name_are_bad_input_and_nothing_is_written(files, tmp_path, args, named):
    write(tmp_path, "base.yaml", SCENARIO.replace("name: alt", "name: base"))
    out = tmp_path / "out"
    args = [str(tmp_path / a) if a.endswith(".yaml") else a for a in args]
    result = whatif(files, out, *args)
    assert_bad_input(result, out, *named)


def test_a_trace_job_with_the_id_of_a_lab_workload_is_bad_input(files, tmp_path):
    lab = write(
        tmp_path,
        "with-w.yaml",
        LAB + "workloads:\n  - {id: j2, budget: b, gpus: 8, min_runtime: 1h, runtime: 2h,\n"
        "     submitted: 2026-11-30T11:00:00Z}\n",
    )
    out = tmp_path / "out"
    result = run("simulate", lab, "--trace", files["trace.csv"], "--policy", "greedy", "--out", out)
    assert_bad_input(result, out, f"{files['trace.csv']}:3", "id", "'j2'", "with-w.yaml")


def test_a_lab_workload_without_a_runtime_is_named_by_its_line(tmp_path):
    lab = write(
        tmp_path,
        "lab.yaml",
        LAB + "workloads:\n  - {id: w1, budget: b, gpus: 8, min_runtime: 1h,"
        " submitted: 2026-11-30T11:00:00Z}\n",
    )
    out = tmp_path / "out"
    result = run("simulate", lab, "--trace", write(tmp_path, "e.csv", HEADER + "\n"), "--out", out)
    assert_bad_input(result, out, f"{lab}:17", "workloads[0].runtime", "'w1'")


@pytest.mark.parametrize(
    ("text", "line", "named"),
    [
        (f"{HEADER},id\n", 1, ["id", "twice"]),
        (f"{HEADER}\nj1,b,8,0,inf,1h,true,0,\n", 2, ["runtime", "finite"]),
        (f'{HEADER}\nj1,"b,8,0,60,0,true,0,\nj2,b,8,0,60,0,true,0,\n', 2, ["quote"]),
    ],
    ids=["a column twice", "infinite runtime", "unclosed quote"],
)
def test_a_malformed_trace_is_bad_input_with_a_message_that_says_what(
    files, tmp_path, text, line, named
):
    trace = write(tmp_path, "bad.csv", text)
    out = tmp_path / "out"
    result = run("simulate", files["lab.yaml"], "--trace", trace, "--out", out)
    assert_bad_input(result, out, f"{trace}:{line}", *named)


def test_a_trace_saved_with_a_byte_order_mark_reads_like_any_other(files, tmp_path):
    trace = tmp_path / "bom.csv"
    trace.write_text("\ufeff" + TRACE, encoding="utf-8")
    out = tmp_path / "out"
    result = run(
        "simulate",
        files["lab.yaml"],
        "--trace",
        trace,
        "--policy",
        "greedy",
        "--days",
        "0.01",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads((out / "metrics.json").read_text())["jobs"]["submitted"] == 3


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("time,host,state\n600,h1,unhealthy,extra\n", [":2", "more columns"]),
        ("time,host,state\n600,h1\n", [":2", "too few columns"]),
        ("time,host,state,time\n600,h1,unhealthy,1\n", [":1", "each once"]),
    ],
    ids=["extra column", "short row", "a column twice"],
)
def test_a_malformed_host_events_row_is_bad_input(files, tmp_path, text, named):
    events = write(tmp_path, "hosts.csv", text)
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, "--host-events", events)
    assert_bad_input(result, out, str(events), *named)


@pytest.mark.parametrize(
    ("solver", "flag", "ran"),
    [
        ("greedy", [], "greedy"),  # the lab's policy.solver, when --policy is not given
        ("milp", [], "milp"),
        ("greedy", ["--policy", "milp"], "milp"),  # --policy wins
    ],
)
def test_simulate_runs_the_labs_solver_unless_told_otherwise(files, tmp_path, solver, flag, ran):
    files["lab.yaml"].write_text(LAB + f"policy: {{solver: {solver}}}\n", encoding="utf-8")
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, *flag)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["policy"] == ran


def test_simulate_can_replay_a_trace_from_later_on(files, tmp_path):
    # --start 5m: j1 and j3 (submitted at 0 s) are left out; j2 (at 600 s) arrives 300 s into
    # the run, on an empty cluster, and starts at once. The ledger's dates are the trace's:
    # the lab's now moved 5 minutes on.
    out = tmp_path / "out"
    ledger = tmp_path / "l.sqlite"
    result = on_trace("simulate", files, out, "--start", "5m", "--ledger", ledger)
    assert result.exit_code == 0, result.output
    (row,) = read_csv(out / "jobs.csv")
    assert (row["id"], row["submitted_s"], row["first_start_s"]) == ("j2", "300.0", "300.0")
    import sqlite3
    from datetime import datetime

    with sqlite3.connect(ledger) as db:
        (start,) = db.execute("SELECT start_s FROM intervals").fetchone()
    assert start == datetime.fromisoformat("2026-11-30T12:10:00+00:00").timestamp()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--start", "-1h"], "--start"),
        (["--start", "soon"], "--start"),
        (["--start", "200d"], "no job is submitted after it"),
    ],
)
def test_a_bad_start_is_bad_input(files, tmp_path, args, named):
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, *args)
    assert_bad_input(result, out, named)


def test_start_needs_a_lab_without_workloads(tmp_path):
    lab = write(
        tmp_path,
        "lab.yaml",
        LAB + "workloads:\n  - {id: w1, budget: b, gpus: 8, min_runtime: 1h, runtime: 2h,"
        " submitted: 2026-11-30T11:00:00Z}\n",
    )
    out = tmp_path / "out"
    trace = write(tmp_path, "t.csv", TRACE)
    result = run("simulate", lab, "--trace", trace, "--start", "1h", "--out", out)
    assert_bad_input(result, out, "--start", "without workloads")


def test_start_needs_a_trace_not_the_generator(tmp_path):
    out = tmp_path / "out"
    result = run("simulate", "--synthetic", "--start", "1d", "--days", "0.01", "--out", out)
    assert_bad_input(result, out, "--start", "give --trace")


def test_simulate_warns_of_jobs_larger_than_every_place_the_lab_has(files, tmp_path):
    # The lab has 16 GPUs: a 64-GPU job can never start; it is reported, not counted as demand.
    files["trace.csv"].write_text(TRACE + "big,b,64,0,3600,1h,true,0,\n", encoding="utf-8")
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, "--policy", "greedy")
    assert result.exit_code == 0, result.output
    assert "warning: 1 job is larger than every place this lab has" in result.stdout
    m = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert m["jobs"]["never_fit"] == 1


def test_a_scenario_with_a_misspelt_key_names_the_key(files, tmp_path):
    scenario = write(tmp_path, "typo.yaml", SCENARIO.replace("budgets:", "budgetz:"))
    out = tmp_path / "out"
    result = whatif(files, out, "--scenario", scenario, "--policies", "greedy")
    assert_bad_input(result, out, f"{scenario}:2", "budgetz", "did you mean 'budgets'")


def test_a_scenario_with_an_instance_field_lists_the_fields_a_scenario_has(files, tmp_path):
    # `cluster:` belongs to an instance, not to a scenario: no "did you mean 'cluster'".
    scenario = write(tmp_path, "s.yaml", "cluster: {}\n" + SCENARIO)
    out = tmp_path / "out"
    result = whatif(files, out, "--scenario", scenario, "--policies", "greedy")
    assert_bad_input(result, out, f"{scenario}:1", "cluster", "expected one of", "budgets")
    assert "did you mean 'cluster'" not in result.stderr


def test_a_new_ledger_file_is_not_created_when_the_input_is_bad(files, tmp_path):
    ledger = tmp_path / "new.sqlite"
    trace = write(tmp_path, "bad.csv", f"{HEADER}\nj1,b,8,0,-5,1h,true,0,\n")
    out = tmp_path / "out"
    result = run("simulate", files["lab.yaml"], "--trace", trace, "--ledger", ledger, "--out", out)
    assert_bad_input(result, out, "runtime")
    assert not ledger.exists()


@pytest.mark.parametrize(
    "content", ["not a database\n" * 100, "ledger"], ids=["not SQLite", "holds a run"]
)
def test_a_ledger_file_that_is_not_a_new_ledger_is_bad_input(files, tmp_path, content):
    ledger = tmp_path / "old.sqlite"
    if content == "ledger":
        from alloc.ledger import SQLiteStore
        from alloc.ledger.store import Interval

        store = SQLiteStore(ledger)
        store.add([Interval("j0", "b", 8, 0.0, 60.0, True)])
        store.close()
    else:
        ledger.write_text(content)
    before = ledger.read_bytes()
    out = tmp_path / "out"
    result = on_trace("simulate", files, out, "--ledger", ledger)
    assert_bad_input(result, out, "--ledger", str(ledger))
    assert ledger.read_bytes() == before


def test_whatif_replays_host_events_in_every_run(files, tmp_path):
    events = write(tmp_path, "hosts.csv", "time,host,state\n600,h2,unhealthy\n")
    out = tmp_path / "out"
    result = whatif(
        files, out, "--policies", "greedy,fifo", "--host-events", events, "--repair", "1h"
    )
    assert result.exit_code == 0, result.stderr
    for run in ("base-greedy", "base-fifo"):
        metrics = json.loads((out / run / "metrics.json").read_text())
        # h2 (half the GPUs) is out of service from 600 s of the run's 864 s
        assert metrics["availability"] < 1 - 0.5 * 264 / 864 + 1e-6, run
    shown = {line.split()[0] for line in result.stdout.splitlines() if line.strip()}
    assert {"base/greedy", "base/fifo"} <= shown  # a row per run

"""`alloc queue`: one line per workload as squeue shows jobs. Each workload's state follows from
the instance and the plan's decision (running-protected, running, preempted, starting,
waiting), with the plan's reason, its budget node's fair-share ratio as `alloc solve` shows it,
the wait since submission and the minimum runtime; sorted and filtered; a table that fits 80
columns (long ids and paths shortened, never wrapped), or JSON and CSV with raw numbers."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ago, host, instance, snapshot_of, solve_checked, workload
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.cli.queue_table import duration_text, shorten_middle, shorten_path
from alloc.domain import BudgetPath, Plan, Snapshot
from alloc.io import dump_plan, load_instance
from alloc.queue import FIELDS, SORT_KEYS, QueueRow, State, queue_rows, select, sort_rows
from alloc.solve.context import round_context
from alloc.summary import summarize

EXAMPLES = Path(__file__).parent.parent / "instances" / "examples"
LONG_ID = "vision-transformer-pretraining-run-with-a-very-long-name-0042"
LONG_PATH = "vision/computer-vision-foundations/alice"


def rows_of(snapshot: Snapshot, plan: Plan) -> list[QueueRow]:
    ctx = round_context(snapshot)
    return queue_rows(snapshot, plan, ctx.share.ratios, ctx.ranked)


def example_rows(name: str, solver: str = "milp") -> dict[str, QueueRow]:
    snapshot = load_instance(EXAMPLES / f"{name}.yaml")
    return {r.id: r for r in rows_of(snapshot, solve_checked(snapshot, solver))}


def run(*args: str | Path, columns: int = 80) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(columns)})


# Rows: one per workload, each state against the hand-derived examples (both solvers).

# (example, workload, state, reason, wait_s, running_s, min_runtime_s, ratio)
# Ratios: usage / (effective allocation x window capacity), capacity = 8 GPUs x 168 h = 1344
# GPU-h: protection's a has 1200 / (0.5 x 1344) = 1.786; rebalancing's a 1209.6 / 672 = 1.8,
# b 134.4 / 672 = 0.2; gang-after-preemption's a 10000 / (0.5 x 40 x 168) = 2.976.
GANG = "gang-after-preemption"
STATES = [
    ("protection", "a-train", State.RUNNING_PROTECTED, "protected", None, 3600, 14400, 1200 / 672),
    ("protection", "b-train", State.WAITING, "no_room", 1800, None, 7200, 0.0),
    ("rebalancing", "a-train", State.PREEMPTED, "rebalanced", None, 5 * 3600, 14400, 1.8),
    ("rebalancing", "b-train", State.STARTING, "under_allocation", 1800, None, 7200, 0.2),
    (GANG, "a-5", State.RUNNING, "costly_to_stop", None, 7 * 3600, 7200, 10000 / 3360),
    ("unfunded", "side-project", State.PREEMPTED, "unallocated_displaced", None, 1800, 14400, None),
    ("unfunded", "notebook", State.STARTING, "unfunded", 19 * 60, None, 3600, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("example", "wid", "state", "reason", "wait_s", "running_s", "min_runtime_s", "ratio"),
    STATES,
    ids=[f"{e} {w} is {s.value}" for e, w, s, *_ in STATES],
)
def test_each_workload_gets_its_state_reason_wait_and_ratio(
    solver, example, wid, state, reason, wait_s, running_s, min_runtime_s, ratio
):
    row = example_rows(example, solver)[wid]
    assert row.state is state
    assert row.reason.value == reason
    assert row.wait_s == wait_s
    assert row.running_s == running_s
    assert row.min_runtime_s == min_runtime_s
    assert row.ratio == (None if ratio is None else pytest.approx(ratio))


def test_one_row_per_workload_and_the_ratio_is_the_one_solve_shows():
    snapshot = load_instance(EXAMPLES / "fairshare-hierarchical.yaml")
    ctx = round_context(snapshot)
    plan = solve_checked(snapshot)
    rows = rows_of(snapshot, plan)
    assert sorted(r.id for r in rows) == sorted(w.id for w in snapshot.workloads)
    shown = {n.path: n.ratio for n in summarize(ctx, plan).nodes}
    for r in rows:
        assert r.budget is not None
        assert r.ratio == shown[r.budget]
        assert r.reason is plan.decision(r.id).reason


def test_a_node_without_a_share_has_an_infinite_ratio_shown_as_in_solve():
    shares = [{"name": "a", "share": "100%"}, {"name": "z", "share": "0%"}]
    data = instance(
        budgets={"name": "root", "children": shares},
        workloads=[workload("free-ride", 1, budget="z")],
    )
    snapshot = snapshot_of(data)
    row = rows_of(snapshot, solve_checked(snapshot))[0]
    assert row.ratio == float("inf")
    assert (row.state, row.reason.value) == (State.STARTING, "unfunded")


# A lab with every state, a long id, a deep path and GPU types (2 hosts of 8 GPUs and one of
# 2 A100s: 18 GPUs). keeper: protected (1 h of a 2 h run). old: past its protection, tulu is
# within its entitlement: kept. scratch: unallocated on h2, displaced when the long-named run
# of alice (8 GPUs: only h2 has room) starts there. typed: one A100 GPU, on h3. huge: 64 GPUs,
# larger than the cluster: waits (too_large).
def lab_data() -> dict[str, Any]:
    return instance(
        hosts=[host("h1"), host("h2"), host("h3", 2, gpu_type="a100")],
        budgets={
            "name": "lab",
            "children": [
                {
                    "name": "nlp",
                    "share": "50%",
                    "children": [
                        {"name": "olmo", "share": "50%"},
                        {"name": "tulu", "share": "50%"},
                    ],
                },
                {
                    "name": "vision",
                    "share": "50%",
                    "children": [
                        {
                            "name": "computer-vision-foundations",
                            "share": "100%",
                            "children": [{"name": "alice", "share": "100%"}],
                        }
                    ],
                },
            ],
        },
        usage={"nlp/olmo": 400, LONG_PATH: 100},
        workloads=[
            workload("keeper", 4, budget="nlp/olmo", hosts={"h1": 4}, started=ago(hours=1)),
            workload("old", 4, budget="nlp/tulu", hosts={"h1": 4}, submitted=ago(hours=11)),
            workload(
                "scratch",
                8,
                budget=None,
                min_runtime="0s",
                hosts={"h2": 8},
                started=ago(minutes=5),
                submitted=ago(minutes=6),
            ),
            workload(LONG_ID, 8, budget=LONG_PATH, submitted=ago(hours=3)),
            workload("huge", 64, budget="nlp/olmo", submitted=ago(days=2)),
            workload("typed", 1, budget="nlp/tulu", gpu_type="a100", submitted=ago(minutes=30)),
        ],
    )


EXPECTED = {
    "keeper": (State.RUNNING_PROTECTED, "protected"),
    "old": (State.RUNNING, "under_allocation"),
    "scratch": (State.PREEMPTED, "unallocated_displaced"),
    LONG_ID: (State.STARTING, "under_allocation"),
    "typed": (State.STARTING, "under_allocation"),
    "huge": (State.WAITING, "too_large"),
}


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(lab_data(), sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def lab_rows(solver) -> list[QueueRow]:
    snapshot = snapshot_of(lab_data())
    rows = rows_of(snapshot, solve_checked(snapshot, solver))
    assert {r.id: (r.state, r.reason.value) for r in rows} == EXPECTED
    return rows


# Sorting and filtering


def test_by_default_running_work_comes_first_then_what_starts_then_what_waits(lab_rows):
    assert [r.id for r in lab_rows] == ["keeper", "old", "scratch", LONG_ID, "typed", "huge"]
    # Inside a state, the round's order: alice's run (ratio 0.07) before tulu's typed run.
    assert lab_rows[3].rank is not None and lab_rows[4].rank is not None
    assert lab_rows[3].rank < lab_rows[4].rank


def test_queued_work_is_numbered_from_1_in_the_queue_while_its_rank_counts_running_work(lab_rows):
    by_id = {r.id: r for r in lab_rows}
    # The round weighs old's run (past its protection) against the queue: it ranks 2nd, so
    # typed ranks 3rd, yet typed is second in the queue.
    assert [(r.id, r.rank, r.position) for r in lab_rows if r.position is not None] == [
        (LONG_ID, 1, 1),
        ("typed", 3, 2),
    ]
    assert by_id["old"].rank == 2 and by_id["old"].position is None
    assert by_id["huge"].rank is None and by_id["huge"].position is None  # cannot start


def test_status_numbers_the_queue_as_alloc_queue_does(solver):
    from alloc.status import queue_rows as status_rows

    snapshot = snapshot_of(lab_data())
    plan = solve_checked(snapshot, solver)
    numbered = [(r.workload, r.position) for r in status_rows(round_context(snapshot), plan)]
    assert numbered == [(LONG_ID, 1), ("typed", 2), ("huge", None)]
    assert numbered == [(r.id, r.position) for r in rows_of(snapshot, plan) if not r.running_s]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("gpus", ["huge", "scratch", LONG_ID, "keeper", "old", "typed"]),
        ("wait", ["huge", LONG_ID, "typed", "keeper", "old", "scratch"]),
        ("ratio", ["old", "typed", LONG_ID, "keeper", "huge", "scratch"]),
        ("budget", ["keeper", "huge", "old", "typed", LONG_ID, "scratch"]),
        ("id", ["huge", "keeper", "old", "scratch", "typed", LONG_ID]),
        ("state", ["keeper", "old", "scratch", LONG_ID, "typed", "huge"]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_sort_keys_order_rows_with_ties_in_the_default_order(lab_rows, key, expected):
    assert [r.id for r in sort_rows(lab_rows, key)] == expected
    assert [r.id for r in sort_rows(lab_rows, key, reverse=True)] == expected[::-1]


def test_every_documented_sort_key_is_tested():
    assert set(SORT_KEYS) == {"gpus", "wait", "ratio", "budget", "id", "state"}


def test_a_budget_filter_keeps_the_subtree_and_a_state_filter_the_states(lab_rows):
    def ids(rows: list[QueueRow]) -> set[str]:
        return {r.id for r in rows}

    assert ids(select(lab_rows, budgets=[BudgetPath("nlp")])) == {"keeper", "old", "typed", "huge"}
    assert ids(select(lab_rows, budgets=[BudgetPath("nlp/tulu")])) == {"old", "typed"}
    assert ids(select(lab_rows, budgets=[BudgetPath("vision/computer-vision-foundations")])) == {
        LONG_ID
    }
    # A path is a subtree, not a prefix of names: "nlp/tul" holds nothing (and is not a node).
    assert ids(select(lab_rows, budgets=[BudgetPath("nlp/tul")])) == set()
    assert ids(select(lab_rows, states=[State.STARTING, State.WAITING])) == {
        LONG_ID,
        "typed",
        "huge",
    }
    assert ids(
        select(lab_rows, states=[State.RUNNING, State.RUNNING_PROTECTED], budgets=["nlp/olmo"])
    ) == {"keeper"}


def test_the_command_sorts_and_filters(lab):
    result = run("queue", lab, "--state", "starting,waiting", "--state", "running", "--budget",
                 "nlp", "--sort", "gpus", "-r", "--format", "csv")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [row["id"] for row in csv.DictReader(io.StringIO(result.stdout))] == [
        "typed",
        "old",
        "huge",
    ]


# Bad input: exit 2, the option and what is wrong, the valid choices, nothing on stdout.


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--state", "running,pending"], ["--state", "'pending'", "running-protected, running, "
                                          "preempted, starting, waiting"]),
        (["--budget", "nlp/tul"], ["--budget", "'nlp/tul'", "nlp, nlp/olmo, nlp/tulu, vision"]),
        (["--sort", "size"], ["--sort", "wait, gpus, budget, state, id, ratio", "'size'"]),
        (["--format", "xml"], ["--format", "table, json, csv"]),
        (["--solver", "cplex"], ["--solver", "milp or greedy"]),
        (["--config", "controller.yaml"], ["--config", "no INSTANCE"]),
    ],
    ids=["unknown state", "unknown budget", "unknown sort key", "unknown format",
         "unknown solver", "an instance and a config"],
)  # fmt: skip
def test_bad_options_are_bad_input(lab, args, named):
    result = run("queue", lab, *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    for text in named:
        assert text in result.stderr, (text, result.stderr)


def test_a_plan_of_another_instance_is_bad_input(lab, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(dump_plan(solve_checked(load_instance(EXAMPLES / "protection.yaml"))))
    result = run("queue", lab, "--plan", other)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert str(other) in result.stderr and "another instance" in result.stderr


def test_a_plan_that_breaks_the_contract_on_the_instance_is_bad_input(tmp_path):
    # protection.yaml's plan on a copy where b's run would start on the busy host h1.
    snapshot = load_instance(EXAMPLES / "protection.yaml")
    plan = json.loads(dump_plan(solve_checked(snapshot)))
    for d in plan["decisions"]:
        if d["workload"] == "b-train":
            d.update(action="start", hosts={"h1": 8}, reason="under_allocation")
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(plan))
    result = run("queue", EXAMPLES / "protection.yaml", "--plan", path)
    assert result.exit_code == 2
    assert "breaks" in result.stderr and "invariant" in result.stderr
    assert result.stdout == ""


def test_a_plan_given_is_shown_as_it_decides(tmp_path):
    source = EXAMPLES / "rebalancing.yaml"
    path = tmp_path / "plan.json"
    path.write_text(dump_plan(solve_checked(load_instance(source))))
    result = run("queue", source, "--plan", path, "--format", "json")
    assert result.exit_code == 0, result.stderr
    states = {w["id"]: (w["state"], w["reason"]) for w in json.loads(result.stdout)["workloads"]}
    assert states == {
        "a-train": ("preempted", "rebalanced"),
        "b-train": ("starting", "under_allocation"),
    }


# JSON and CSV: stable field names, raw numbers, the full ids and paths.


def test_json_has_one_object_per_workload_with_raw_numbers(lab):
    result = run("queue", lab, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["now"] == "2026-11-30T12:00:00Z" and data["cluster"] == "test"
    by_id = {w["id"]: w for w in data["workloads"]}
    assert len(data["workloads"]) == len(by_id) == 6
    assert all(list(w) == list(FIELDS) for w in data["workloads"])
    long = by_id[LONG_ID]  # never shortened outside the table
    assert long["budget"] == LONG_PATH
    assert (long["state"], long["reason"], long["action"]) == (
        "starting",
        "under_allocation",
        "start",
    )
    assert long["wait_s"] == 3 * 3600 and long["running_s"] is None
    assert long["min_runtime_s"] == 7200 and long["gpus"] == 8 and long["gpu_type"] is None
    assert long["ratio"] == pytest.approx(100 / (0.5 * 18 * 168))
    assert long["protected_until"] == "2026-11-30T14:00:00Z"
    keeper = by_id["keeper"]
    assert (keeper["wait_s"], keeper["running_s"], keeper["rank"]) == (None, 3600, None)
    assert keeper["started"] == "2026-11-30T11:00:00Z"
    assert by_id["scratch"]["budget"] is None and by_id["scratch"]["ratio"] is None
    assert by_id["typed"]["gpu_type"] == "a100"
    assert data["states"] == {
        "running-protected": {"workloads": 1, "gpus": 4},
        "running": {"workloads": 1, "gpus": 4},
        "preempted": {"workloads": 1, "gpus": 8},
        "starting": {"workloads": 2, "gpus": 9},
        "waiting": {"workloads": 1, "gpus": 64},
    }


def test_csv_parses_back_to_the_json_values(lab, tmp_path):
    # An id with a comma and a quote goes through the csv module's quoting.
    data = lab_data()
    data["workloads"][1]["id"] = 'old, "quoted"'
    lab.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    as_json = json.loads(run("queue", lab, "--format", "json").stdout)["workloads"]
    result = run("queue", lab, "--format", "csv")
    assert result.exit_code == 0, result.stderr
    reader = csv.DictReader(io.StringIO(result.stdout))
    assert tuple(reader.fieldnames or ()) == FIELDS
    rows = list(reader)
    assert len(rows) == len(as_json) == 6
    for row, obj in zip(rows, as_json, strict=True):
        assert row == {k: "" if v is None else str(v) for k, v in obj.items()}
    assert 'old, "quoted"' in {row["id"] for row in rows}


# The table: one line per workload within 80 columns, in a terminal and in a pipe.


def table_lines(stdout: str) -> tuple[str, list[str], list[str]]:
    lines = stdout.splitlines()
    return lines[0], lines[1:7], lines[7:]


def test_the_table_fits_80_columns_with_one_line_per_workload(lab):
    result = run("queue", lab, columns=80)
    assert result.exit_code == 0, result.stderr
    header, body, foot = table_lines(result.stdout)
    assert header.split() == ["ID", "STATE", "BUDGET", "GPUS", "TYPE", "WAIT", "MINRUN", "RATIO",
                              "REASON"]  # fmt: skip
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    assert [line.split()[1] for line in body] == [
        "running-protected",
        "running",
        "preempted",
        "starting",
        "starting",
        "waiting",
    ]
    long = body[3]
    assert LONG_ID not in long and "…" in long.split()[0]
    assert long.split()[0].startswith("vis") and long.split()[0].endswith("42")
    keeper = body[0].split()
    assert keeper[3:9] == ["4", "any", "-", "2", "h", "0.53"] and keeper[-1] == "protected"
    huge = body[5].split()
    assert huge[3:7] == ["64", "any", "2", "d"] and huge[-1] == "too_large"
    # Ids and paths keep what tells them apart; reasons are written shorter, with a legend.
    assert body[4].split()[-1] == "under_alloc" and body[2].split()[-1] == "displaced"
    legend, *foot = foot
    assert (
        legend == "abbreviated: under_alloc = under_allocation, displaced = unallocated_displaced"
    )
    assert " ".join(line.strip() for line in foot) == (
        "6 workloads, 89 GPUs: 1 running-protected (4 GPUs), 1 running (4 GPUs), "
        "1 preempted (8 GPUs), 2 starting (9 GPUs), 1 waiting (64 GPUs)"
    )


def test_a_wide_terminal_or_wide_shows_ids_and_paths_whole(lab):
    for args, columns in (((), 200), (("--wide",), 80)):
        result = run("queue", lab, *args, columns=columns)
        assert result.exit_code == 0, result.stderr
        assert "…" not in result.stdout
        assert LONG_ID in result.stdout and LONG_PATH in result.stdout
        assert len(result.stdout.splitlines()) == 1 + 6 + 1  # the footer on one line


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_piped_output_is_whole_unless_columns_says_a_width(lab, encoding):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    command = [sys.executable, "-m", "alloc.cli.app", "queue", str(lab), "--solver", "greedy"]
    for columns in (None, 80):
        done = subprocess.run(
            command,
            capture_output=True,
            env={**env, "PYTHONIOENCODING": encoding, **({"COLUMNS": "80"} if columns else {})},
            cwd=Path(__file__).parent.parent,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.decode(encoding).splitlines()
        if columns is None:  # a pipe without a width, as kubectl get writes it: all whole
            assert LONG_ID in lines[4] and LONG_PATH in lines[4] and len(lines) == 8, lines
            continue
        assert len(lines) >= 8 and all(len(line) <= 80 for line in lines), lines
        # A log in a legacy encoding gets a one-column mark for the shortened ids and paths.
        assert ("…" if encoding == "utf-8" else "*") in lines[4].split()[0]


def test_a_filter_that_leaves_nothing_shows_the_header_and_the_footer(lab):
    result = run("queue", lab, "--budget", "nlp", "--state", "preempted")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1:] == ["0 of 6 workloads, 0 GPUs"]


def test_numbers_are_written_as_a_person_writes_them():
    # The rules of alloc.readable (issue 17): whole units, as every other output writes them.
    assert [duration_text(s) for s in (None, 0, 0.2, 45, 59.6, 900, 3599, 3600, 3760, 5400)] == [
        "-", "0 s", "0 s", "45 s", "1 min", "15 min", "1 h", "1 h", "1 h 3 min", "1 h 30 min"
    ]  # fmt: skip
    assert [duration_text(s) for s in (4 * 3600, 86340, 86400, 3 * 86400 + 7200, -5)] == [
        "4 h", "23 h 59 min", "1 d", "3 d 2 h", "0 s"
    ]  # fmt: skip


def test_the_footer_says_gpu_for_one():
    snapshot = snapshot_of(instance(workloads=[workload("solo", 1)]))
    rows = rows_of(snapshot, solve_checked(snapshot))
    from alloc.cli.queue_table import footer

    assert footer(rows, 1, 80) == ["1 workload, 1 GPU: 1 starting (1 GPU)"]


def test_the_footer_breaks_between_states_within_the_width(lab_rows):
    from alloc.cli.queue_table import footer

    for width in range(60, 140):
        lines = footer(lab_rows, 6, width)
        assert all(len(line) <= width for line in lines), (width, lines)
        assert all(line.endswith(",") for line in lines[:-1]) and lines[-1].endswith(")")
        assert ", ".join(line.strip(" ,") for line in lines) == footer(lab_rows, 6, None)[0]


@pytest.mark.parametrize(
    ("text", "width", "short"),
    [
        (LONG_ID, 12, "vision…-0042"),
        ("short", 12, "short"),
        (LONG_PATH, 11, "v…/c…/alice"),
        (LONG_PATH, 20, "v…/c…/alice"),
        ("nlp/olmo", 8, "nlp/olmo"),
        ("nlp/olmo", 7, "n…/olmo"),
        ("nlp/olmo", 6, "…/olmo"),
    ],
)
def test_ids_keep_both_ends_and_paths_keep_their_leaf(text, width, short):
    shorten = shorten_path if "/" in text else shorten_middle
    assert shorten(text, width) == short
    assert len(short) <= width


# Live: the cluster and ledger of a controller config (the built-in simulator executor).


def test_live_queue_reads_the_cluster_and_ledger_of_a_controller_config(tmp_path):
    from sim2 import write_lab
    from test_controller_cli import CONFIG

    write_lab(tmp_path)
    config = tmp_path / "controller.yaml"
    config.write_text(CONFIG.format(state=tmp_path / "state.db"))
    ran = run("controller", "run", "--config", config, "--rounds", "3")
    assert ran.exit_code == 0, ran.stderr
    # t = 45 min: nlp's a and b run protected until 1 h; vision's c (submitted at 30 min) waits.
    result = run("queue", "--config", config)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines[1:4]] == [
        ["a", "running-protected"],
        ["b", "running-protected"],
        ["c", "waiting"],
    ]
    assert lines[3].split()[2:] == ["vision", "8", "15", "min", "30", "min", "0.00", "no_room"]
    assert lines[4] == "3 workloads, 24 GPUs: 2 running-protected (16 GPUs), 1 waiting (8 GPUs)"
    # The ledger charged nlp for 45 min of 16 GPUs: 12 GPU-h / (0.5 x 16 GPUs x 168 h).
    data = json.loads(run("queue", "--config", config, "--format", "json").stdout)
    ratio = {w["id"]: w["ratio"] for w in data["workloads"]}
    assert ratio["a"] == pytest.approx(12 / (0.5 * 16 * 168))
    assert ratio["c"] == 0.0
    planned = run("queue", "--config", config, "--plan", tmp_path / "plan.json")
    assert planned.exit_code == 2 and "no --plan" in planned.stderr

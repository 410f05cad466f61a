"""Every line within the width, numbers whole: the defects a new-user walkthrough found in the
fitting of tables (alloc.cli.columns) and the prose around them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.cli.columns import Column, fit, format_row, lines, notes
from alloc.cli.tables import print_table
from alloc.readable import duration

ROOT = Path(__file__).resolve().parents[1]
RESERVATION = ROOT / "instances" / "examples" / "reservation.yaml"


def invoke(*args: str | Path, columns: int = 80) -> list[str]:
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    return result.stdout.splitlines()


def piped(*args: str | Path) -> list[str]:
    """`alloc ... | cat`: no terminal, no COLUMNS."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "alloc.cli.app", *(str(a) for a in args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_label_is_broken_at_spaces_and_its_value_is_never_cut():
    columns = [Column("metric", wrap=True, stages=((1, 8),)), Column("value", right=True)]
    rows = [
        ["wait small (p50 / p90 / max)", "8 s / 2 h 45 min / 7 h 12 min"],
        ["  never started", "12"],
    ]
    out = lines(columns, rows, 44)
    assert all(len(line) <= 44 for line in out), out
    assert out[1].endswith("8 s / 2 h 45 min / 7 h 12 min")  # the value whole, on its first
    assert out[1].startswith("wait small") and out[2].startswith("  ")  # the label broken
    # a label runs on into the blank a short value leaves
    assert out[-1] == "  never started" + " " * (44 - len("  never started") - 2) + "12"


def test_a_label_broken_is_broken_in_its_column_never_around_its_value():
    """It read `wait unallocated (p50 / p90 / 6 min / 1 h 5 min / 2 h 52 min` then `  max)`:
    the label ran on into the value's blank, its last word under it."""
    columns = [Column("metric", wrap=True, stages=((1, 8),)), Column("value", right=True)]
    rows = [
        ["wait small (p50 / p90 / max)", "8 s / 2 h 45 min / 7 h 12 min"],
        ["wait unallocated (p50 / p90 / max)", "6 min / 1 h 5 min / 2 h 52 min"],
    ]
    out = lines(columns, rows, 60)
    assert all(len(line) <= 60 for line in out), out
    first = next(i for i, line in enumerate(out) if line.startswith("wait unallocated"))
    value = "6 min / 1 h 5 min / 2 h 52 min"
    assert out[first].endswith(value)
    label = out[first][: -len(value)]
    assert label.rstrip() and label.endswith(" ")  # the label's words left of the value
    start = len(out[first]) - len(value)
    assert len(out[first + 1]) <= start  # its next line under the label, not the value
    assert " ".join((label + out[first + 1]).split()) == "wait unallocated (p50 / p90 / max)"


def test_the_demand_of_a_run_no_longer_than_a_day_says_no_first_and_last_day():
    from alloc.report.fmt import demand

    d = {"mean": 1.76, "first_day": 1.76, "last_day": 1.76}
    assert demand(d, 0.3) == demand(d, 1) == "1.76x"
    assert demand(d, 1.5) == "1.76x (first day 1.76x, last 1.76x)"
    assert demand(d) == "1.76x (first day 1.76x, last 1.76x)"  # days not known


def test_a_legend_line_about_a_column_left_out_is_left_out():
    """At 60 columns solve left `waiting` out, yet its legend still explained `waiting: ...`."""
    screen = io.StringIO()
    console = Console(file=screen, width=30, color_system=None, soft_wrap=True)
    columns = [Column("node"), Column("held", right=True), Column("spare", right=True, drop=1)]
    legend = [
        (("held, spare", "GPUs"), ("node", "a budget")),
        (("spare", "GPUs nobody holds, a long line to leave out"),),
        "prose stays",
    ]
    print_table(console, columns, [["a-very-long-budget-name", "8", "16"]], legend=legend)
    out = screen.getvalue().splitlines()
    assert "left out at 30 columns: spare" in out, out
    assert not any("nobody" in line for line in out), out
    assert "held: GPUs; node: a budget" in out and "prose stays" in out, out


def test_solve_at_60_columns_explains_no_column_it_left_out():
    out = invoke("solve", RESERVATION, columns=60)
    assert "left out at 60 columns: waiting" in out
    assert not any(line.startswith("waiting:") for line in out), out
    assert any(line.startswith("ratio: fair-share ratio") for line in out), out


@pytest.mark.parametrize("columns", [60, None])
def test_the_simulate_summary_writes_every_value_whole(tmp_path, columns):
    """It read `14 h… min`, `3 s / 3…h 48 min`, `robotic…4 70.26%`, `1.76x (…t 1.76x)`."""
    args = ["simulate", "--synthetic", "--days", "0.3", "--policy", "greedy"]
    args += ["--out", str(tmp_path / "s")]
    out = piped(*args) if columns is None else invoke(*args, columns=columns)
    width = columns or 80  # a pipe: the tables of simulate, solve and whatif fit 80 columns
    table = out[: next(i for i, line in enumerate(out) if line.startswith("outputs in"))]
    assert all(len(line) <= width for line in table), table
    assert not any("…" in line for line in table), table
    m = json.loads((tmp_path / "s" / "metrics.json").read_text(encoding="utf-8"))
    text = "\n".join(table)
    for w in m["wait_s"].values():
        if w["count"]:
            assert f"{duration(w['p50'])} / {duration(w['p90'])} / {duration(w['max'])}" in text
    assert "first day" not in text  # a run of 0.3 days: its first and last day are the run


def test_a_column_is_no_wider_than_what_it_shows_and_names_get_the_room():
    """`b-scavenge` was `b-sc…nge` while STATE was 13 wide for `protected` (9)."""
    out = invoke("queue", RESERVATION, columns=60)
    assert all(len(line) <= 60 for line in out), out
    assert any(line.startswith("b-scavenge ") for line in out), out
    head = out[0]
    assert head.index("BUDGET") - head.index("STATE") == len("protected") + 1


def test_a_queue_too_wide_says_how_wide_and_its_footer_fits(tmp_path):
    lab = tmp_path / "lab.yaml"
    invoke("generate", "-o", lab)
    out = invoke("queue", lab, columns=40)
    said = [line for line in out if line.startswith("the table is ")]
    widest = max(len(line) for line in out)
    assert widest <= 40 or said, out[-12:]
    assert not said or said[0].startswith(f"the table is {widest} characters wide"), said
    footer = out[next(i for i, line in enumerate(out) if " workloads, " in line) :]
    assert all(len(line) <= 40 for line in footer), footer  # `121 workloads, ...` was 59


def test_solve_breaks_its_prose_and_notes_and_fits_its_tables_in_60_columns():
    out = invoke("solve", RESERVATION, columns=60)
    assert all(len(line) <= 60 for line in out), [x for x in out if len(x) > 60]
    assert any(line.startswith("solver milp: optimal without a MILP,") for line in out)
    assert "left out at 60 columns: waiting" in out  # the budgets table, fitted
    rows = {line.split()[0]: line.split() for line in out if line[:2] in ("a ", "b ")}
    assert rows["a"][-1] == "0.00" and rows["b"][-1] == "0.37"  # the ratio whole


def test_a_table_legend_is_broken_to_the_width_it_is_fitted_to():
    screen = io.StringIO()
    console = Console(file=screen, width=40, color_system=None, soft_wrap=True)  # a pipe
    legend = "share: of the parent; of all: of the cluster; GPU-h: charged over the window"
    print_table(console, [Column("node"), Column("GPU-h", right=True)], [["a", "1.0"]],
                title="budgets of dry-run", legend=[legend])  # fmt: skip
    out = screen.getvalue().splitlines()
    assert all(len(line) <= 40 for line in out), out
    assert " ".join(" ".join(out[3:]).split()) == legend


def test_the_decision_of_status_is_written_shorter_never_cut():
    from alloc.cli.live_cmd import queue_table
    from alloc.status import QueueRow

    row = QueueRow(
        position=1,
        workload="j13",
        budget="vision",
        gpus=4,
        priority=0,
        waiting_s=120.0,
        decision="wait (over_allocation)",
        standing="over its entitlement",
        path="vision 1.27",
    )
    columns, cells = queue_table([row])
    layout = fit(columns, cells, 56)
    line = format_row(columns, layout, cells[0])
    assert "wait (over_alloc)" in line and "…" not in line, line
    assert "abbreviated: over_alloc = over_allocation" in notes(columns, layout, cells)


def test_whatif_waits_are_written_shorter_only_as_far_as_they_must():
    from alloc.cli.render_whatif import _waits

    assert _waits("3 h 32 min / 5 h 50 min", 23) == "3 h 32 min / 5 h 50 min"
    # of two alike, the p90 (it was the p50: `3 h+ / 5 h 50 min`; once `4 h /  6 h`)
    assert _waits("3 h 32 min / 5 h 50 min", 17) == "3 h 32 min / 5 h+"
    assert _waits("3 h 32 min / 5 h 50 min", 12) == "3 h+ / 5 h+"


def test_whatif_legends_are_broken_to_the_width(tmp_path):
    from test_report import make_run

    from alloc.cli.render_whatif import print_comparison
    from alloc.report.compare import compare

    labels = ["base/greedy", "base/fifo", "science-up/greedy", "science-up/fifo"]
    runs = [(label, make_run(tmp_path / label.replace("/", "-"))) for label in labels]
    for width in (80, 60):
        screen = io.StringIO()
        console = Console(file=screen, width=width, color_system=None, soft_wrap=True)
        print_comparison(console, compare(runs), [], None, tmp_path, teams=True)
        out = screen.getvalue().splitlines()[:-1]  # the folder's line: a path, whole
        assert all(len(line) <= width for line in out), [x for x in out if len(x) > width]
        text = " ".join(" ".join(out).split())
        assert "d/o: delivered / owed over the window; waits: of allocated work" in text
        if "left out at 60 columns: delivered, owed" in text:  # nor explained then
            assert "GPU-hours" not in text and text.count("wait p50 / p90: of the team") == 1
        else:
            assert "delivered, owed: GPU-hours; wait p50 / p90:" in text


def test_the_waits_of_a_team_shorten_the_longer_the_p90_of_two_alike_and_leave_no_blank():
    """At 60 columns the p50 read `3 h+ / 5 h 51 min` (of two alike, p50 written shorter), in
    another row the p90 `1 h 5 min /   4 h+` (padding left where the time was shortened)."""
    from alloc.cli.render_whatif import _waits

    assert _waits("3 h 32 min / 5 h 51 min", 17) == "3 h 32 min / 5 h+"  # alike: the p90
    assert _waits("1 h 5 min / 4 h 10 min", 16) == "1 h 5 min / 4 h+"  # the longer, no blank
    assert _waits("4 h 38 min / 10 h 17 min", 15) == "4 h+ / 10 h+"  # then the other
    assert _waits("   6 s / 38 min", 15) == "   6 s / 38 min"  # whole: padded as the rows
    assert _waits("13 min / 4 h 10 min", 14) == "13 min / 4 h+"

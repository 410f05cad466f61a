"""Progress of the long commands (issue 17): without a terminal, a line per run on stderr at a
steady pace (simulated time reached of the total, rounds, rates, elapsed time and ETA),
stdout left to the command's output; with one, a live display. And `alloc whatif`'s tables:
a row per run first, per team only with --teams, every row one line in 80 columns or a pipe."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from test_report import _team, make_run
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.cli.columns import Column, fit
from alloc.cli.progress import ProgressDisplay, RunState, clock
from alloc.cli.render_whatif import print_comparison, text_column
from alloc.cli.shorten import shorten_middle_keep_tail as shorten
from alloc.report.compare import compare

ROOT = Path(__file__).resolve().parents[1]
HOUR = 3600.0

# One progress line; the rates (and so the ETA) once a second of the run has passed.
LINE = re.compile(
    r"^progress (?P<label>\S+)(?: \(run (?P<i>\d+) of (?P<n>\d+)\))?: "
    r"(?P<reached>\d+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?) of "
    r"(?P<total>\d+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?) simulated "
    r"\((?P<pct>\d+)%\), (?P<rounds>[\d,]+) rounds? \((?P<full>[\d,]+) full rounds?, "
    r"(?P<passes>[\d,]+) event pass(?:es)?\), "
    r"(?:(?P<rate>[\d.]+) simulated h/s, (?P<round_rate>[\d.]+) rounds/s, )?"
    r"elapsed (?P<elapsed>\d+:\d\d)"
    r"(?:, ETA (?P<eta>\d+:\d\d|unknown)|(?P<stopping>; stopping after the current round))$"
)
# Before the first round (the run's inputs are read), and once, when the simulation is over
# (its files are then written).
READING = re.compile(
    r"^progress \S+(?: \(run \d+ of \d+\))?: reading its inputs, elapsed \d+:\d\d$"
)
DURATION = r"\d+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?"
WRITING = re.compile(
    rf"^progress (?P<label>\S+)(?: \(run \d+ of \d+\))?: (?:{DURATION} simulated|stopped "
    rf"after {DURATION} of {DURATION} simulated \(\d+%\)), [\d,]+ rounds? \([\d,]+ full "
    r"rounds?, [\d,]+ event pass(?:es)?\) in "
    r"\d+:\d\d; writing the (?:partial )?report \.\.\.$"
)


def alloc_command(*args: str | Path) -> list[str]:
    """`alloc ...` as a subprocess runs it: this checkout's package, no terminal."""
    return [sys.executable, "-m", "alloc.cli.app", *(str(a) for a in args)]


# -- the progress lines -------------------------------------------------------------------


def test_without_a_terminal_simulate_prints_progress_lines_at_the_pace_asked(tmp_path):
    out = tmp_path / "out"
    command = alloc_command(
        "simulate", "--synthetic", "--days", "0.5", "--policy", "greedy", "--progress-every",
        "0.25s", "--out", out,
    )  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "progress" not in done.stdout  # stdout stays the summary
    progress = [line for line in done.stderr.splitlines() if line.startswith("progress")]
    # Once the simulation is over, one line says the report is written, and no more lines.
    writing = [line for line in progress if WRITING.match(line)]
    assert writing == progress[-1:], progress
    assert writing[0].startswith("progress greedy: 12 h simulated, ")
    lines = [line for line in progress[:-1] if not READING.match(line)]
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed, strict=True) if not m]
    matches = [m for m in parsed if m]
    # The synthetic half day takes seconds to simulate: a line every quarter of a second.
    assert len(matches) >= 4, done.stderr
    assert {m["label"] for m in matches} == {"greedy"}
    assert {m["total"] for m in matches} == {"12 h"}
    elapsed = [
        int(m["elapsed"].split(":")[0]) * 60 + int(m["elapsed"].split(":")[1]) for m in matches
    ]
    assert elapsed == sorted(elapsed)
    shares = [int(m["pct"]) for m in matches]
    assert shares == sorted(shares) and shares[-1] <= 100
    rounds = [int(m["rounds"].replace(",", "")) for m in matches]
    assert rounds == sorted(rounds) and rounds[-1] > 0
    assert any(m["rate"] and m["eta"] != "unknown" for m in matches)  # once a second passed


def test_the_rounds_of_the_progress_line_are_those_metrics_json_counts(tmp_path):
    """The progress line counts both kinds of rounds, metrics.json's `rounds` only full ones:
    each kind is named the same in both (`full_rounds`, `event_passes`), and `rounds` is
    still `full_rounds` for what read metrics.json before."""
    out = tmp_path / "out"
    args = ["simulate", "--synthetic", "--days", "0.05", "--policy", "greedy", "--out", out]
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    last = WRITING.match(result.stderr.splitlines()[-1])
    assert last, result.stderr
    m = json.loads((out / "metrics.json").read_text())
    assert m["rounds"] == m["full_rounds"] > 0 and m["event_passes"] > 0
    total = m["full_rounds"] + m["event_passes"]
    assert f" {total:,} rounds ({m['full_rounds']:,} full rounds, " in last.string
    assert f"{m['event_passes']:,} event passes) in " in last.string


def test_progress_lines_can_be_turned_off(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        "j1,a,8,0,3600,1h,true,0,\n",
        encoding="utf-8",
    )
    lab = tmp_path / "lab.yaml"
    lab.write_text(
        "now: 2026-11-30T12:00:00Z\ncluster:\n  name: t\n  hosts:\n"
        "    - {name: h1, gpus: 8, gpu_type: h100, block: b1, rack: r1}\n"
        "budgets:\n  name: root\n  children:\n    - {name: a, share: 100%}\n",
        encoding="utf-8",
    )
    command = alloc_command(
        "simulate", lab, "--trace", trace, "--days", "0.1", "--policy", "greedy",
        "--progress-every", "0", "--out", tmp_path / "out",
    )  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "progress" not in done.stderr


def test_a_bad_progress_interval_is_bad_input(tmp_path):
    result = CliRunner().invoke(
        app,
        ["simulate", "--synthetic", "--progress-every", "often", "--out", str(tmp_path / "o")],
    )
    assert result.exit_code == 2
    assert "--progress-every" in result.stderr and "expected a duration" in result.stderr
    assert not (tmp_path / "o").exists()


def test_a_run_line_says_how_far_how_fast_and_how_long_to_go():
    run = RunState("base/milp", 2 * 86400.0)
    run.start(100.0)
    assert run.text(103.5) == "reading its inputs, elapsed 0:04"  # no round yet
    run.update(105.0, 0.0, 1, 0)
    assert run.text(105.5) == (
        "0 s of 2 d simulated (0%), 1 round (1 full round, 0 event passes), elapsed 0:06, "
        "ETA unknown"
    )
    run.update(110.0, 43200.0, 120, 900)  # half a day in 5 s
    run.update(120.0, 86400.0, 240, 1800)  # and another in 10 s
    # A simulated day in the 15 s since the first round: 1.6 simulated hours and 135.9 rounds
    # a second; a day to go: 15 s. The elapsed time counts the reading too.
    assert run.text(120.0) == (
        "1 d of 2 d simulated (50%), 2,040 rounds (240 full rounds, 1,800 event passes), "
        "1.60 simulated h/s, "
        "135.9 rounds/s, elapsed 0:20, ETA 0:15"
    )
    assert run.short(120.0) == "1 d of 2 d, 2,040 rounds, 1.60 sim h/s, ETA 0:15"
    # Once a stop is asked: no rates nor ETA, the run ends after its current round.
    assert run.text(120.0, stopping=True) == (
        "1 d of 2 d simulated (50%), 2,040 rounds (240 full rounds, 1,800 event passes), "
        "elapsed 0:20; stopping after the current round"
    )
    assert run.short(120.0, stopping=True) == (
        "1 d of 2 d, 2,040 rounds, stopping after the current round"
    )
    # The simulation over: what it simulated, in how long, whole or stopped before its end.
    run.update(125.0, 2 * 86400.0, 300, 2000)
    assert run.written(125.0) == (
        "2 d simulated, 2,300 rounds (300 full rounds, 2,000 event passes) in 0:25; writing "
        "the report ..."
    )
    run.update(125.0, 1.5 * 86400.0, 300, 2000)
    assert run.written(125.0) == (
        "stopped after 1 d 12 h of 2 d simulated (75%), 2,300 rounds (300 full rounds, 2,000 "
        "event passes) in 0:25; writing the partial report ..."
    )


def test_rates_are_taken_over_the_last_minute():
    # The first day went fast (an empty cluster), the last minute slowly: the ETA follows
    # the recent pace.
    run = RunState("r", 10 * 86400.0)
    run.start(0.0)
    run.update(10.0, 86400.0, 10, 0)
    for s in range(11, 200):
        run.update(float(s), 86400.0 + (s - 10) * 60.0, 10 + s, 0)  # a simulated minute a second
    rates = run.rates(199.0)
    assert rates is not None and rates[0] == pytest.approx(60.0, rel=0.02)


def test_clock_reads_like_a_clock():
    assert [clock(s) for s in (0, 45.4, 723, 3723)] == ["0:00", "0:45", "12:03", "1:02:03"]


def test_the_lines_name_each_running_run_and_its_place():
    display = ProgressDisplay([("base/milp", 86400.0), ("alt/milp", 86400.0)], 1.0)
    assert display.lines() == []  # nothing runs yet
    display.start("alt/milp")
    display.update("alt/milp", 3600.0, 10, 20)
    (line,) = display.lines()
    assert line.startswith("progress alt/milp (run 2 of 2): 1 h of 1 d simulated (4%)")
    display.stop_requested()
    (line,) = display.lines()
    assert line.endswith("; stopping after the current round") and "ETA" not in line


def test_the_lines_stop_when_the_simulation_does_and_one_says_the_report_is_written():
    # A new user saw "3 d of 3 d (100%) ... ETA 0:00" (after Ctrl-C "ETA 2:27 [stopping
    # after the current round]") every few seconds while the report was written.
    screen = io.StringIO()
    console = Console(file=screen, width=200, color_system=None)
    runs = [("base/greedy", 86400.0), ("alt/greedy", 86400.0)]
    with ProgressDisplay(runs, 0.05, console) as display:
        display.start("base/greedy")
        display.update("base/greedy", 3600.0, 10, 20)
        time.sleep(0.2)
        assert "progress base/greedy (run 1 of 2): 1 h of 1 d simulated" in screen.getvalue()
        display.stop_requested()
        display.writer("base/greedy")(7200.0, 12, 30)
        assert display.lines() == []
        printed = len(screen.getvalue().splitlines())
        time.sleep(0.3)  # six ticks
    lines = screen.getvalue().splitlines()
    assert len(lines) == printed  # nothing more
    assert lines[-1] == (
        "progress base/greedy (run 1 of 2): stopped after 2 h of 1 d simulated (8%), 42 rounds "
        "(12 full rounds, 30 event passes) in 0:00; writing the partial report ..."
    )
    assert WRITING.match(lines[-1])


def test_with_a_terminal_a_runs_bar_says_when_the_report_is_written():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80, color_system=None)
    with ProgressDisplay([("greedy", 86400.0)], 10.0, console) as display:
        display.start("greedy")
        display.reporter("greedy")(43200.0, 5, 50)
        display.writer("greedy")(86400.0, 10, 90)
        time.sleep(0.3)  # the display refreshes itself ten times a second
        assert display.runs["greedy"].state == "writing"
        assert "writing the report ..." in screen.getvalue().split("12 h of 1 d")[-1]


def test_with_a_terminal_the_progress_is_live_and_notes_each_run_that_ends():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80, color_system=None)
    runs = [("base/greedy", 86400.0), ("base/fifo", 86400.0)]
    with ProgressDisplay(runs, 10.0, console) as display:
        assert display.live
        display.start("base/greedy")
        display.reporter("base/greedy")(43200.0, 5, 50)
        time.sleep(0.3)  # the display refreshes itself ten times a second
        shown = screen.getvalue()
        assert "base/greedy" in shown and "12 h of 1 d, 55 rounds" in shown
        assert "waiting" in shown  # base/fifo
        display.finish("base/greedy", "done", {"simulated_days": 1.0})
    assert "done: base/greedy" in screen.getvalue()


def test_with_a_terminal_no_line_is_printed_on_a_timer():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80, color_system=None)
    with ProgressDisplay([("greedy", 86400.0)], 0.05, console) as display:
        display.start("greedy")
        time.sleep(0.2)
    assert "progress greedy:" not in screen.getvalue()


# -- whatif's tables ------------------------------------------------------------------------

LONG = "computational-linguistics/pretraining-of-very-large-models"


def test_a_long_name_is_cut_in_the_middle():
    assert shorten(LONG, 20) == "computati…rge-models"
    assert len(shorten(LONG, 20)) == 20
    assert shorten("base/milp", 20) == "base/milp"


def test_only_text_columns_narrow_and_numbers_keep_their_width():
    columns = [text_column("run"), Column("d/o", right=True), Column("preempt.", right=True)]
    rows = [["x" * 70, "100.0%", "12,345"]]
    assert fit(columns, rows, 80, tight=2).widths == [80 - 6 - 8 - 4, 6, 8]
    assert fit(columns, rows, 200).widths == [70, 6, 8]


def comparison_with_long_names(tmp_path: Path) -> object:
    teams = {LONG: _team(100.0, 0.8, 60.0, 600.0, 3), "b": _team(50.0, 1.0, 0.0, 10.0, 0)}
    runs = [
        ("base/legacy-priority", make_run(tmp_path / "one", teams=teams)),
        (
            "a-scenario-with-a-long-name/legacy-priority",
            make_run(tmp_path / "two", teams=teams | {LONG: _team(90.0, 0.7, 5.0, 60.0, 1)}),
        ),
    ]
    return compare(runs)


def shown_as(cell: str, text: str) -> bool:
    """`cell` is `text`, or `text` cut in the middle."""
    if "…" not in cell:
        return cell == text
    head, tail = cell.split("…")
    return text.startswith(head) and text.endswith(tail) and len(cell) < len(text)


@pytest.mark.parametrize("width", [80, 120, 200])
def test_every_row_of_whatifs_tables_is_one_line(tmp_path, width):
    # 80: a terminal or a pipe; 120: a wider terminal; 200: room for every name.
    screen = io.StringIO()
    console = Console(file=screen, width=width, color_system=None)
    c = comparison_with_long_names(tmp_path)
    print_comparison(console, c, [], None, tmp_path, teams=True)  # type: ignore[arg-type]
    text = screen.getvalue().splitlines()
    rules = [i for i, line in enumerate(text) if line.startswith("─")]
    assert len(rules) == 2  # two tables
    overall = text[rules[0] - 1 : rules[0] + 3]  # the header, the rule and a row per run
    teams = text[rules[1] - 1 : rules[1] + 1 + 2 * 3]  # ... per team (b, then LONG) and run
    assert all(len(line) <= width for line in overall + teams)
    for line, (label, preempt) in zip(
        overall[2:], [("base/legacy-priority", "4"), (c.labels[1], "4")], strict=True
    ):
        cells = line.split()
        assert shown_as(cells[0], label) and cells[-1] == preempt  # the whole row on one line
    assert shown_as(teams[5].strip(), LONG)  # a team's name heads its rows
    assert shown_as(teams[6].split()[0], "base/legacy-priority")
    assert teams[6].split()[1:4] == ["100", "100", "80.0%"]  # delivered, owed, d/o
    assert teams[7].split()[1:5] == ["90", "100", "70.0%", "-10.0"]  # ... and Δ d/o
    # one run, one name: cut alike in both tables (`scienc…p/greedy` in the second before)
    assert overall[3].split()[0] == teams[7].split()[0]
    if width == 200:
        assert "…" not in "".join(overall + teams)
    else:
        assert "…" in overall[3]  # the long label


DEEP = "computational-linguistics-and-language-technologies/pretraining/of-very-large-models"


def _overall_and_teams(text: str) -> tuple[list[str], list[str]]:
    """The lines of whatif's two tables, each from its header to its last row."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("─")]
    ends = [
        next(i for i in range(r, len(lines)) if lines[i].startswith(("d/o:", "delivered, owed")))
        for r in rules
    ]
    return lines[rules[0] - 1 : ends[0]], lines[rules[1] - 1 : ends[1]]


@pytest.mark.parametrize(
    ("ratios", "worst"),
    [
        pytest.param({DEEP: 1.0, "b": 1.0, "c/d": 1.0}, "none below 100%", id="none-below"),
        pytest.param({DEEP: 0.8, "b": 0.8, "c/d": 0.8}, "all 3 teams tie", id="all-tie"),
        pytest.param({DEEP: 0.7, "b": 0.7, "c/d": 0.9}, " and 1 more", id="path-and-more"),
        pytest.param({DEEP: 0.5, "b": 1.0, "c/d": 0.9}, "", id="path"),
    ],
)
def test_whatifs_worst_team_cuts_only_budget_paths_never_its_phrases(tmp_path, ratios, worst):
    """Issue 17: at 80 columns "none below 100%" was cut as if it were a path ("non…100%"),
    and "nlp/a and 2 more" lost its path and its count ("com…more")."""
    teams = {t: _team(100.0 * r, r, 60.0, 600.0, 3) for t, r in ratios.items()}
    runs = [
        ("base/legacy-priority", make_run(tmp_path / "one", teams=teams)),
        ("a-scenario-with-a-long-name/legacy-priority", make_run(tmp_path / "two", teams=teams)),
    ]
    screen = io.StringIO()
    console = Console(file=screen, width=80, color_system=None)
    print_comparison(console, compare(runs), [], None, tmp_path, teams=True)  # type: ignore[arg-type]
    overall, per_team = _overall_and_teams(screen.getvalue())
    assert all(len(line) <= 80 for line in overall + per_team), overall + per_team
    assert overall[0].split()[:4] == ["run", "d/o", "worst", "team"]  # the header whole
    for row in overall[2:]:
        if worst.startswith(" and") or not worst:  # the path cut as a path, the phrase whole
            cut = re.search(rf" …([\w/-]{{5,}}){worst} ", row)
            assert cut is not None and DEEP.endswith(cut.group(1)), row
        else:
            assert f" {worst} " in row, row
    # With --teams, a team's path longer than the line heads its rows cut as a path.
    assert "c…/pretraining/of-very-large-models" in per_team


def test_a_row_one_column_too_wide_closes_its_gaps_before_it_cuts_a_label(tmp_path):
    # The README's tutorial: `science-up/greedy` and `none below 100%` side by side in 80
    # columns are a character too wide with two spaces between columns: one space, nothing cut.
    owed = {"nlp/team1": _team(90.6, 0.906, 0.0, 360.0, 6432), "b": _team(50.0, 1.0, 0, 0, 0)}
    full = {"nlp/team1": _team(100.0, 1.0, 0.0, 180.0, 6860), "b": _team(50.0, 1.0, 0, 0, 0)}
    runs = [
        ("base/greedy", make_run(tmp_path / "one", teams=owed, delivered_over_owed=0.966)),
        ("science-up/greedy", make_run(tmp_path / "two", teams=full, delivered_over_owed=1.0)),
    ]
    screen = io.StringIO()
    console = Console(file=screen, width=80, color_system=None)
    print_comparison(console, compare(runs), [], None, tmp_path)  # type: ignore[arg-type]
    overall, _ = _overall_and_teams(screen.getvalue() + "\n─\ndelivered, owed")
    assert all(len(line) <= 80 for line in overall) and "…" not in "".join(overall), overall
    assert overall[3].startswith("science-up/greedy 100.0% none below 100% "), overall


def test_whatif_prints_a_row_per_run_and_the_teams_only_when_asked(tmp_path):
    lab = tmp_path / "lab.yaml"
    lab.write_text(
        "now: 2026-11-30T12:00:00Z\ncluster:\n  name: t\n  hosts:\n"
        "    - {name: h1, gpus: 8, gpu_type: h100, block: b1, rack: r1}\n"
        "    - {name: h2, gpus: 8, gpu_type: h100, block: b1, rack: r1}\n"
        "budgets:\n  name: root\n  children:\n"
        f"    - {{name: {LONG.split('/')[0]}, share: 50%, children: "
        f"[{{name: {LONG.split('/')[1]}, share: 100%}}]}}\n"
        "    - {name: b, share: 50%}\n",
        encoding="utf-8",
    )
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        f"j1,{LONG},16,0,3600,1h,true,0,\nj2,b,8,600,1800,30m,true,0,\n",
        encoding="utf-8",
    )
    args = [str(lab), "--trace", str(trace), "--policies", "greedy,legacy-priority"]
    args += ["--days", "0.1", "--out", str(tmp_path / "out")]
    plain = CliRunner().invoke(app, ["whatif", *args], env={"COLUMNS": "80"})
    assert plain.exit_code == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0] == "What if: one row per run"
    assert lines[1].split() == ["run", "d/o", "worst", "team", "its", "d/o", "wait", "p50"] + [
        "wait",
        "p90",
        "preempt.",
    ]
    assert [line.split()[0] for line in lines[3:5]] == ["base/greedy", "base/legacy-priority"]
    assert "per team" not in plain.stdout
    assert all(len(line) <= 80 for line in lines[:5])
    teams = CliRunner().invoke(app, ["whatif", *args, "--teams"], env={"COLUMNS": "80"})
    assert teams.exit_code == 0, teams.stderr
    assert "What if: per team and run" in teams.stdout
    table = teams.stdout.split("What if: per team and run")[1].splitlines()
    assert "computational-linguistics/pretraining-of-very-large-models" in table
    # The table's rows fit; the legend and the notes under it are prose, never broken in a pipe.
    rows = table[: next(i for i, line in enumerate(table) if line.startswith("delivered, owed"))]
    assert len(rows) >= 1 + 2 + 2 * 3 and all(len(line) <= 80 for line in rows), rows
    assert "done: base/greedy" in plain.stderr  # the runs' ends go with the progress


def test_the_readmes_progress_and_ctrl_c_lines_are_what_the_tool_prints():
    # The README showed "14.0 h of 1.0 d" long after the tool printed "14 h of 1 d".
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("#### Progress and Ctrl-C")[1].split("\n####")[0]
    blocks = re.findall(r"```console\n(.*?)```", section, flags=re.S)
    lines = [line for block in blocks for line in block.splitlines()]
    progress = [line for line in lines if line.startswith("progress ")]
    assert len(progress) >= 4
    assert all(LINE.match(line) or WRITING.match(line) for line in progress), progress
    (interrupted,) = [line for line in lines if line.startswith("interrupted")]
    assert re.fullmatch(
        rf"interrupted \(Ctrl-C\): stopped after {DURATION} of {DURATION} simulated \(\d+%\); "
        r"the partial results are in \S+",
        interrupted,
    )


def test_the_eta_follows_a_run_that_slows_as_its_queue_fills():
    """A 7-day run said `elapsed 1:10, ETA 1:25` and took 3:37: each simulated second costs
    more wall time than the one before. The ETA takes that growth on to the end."""
    horizon = 7 * 86400.0
    a, b = 2e-4, 4e-9  # wall seconds per simulated second: a + b t, growing
    total = a * horizon + b * horizon**2 / 2  # the run's wall time: 853 s
    run = RunState("r", horizon)
    run.start(0.0)
    t, wall = 0.0, 0.0
    run.update(wall, t, 1, 0)
    while wall < 70:  # a sample a second of wall time; the ETA at 1:10, as reported
        t += 1.0 / (a + b * t)
        wall += 1.0
        run.update(wall, t, 1 + int(wall), 0)
    eta = run.eta(wall)
    minutes, seconds = (int(x) for x in eta.split(":"))
    left = total - wall
    assert abs(60 * minutes + seconds - left) <= 0.1 * left, (eta, left)
    # at the recent pace alone it said far less
    rates = run.rates(wall)
    assert rates is not None and (horizon - t) / rates[0] < 0.8 * left


def test_a_steady_run_keeps_the_eta_of_its_pace():
    run = RunState("r", 86400.0)
    run.start(0.0)
    for s in range(1, 200):
        run.update(float(s), s * 100.0, s, 0)  # 100 simulated seconds a second, steadily
    assert run.eta(199.0) == clock((86400.0 - 19900.0) / 100.0)

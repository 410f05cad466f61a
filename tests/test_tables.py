"""Readable in an 80-column terminal and in a log file (issue 17): every table of the command
line is a header row and columns two spaces apart (no borders), its short headers explained by
a legend; the solve Budgets table and the simulate summary fit 80 columns; and without a
terminal no prose line is broken (a log line is one line)."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.cli.columns import Column, Layout, abbreviations, fit, format_row, lines, notes
from alloc.cli.queue_table import REASONS
from alloc.cli.shorten import shorten_duration, shorten_end, shorten_middle, shorten_path
from alloc.cli.tables import print_table
from alloc.domain import Reason

ROOT = Path(__file__).resolve().parents[1]
BOX = set("┏┓┗┛┃━┡┩│└┘┌┐─┬┴┼╇╈╋")


def alloc_piped(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`alloc ...` with its output in a pipe, as in `alloc ... > log` (no terminal at all)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    command = [sys.executable, "-m", "alloc.cli.app", *(str(a) for a in args)]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    return done


def section(text: str, title: str) -> list[str]:
    """The lines of the table titled `title`: from its title to the next blank line."""
    lines_ = text.splitlines()
    start = lines_.index(title)
    end = next((i for i in range(start, len(lines_)) if not lines_[i].strip()), len(lines_))
    return lines_[start:end]


BUDGET_HEADS = ["node", "share", "of", "all", "owed", "entitled", "held", "unalloc", "demand"]
BUDGET_HEADS += ["waiting", "ratio"]


def test_the_budgets_table_at_depth_2_of_the_1024_gpu_lab_fits_80_columns():
    lab = ROOT / "instances" / "lab-1024.yaml"
    result = CliRunner().invoke(app, ["solve", str(lab), "--depth", "2"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    assert not BOX & set(result.stdout)
    budgets = section(result.stdout, "Budgets (GPUs)")
    assert budgets[1].split() == BUDGET_HEADS  # one header line
    assert all(len(line) <= 80 for line in budgets), budgets
    rows = {line.split()[0]: line.split()[1:] for line in budgets[2:] if "%" in line}
    # waiting: 24 allocated workloads (5 more wait unallocated, counted before)
    assert rows["vision"] == ["35.7%", "35.7%", "366", "410", "441", "0", "1,009", "24", "0.89"]
    vision = next(i for i, line in enumerate(budgets) if line.startswith("vision "))
    assert budgets[vision + 1].startswith("  team1 ")  # its teams under it, indented
    legend = budgets[-5:]
    assert legend[0].startswith("share: of the parent; of all: of the cluster; owed: ")
    assert "unalloc" in legend[1] and "ratio: fair-share ratio" in legend[4]
    assert legend[2].startswith("demand: GPUs of its allocated work")
    assert legend[3].startswith("waiting: how many of those workloads wait")


def test_solve_piped_keeps_each_line_whole_and_its_tables_in_80_columns():
    done = alloc_piped("solve", "instances/examples/reservation.yaml")
    out = done.stdout.splitlines()
    assert out[0].startswith("instances/examples/reservation.yaml at 2026-11-30T12:00:00Z")
    assert out[0].endswith(" s)") and out[1].startswith("solver milp: optimal without a MILP, ")
    assert out[1].endswith("gap 0.000%")  # the solver line whole, not broken at a width
    assert not BOX & set(done.stdout)
    assert all(len(line) <= 80 for line in out), out
    assert section(done.stdout, "Decisions")[1:3] == [
        "action  reason            workloads  GPUs",
        "keep    protected                 6    40",
    ]
    assert section(done.stdout, "Occupancy of ready GPUs after the round")[1:] == [
        "ready GPUs  allocated  unallocated   idle",
        "        64      75.0%        12.5%  12.5%",
    ]


def test_explain_piped_writes_a_sentence_on_one_line():
    done = alloc_piped("explain", "instances/examples/reservation.yaml", "a-gang")
    (line,) = [line for line in done.stdout.splitlines() if "lower goes first" in line]
    assert line.endswith("lower goes first, level by level")
    assert any(len(line) > 120 for line in done.stdout.splitlines())  # never broken


LONG = "computational-linguistics/pretraining-of-very-large-models"


@pytest.fixture
def long_named_lab(tmp_path: Path) -> tuple[Path, Path]:
    lab = tmp_path / "lab.yaml"
    lab.write_text(
        "now: 2026-11-30T12:00:00Z\ncluster:\n  name: t\n  hosts:\n"
        "    - {name: h1, gpus: 8, gpu_type: h100, block: b1, rack: r1}\n"
        "budgets:\n  name: root\n  children:\n"
        f"    - {{name: {LONG.split('/')[0]}, share: 50%, children: "
        f"[{{name: {LONG.split('/')[1]}, share: 100%}}]}}\n"
        "    - {name: b, share: 50%}\n",
        encoding="utf-8",
    )
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        f"j1,b,8,0,7200,1h,true,0,\nj2,{LONG},8,600,1800,30m,true,0,\n",
        encoding="utf-8",
    )
    return lab, trace


def worst_of(line: str) -> str:
    """The third word when it is the worst team's (shortened) path, not `hour`."""
    words = line.split()
    return words[2] if len(words) > 2 and "/" in words[2] else "-"


def test_the_simulate_summary_fits_80_columns_in_a_terminal_and_a_pipe(tmp_path, long_named_lab):
    lab, trace = long_named_lab
    args = ["simulate", str(lab), "--trace", str(trace), "--policy", "greedy", "--days", "0.1"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a")], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    piped = alloc_piped(*args, "--out", tmp_path / "b")
    for text in (result.stdout, piped.stdout):
        out = text.splitlines()
        assert out[0] == "greedy, 2 h 24 min"  # 0.1 days, as a duration
        assert out[1].split() == ["metric", "value"]
        assert out[-1].startswith("outputs in ")  # prose, whole however long its path
        assert all(len(line) <= 80 for line in out[:-1]), out
        assert not BOX & set(text)
        (worst,) = [line for line in out if line.split()[:3] == ["worst", "team", worst_of(line)]]
        assert LONG not in worst and "…" in worst  # the path shortened as a path...
        assert "c…/pretraining-of-very-large-models" in worst  # (its leaf whole)
        assert re.fullmatch(r"\d+\.\d\d%", worst.split()[-1])  # ... and its ratio whole
        # "wall seconds 91.8" was read as the command's time (1 min 42 s with the report)
        (wall,) = [line for line in out if line.startswith("wall time")]
        assert re.fullmatch(r"wall time, simulation only \(no report\) +[\d,]+\.\d s", wall)


# -- the table printer and the column helper ------------------------------------------------


def test_a_table_is_its_title_a_header_rows_and_a_legend_without_borders():
    screen = io.StringIO()
    console = Console(file=screen, width=80, color_system=None)
    columns = [Column("node", shorten=shorten_path, stages=((1, 6),)), Column("GPUs", right=True)]
    print_table(console, columns, [["nlp/olmo", "8"], ["vision", "1,024"]], title="T", legend=["x"])
    assert screen.getvalue().splitlines() == [
        "T",
        "node       GPUs",
        "nlp/olmo      8",
        "vision    1,024",
        "x",
    ]


def test_a_narrow_console_shortens_text_columns_never_numbers():
    columns = [Column("id", shorten=shorten_middle, stages=((1, 8),)), Column("GPUs", right=True)]
    rows = [["olmo-7b-pretraining-run-3", "1,024"]]
    assert lines(columns, rows, 20) == ["id" + " " * 14 + "GPUs", "olmo-7b…-run-3 1,024"]
    assert all(len(line) <= 20 for line in lines(columns, rows, 20))


def test_a_column_narrowed_below_its_header_keeps_the_line_within_the_width():
    columns = [Column("a long header", shorten=shorten_middle, stages=((1, 4),)), Column("n")]
    layout = fit(columns, [["abcdefghijklmnop", "1"]], 8)
    assert layout.full <= 8
    assert len(format_row(columns, layout, ["abcdefghijklmnop", "1"])) <= 8


def test_a_heading_row_uses_the_whole_line_of_the_table():
    columns = [Column("team / run", shorten=shorten_middle), Column("d/o", right=True)]
    layout = fit(columns, [["base", "80.0%"]], None)
    assert layout.full == len("team / run") + 2 + len("80.0%")
    assert format_row(columns, layout, [LONG]) == shorten_middle(LONG, layout.full)
    assert format_row(columns, layout, ["nlp"]) == "nlp"


# -- alloc status and alloc queue in 80 columns ----------------------------------------------


def invoke(*args: str | Path, columns: int | None = 80) -> list[str]:
    env = {"COLUMNS": None if columns is None else str(columns)}  # None: unset, as in a pipe
    result = CliRunner().invoke(app, [str(a) for a in args], env=env)
    assert result.exit_code == 0, result.stderr
    return result.stdout.splitlines()


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled controller config, 3 simulated hours in: j13 and j18 wait (README)."""
    folder = tmp_path_factory.mktemp("dry") / "controller"
    here = ROOT / "instances" / "controller"
    shutil.copytree(here, folder, ignore=shutil.ignore_patterns("*.db"))
    invoke("controller", "run", "--config", folder / "dry-run.yaml", "--clock", "simulated",
           "--until", "3h")  # fmt: skip
    return folder / "dry-run.yaml"


def test_status_in_80_columns_fits_every_line_and_numbers_the_queue_as_its_legend_says(dry_run):
    out = invoke("status", "--config", dry_run)
    assert all(len(line) <= 80 for line in out), out  # were 85-86 (rows), 101, 109 and 167
    head = next(i for i, line in enumerate(out) if line.split()[:2] == ["#", "workload"])
    rows = [
        line.split() for line in out[head + 1 : out.index(next(x for x in out if x[:2] == "#:"))]
    ]
    assert [r[:2] for r in rows] == [["1", "j13"], ["2", "j18"]]  # waiting, both in line
    legend = " ".join(" ".join(out[head + 1 + len(rows) :]).split())
    assert "#: place in the queue, in the round's order; -: blocked, no place this round" in legend
    for r in rows:  # numbered exactly when not blocked, 1 first, in order
        assert (r[0] == "-") == ("blocked" in r)
    assert [int(r[0]) for r in rows if r[0] != "-"] == list(range(1, len(rows) + 1))
    assert not any("…" in " ".join(r[5:7]) for r in rows)  # the decision is never cut
    assert "rounds: 70 from" in legend and out[-1].startswith("  ")  # prose broken at spaces
    piped = invoke("status", "--config", dry_run, columns=None)
    assert any(line.startswith("rounds: 70 from") and len(line) > 80 for line in piped)
    assert "nlp 0.01 > tulu 0.00" in piped[3]  # in a pipe, whole
    # In 80 columns every ratio keeps its node's name (issue 17: `0.01 > 0.00`), here whole:
    # the decision's reason is written shorter (`wait (over_alloc)`) and the columns are no
    # wider than what they show.
    at = out[head].index("ratios")
    ratios = [line[at:] for line in out[head + 1 : head + 1 + len(rows)]]
    # j13's are those the order weighed at its turn (vision's window ratio, 0.02, plus its
    # protected work and the grants ranked ahead over the horizon); j18 is unallocated: the
    # window's.
    assert ratios == ["vision 1.27", "nlp 0.01 > tulu 0.00"]
    assert "wait (over_alloc)" in out[head + 1] and "over_alloc = over_allocation" in legend


def test_status_in_60_columns_leaves_out_its_standing_and_says_so(dry_run):
    out = invoke("status", "--config", dry_run, columns=60)
    assert all(len(line) <= 60 for line in out), out  # said too wide before: 64 and more
    head = next(i for i, line in enumerate(out) if line.split()[:2] == ["#", "workload"])
    assert "standing" not in out[head] and "ratios" in out[head]
    # The decision is never cut (it read `wait (over_allo…`, no legend): rather than cut it
    # by one character the time waiting is left out too, and then it is whole.
    assert "left out at 60 columns: waiting, standing" in out
    assert "1 j13      vision     4 wait (over_allocation) vision 1.27" in out


def ratio_steps(text: str) -> list[tuple[str, str]]:
    """`n… 0.82 > … > r1 0.37` as [("n…", "0.82"), ("…", ""), ("r1", "0.37")]."""
    steps = [step.rpartition(" ") for step in text.split(" > ")]
    return [(name, value) if name else (value, "") for name, _, value in steps]


def names_alike(shown: str, name: str) -> bool:
    """`shown` is `name`, or `name` shortened with an ellipsis (its initial, its middle cut)."""
    if "…" not in shown:
        return shown == name
    head, tail = shown.split("…")
    return name.startswith(head) and name.endswith(tail) and len(shown) <= len(name)


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_status_of_a_deep_tree_names_the_node_of_every_ratio_it_shows(width):
    """Issue 17: in 80 columns the ratios along `alloc generate --levels 4,15,150`'s paths
    read `0.03 > 0.02…`, no names and the leaf's ratio lost. Now names are shortened (the
    nodes above the leaf to their initials, then levels left out as `…`), never dropped from
    their ratios; the leaf's ratio is always there."""
    from alloc.cli.live_cmd import queue_table
    from alloc.generate import GeneratorSpec, generate
    from alloc.round import RoundOptions, solve_round
    from alloc.status import queue_rows

    snapshot = generate(GeneratorSpec(hosts=32, levels=(4, 15, 150), seed=1))
    result = solve_round(snapshot, RoundOptions(solver="greedy"))
    rows = queue_rows(result.context, result.plan)
    funded = [r for r in rows if not r.path.startswith("unfunded")]
    assert len(funded) > 20 and all(r.path.count(" > ") == 2 for r in funded)
    out = lines(*queue_table(rows), width)
    # In 80 columns every column of this queue reaches its least (budget paths kept apart,
    # `n…/t…4/r1`; the decision's reason written shorter, `start (under_alloc)`, never cut;
    # the ratios `… > r12 0.83`), the standing is left out, and the rows fit.
    assert all(len(line) <= width for line in out), out
    at = out[0].index("ratios")
    levels = set()
    for row, line in zip(rows, out[1:], strict=True):
        if row.path.startswith("unfunded"):
            continue
        full, shown = ratio_steps(row.path), ratio_steps(line[at:])
        assert shown[-1][1] == full[-1][1] and names_alike(shown[-1][0], full[-1][0]), line
        named = [step for step in shown if step != ("…", "")]  # `…`: levels left out
        assert (len(named) < len(full)) == (len(named) < len(shown)), line
        left = iter(full)  # each ratio shown is one of the path's, in order, with its name
        assert all(any(v == fv and names_alike(n, fn) for fn, fv in left) for n, v in named), line
        levels.add(len(named))
    assert (levels <= {1, 2, 3}) if width < 120 else levels == {3}, out[:5]
    # In 60 columns it fits by leaving out the standing, the priority and the time waiting,
    # and says so (it said "the table is 64 characters wide" before).
    columns, cells = queue_table(rows)
    said = notes(columns, fit(columns, cells, width), cells)
    assert not any("wider than" in line for line in said), said
    left_out = [line for line in said if line.startswith("left out")]
    expected = {
        60: ["left out at 60 columns: prio, waiting, standing"],
        80: ["left out at 80 columns: standing"],
    }
    assert left_out == expected.get(width, [])
    decision = out[0].index("this round")
    assert not any("…" in line[decision : decision + 19] for line in out)  # never cut


@pytest.fixture(scope="module")
def lab16(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("lab16")
    lab, plan = folder / "lab16.yaml", folder / "plan16.json"
    invoke("generate", "--hosts", "16", "-o", lab)
    invoke("solve", lab, "-o", plan)
    return lab, plan


@pytest.mark.parametrize("width", [80, 60])
def test_queue_of_a_generated_lab_keeps_budgets_apart_and_reasons_readable(lab16, width):
    lab, plan = lab16
    wide = invoke("queue", lab, "--plan", plan, columns=None)  # a pipe: nothing shortened
    n = len(wide) - 2  # the header and the footer on one line
    out = invoke("queue", lab, "--plan", plan, columns=width)
    # at 60 the rows were 65 characters, a reason cut to `under_a…` the legend promised as
    # `under_alloc`: now MINRUN is left out, and said so
    assert all(len(line) <= width for line in out), out
    assert ("left out at 60 columns: MINRUN" in " ".join(out)) == (width == 60)
    assert not any("…" in line.split()[-1] for line in out[1 : n + 1])  # codes never cut
    full = {line.split()[0]: line.split()[2] for line in wide[1 : n + 1]}
    shown = {line.split()[0]: line.split()[2] for line in out[1 : n + 1]}
    assert full.keys() == shown.keys() and any("…" in b for b in shown.values())
    # Different budgets never read alike (science/team3/r12 and robotics/team2/r12 both read
    # `…/t…/r12` before), and here each keeps its team and leaf whole.
    assert len(set(shown.values())) == len(set(full.values()))
    if width == 80:
        assert all(b.split("/")[-2:] == full[w].split("/")[-2:] for w, b in shown.items())
    legend, code_of = " ".join(" ".join(out[n + 1 :]).split()), {v: k for k, v in REASONS.items()}
    for line in out[1 : n + 1]:  # each reason whole, or written shorter as the legend says
        reason = line.split()[-1]
        assert reason in set(Reason) or f"{reason} = {code_of[reason]}" in legend, line


def test_paths_keep_the_number_a_node_ends_in_and_never_read_alike():
    paths = ["vision/team3/r34", "robotics/team1/r34", "science/team3/r34", "nlp/team2/r34"]
    assert shorten_path(paths[0], 11) == "v…/t…3/r34"
    column = Column("budget", shorten=shorten_path, stages=((1, 1),), distinct=True)
    for width in range(4, 20):
        shown = lines([column], [[p] for p in paths], width)[1:]
        assert len(set(shown)) == len(paths), (width, shown)


@pytest.mark.parametrize(
    ("width", "shown"),
    [
        (40, "robotics 0.01 > team2 0.00 > r13 0.40"),
        (30, "r… 0.01 > t…2 0.00 > r13 0.40"),
        (25, "r… 0.01 > … > r13 0.40"),
        (14, "… > r13 0.40"),
        (12, "… > r13 0.40"),
    ],
)
def test_ratios_along_a_path_keep_their_names_shortened(width, shown):
    from alloc.cli.shorten import shorten_ratios

    assert shorten_ratios("robotics 0.01 > team2 0.00 > r13 0.40", width) == shown


def test_a_leaf_name_in_the_ratios_is_cut_in_the_middle_only_where_no_other_can_be():
    from alloc.cli.shorten import ratios_all_levels, shorten_ratios

    assert shorten_ratios("nlp 0.01 > tulu 0.00", 19) == "n… 0.01 > tulu 0.00"
    assert shorten_ratios("nlp 0.01 > tulu 0.00", 18) == "n… 0.01 > t…u 0.00"
    assert ratios_all_levels("nlp 0.01 > tulu 0.00") == 18
    assert shorten_ratios("nlp 0.01 > tulu 0.00", 17) == "… > tulu 0.00"
    assert shorten_ratios("vision 0.02", 10) == "vi…on 0.02"
    assert shorten_ratios("unfunded: p has a share of 0%", 12) == "unfunded: p…"


def test_a_path_too_long_for_its_initials_leaves_out_its_top_nodes():
    assert shorten_path("vision/team2/r7", 9) == "v…/t…2/r7"
    assert shorten_path("vision/team2/r7", 8) == "…/t…2/r7"
    assert shorten_path("vision/team2/r7", 6) == "…/r7"  # was `……2/r7`
    assert shorten_path("nlp/alice", 4) == "…ice"


def test_a_column_whose_cells_come_out_narrower_frees_the_rest_before_the_next_stage():
    # The reason written shorter takes 17 of the 19 its stage left it: the 2 left over go to
    # the path, which then need not be cut.
    reason = Column("reason", codes=REASONS, stages=((1, 19),))
    path = Column("budget", shorten=shorten_path, stages=((2, 4),))
    rows = [["wait (over_allocation)", "nlp/tulu"]]
    assert fit([reason, path], rows, 26).widths == [17, 8]


def test_codes_are_written_shorter_before_they_are_cut():
    column = Column("reason", shorten=shorten_path, codes=REASONS)
    assert column.cut("wait (over_allocation)", 17) == "wait (over_alloc)"
    assert column.cut("unallocated_displaced", 9) == "displaced"


@pytest.mark.parametrize(
    "text, shorter",
    [
        ("13 h 2 min", "13 h+"),
        ("9 h 30 min", "9 h+"),
        ("3 h 32 min", "3 h+"),  # was `4 h`: longer than it waited (walkthrough, whatif)
        ("1 d 19 h", "1 d+"),
        ("1,234 d 3 h", "1,234 d+"),
        ("52 min", "52 min"),
        ("45 s", "45 s"),
        ("-", "-"),
    ],
)
def test_a_time_waiting_narrowed_keeps_its_largest_unit_never_more_than_it_is(text, shorter):
    assert shorten_duration(text, 4) == shorter


def test_the_legend_promises_a_code_only_where_it_is_shown_whole():
    column = Column("reason", shorten=shorten_end, codes=REASONS)
    rows = [["under_allocation"]]
    layout = Layout([8], " ")  # narrower than the code written shorter: cut
    assert abbreviations([column], layout, rows) == ""
    assert abbreviations([column], Layout([11], " "), rows) == "under_alloc = under_allocation"


def test_a_table_too_wide_leaves_out_its_least_useful_columns_and_says_so():
    columns = [
        Column("name"),
        Column("kept", right=True),
        Column("spare", right=True, drop=1),
        Column("first", right=True, drop=2),
    ]
    rows = [["a-long-name", "12345", "67890", "13579"]]
    layout = fit(columns, rows, 20)
    assert layout.dropped == {2, 3}  # `first` (drop 2) did not make room enough
    assert all(len(line) <= 20 for line in lines(columns, rows, 20))
    assert notes(columns, layout, rows) == ["left out at 20 columns: spare, first"]
    # none to leave out: the table says it is too wide rather than overflow silently
    layout = fit(columns[:2], [rows[0][:2]], 10)
    assert notes(columns[:2], layout, [rows[0][:2]]) == [
        "the table is 17 characters wide, wider than the 10 columns given (COLUMNS)"
    ]


@pytest.mark.parametrize("width", [80, 60])
def test_whatif_names_each_run_whole_and_alike_in_both_tables(tmp_path, width):
    from test_report import make_run

    from alloc.cli.render_whatif import print_comparison
    from alloc.report.compare import compare

    labels = ["base/greedy", "base/fifo", "science-up/greedy", "science-up/fifo"]
    runs = [(label, make_run(tmp_path / label.replace("/", "-"))) for label in labels]
    screen = io.StringIO()
    console = Console(file=screen, width=width, color_system=None)
    print_comparison(console, compare(runs), [], None, tmp_path, teams=True)
    out = screen.getvalue().splitlines()
    assert all(len(line) <= width for line in out), out  # were 62 and 71 at 60
    first = [line.split()[0] for line in out if line.split()[:1] and line.split()[0] in labels]
    indented = [line.split()[0] for line in out if line.startswith("  ") and "/" in line]
    assert set(first) == set(labels)  # `bas…eedy` and `scienc…p/greedy` before
    assert set(labels) <= set(indented)

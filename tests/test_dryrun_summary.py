"""The dry run's summary says each team's delivered over owed in 80 columns: every team on one
line when they fit; else the top-level nodes, the lowest teams and where the rest is (a
lab's 169 budget nodes made one line of 4,000 characters); `--wide`: every budget node, a
line each (alloc.controller.dryrun.delivered_over_owed_lines)."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.controller.dryrun import delivered_over_owed_lines
from alloc.domain import BudgetNode, BudgetTree


def lab(programs: int, teams: int, people: int) -> BudgetTree:
    """programs -> teams -> people, shares even: the shape `alloc generate` gives a lab."""

    def level(prefix: str, n: int, below: tuple[BudgetNode, ...] = ()) -> tuple[BudgetNode, ...]:
        return tuple(BudgetNode(f"{prefix}{i}", 1 / n, (), below) for i in range(1, n + 1))

    return BudgetTree(
        BudgetNode("lab", 1.0, (), level("p", programs, level("team", teams, level("r", people))))
    )


def ratios_of(tree: BudgetTree, ratio: float = 1.0) -> dict[str, float]:
    return {p: ratio for p in tree.paths() if p}


def test_teams_that_fit_one_line_are_all_said_on_it():
    tree = lab(1, 1, 3)
    ratios = ratios_of(tree) | {"p1/team1/r2": 0.5, "p1/team1/r3": math.nan}
    assert delivered_over_owed_lines(ratios, tree) == [
        "delivered/owed: p1/team1/r1 100.0%, p1/team1/r2 50.0%, p1/team1/r3 -",
        "(-: owed nothing in the window, so nothing to deliver)",
    ]


def test_a_run_too_short_to_owe_anything_says_so_rather_than_a_dash_per_team():
    """`--rounds 5` of tutorial 4 once ended `delivered/owed: nlp/olmo -, nlp/tulu -, vision -`."""
    tree = lab(1, 1, 3)
    assert delivered_over_owed_lines(ratios_of(tree, math.nan), tree) == [
        "delivered/owed: none yet, no team was owed anything in the window"
    ]


def test_a_large_tree_is_summed_up_in_80_columns():
    tree = lab(4, 5, 8)  # 4 + 20 + 160 = 184 nodes, 160 teams
    assert len([p for p in tree.paths() if p]) == 184
    ratios = ratios_of(tree) | {
        "p1": 0.932,
        "p2/team3/r6": math.nan,
        "p2/team3/r8": 0.25,
        "p3/team1/r2": 0.0,
        "p4/team5/r1": 0.0,
        "p1/team2/r7": 0.411,
    }
    lines = delivered_over_owed_lines(ratios, tree)
    assert lines == [
        "delivered/owed: p1 93.2%, p2 100.0%, p3 100.0%, p4 100.0%",
        "lowest: p3/team1/r2 0.0%, p4/team5/r1 0.0%, p2/team3/r8 25.0%, p1/team2/r7 41.1%",
        "(160 teams, 1 owed nothing: every budget node with --wide, or on /metrics)",
    ]
    assert all(len(line) <= 80 for line in lines), lines


def test_many_top_level_nodes_say_how_many_are_left_out():
    tree = lab(40, 1, 1)
    lines = delivered_over_owed_lines(ratios_of(tree, 0.5), tree)
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("delivered/owed: p1 50.0%, p2 50.0%, ")
    assert lines[0].endswith(" more")
    assert lines[1].startswith("lowest: p1/team1/r1 50.0%, p2/team1/r1 50.0%")  # ties by name


def test_teams_owed_nothing_are_not_the_lowest():
    tree = lab(4, 5, 8)
    lines = delivered_over_owed_lines(ratios_of(tree, math.nan) | {"p4/team5/r8": 1.0}, tree)
    assert lines[1:] == [
        "lowest: p4/team5/r8 100.0%",
        "(160 teams, 159 owed nothing: every budget node with --wide, or on /metrics)",
    ]


def test_wide_lists_every_budget_node_in_the_tree_s_order():
    tree = lab(2, 2, 10)
    lines = delivered_over_owed_lines(ratios_of(tree), tree, wide=True)
    assert lines[0] == "delivered/owed of every budget node:"
    assert lines[1:4] == ["  p1 100.0%", "  p1/team1 100.0%", "  p1/team1/r1 100.0%"]
    assert len(lines) == 1 + 2 + 4 + 40


@pytest.mark.parametrize("clock", [[], ["--clock", "wall"]], ids=["default", "wall"])
def test_wide_is_for_a_dry_run(tmp_path, clock):
    config = tmp_path / "c.yaml"
    config.write_text(
        "name: c\nexecutor: sim\ninterval: 5m\nstate: sqlite:///state.db\n"
        "budgets: {name: lab, children: [{name: a, share: 100%}]}\n"
        "sim: {lab: lab.yaml, trace: trace.csv}\n"
    )
    result = CliRunner().invoke(
        app, ["controller", "run", "--config", str(config), *clock, "--wide"]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "error: alloc controller run: --wide: only with --clock simulated"
    ), result.stderr

"""The worst team, as the reports name it: a team is named only when it got less than it was
owed and less than some other team (a new user saw "worst team nlp/team1 100.0%" on a run in
which every team got all it was owed)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_report import _team, make_run

from alloc.cli.render import print_summary
from alloc.cli.render_whatif import overall_rows
from alloc.report import write_report
from alloc.report.compare import compare
from alloc.report.data import load_run
from alloc.report.fmt import worst_team


def teams(*ratios: float | None) -> dict[str, dict[str, Any]]:
    return {f"p/t{i + 1}": _team(100.0 * (r or 0.0), r, 0.0, 0.0, 0) for i, r in enumerate(ratios)}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ratios", "named"),
    [
        pytest.param((0.9, 1.0, 0.95), ("p/t1", 0.9), id="one team lowest: named"),
        pytest.param((1.0, 1.0, 1.0), ("none below 100%", 1.0), id="all at 100%: none"),
        pytest.param((1.0, None), ("none below 100%", 1.0), id="one at 100%, one owed nothing"),
        pytest.param((0.87, 0.87, 0.87), ("all 3 teams tie", 0.87), id="all tie below 100%"),
        pytest.param((0.8, 0.8, 0.95), ("p/t1 and 1 more", 0.8), id="some tie at the lowest"),
        pytest.param((None, None), ("-", None), id="none owed anything"),
    ],
)
def test_the_worst_team_is_named_only_when_it_is_worse_than_it_was_owed_and_than_others(
    tmp_path: Path, ratios: tuple[float | None, ...], named: tuple[str, float | None]
) -> None:
    m = load_run(make_run(tmp_path / "run", teams=teams(*ratios))).metrics
    assert worst_team(m) == named


def summary_lines(m: dict[str, Any]) -> list[str]:
    screen = io.StringIO()
    print_summary(Console(file=screen, width=100, color_system=None), m, Path("out"))
    return [" ".join(line.split()) for line in screen.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("ratios", "shown"),
    [
        ((1.0, 1.0), "worst team none below 100%"),
        ((0.87, 0.87), "worst team all 2 teams tie at 87.00%"),
        ((0.5, 0.87), "worst team p/t1 50.00%"),
    ],
)
def test_simulate_says_when_no_team_is_below_100_percent(tmp_path, ratios, shown):
    run = make_run(tmp_path / "run", teams=teams(*ratios), label="milp")
    assert shown in summary_lines(load_run(run).metrics)


def test_whatif_and_the_reports_say_when_no_team_is_below_100_percent(tmp_path):
    whole = make_run(tmp_path / "whole", teams=teams(1.0, 1.0))
    short = make_run(tmp_path / "short", teams=teams(0.5, 1.0))
    _, rows = overall_rows(compare([("base/greedy", whole), ("science-up/greedy", short)]))
    assert rows[0][2:4] == ["none below 100%", "100.0%"]
    assert rows[1][2:4] == ["p/t1", "50.0%"]
    html = write_report(whole, "all served").read_text(encoding="utf-8")
    assert "no team below 100%" in html and "worst team p/t1" not in html

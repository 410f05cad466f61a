"""The plots of a lab with hundreds of teams (issue: a new user's 16-host lab with 619 budget
nodes printed matplotlib's "constrained_layout not applied" on every simulate, and its
delivered-vs-owed plot was 250 inches tall): they show the teams that matter, say how many
they leave out, and raise no warning."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

from test_report import _team, make_run

from alloc.report import write_comparison, write_plots
from alloc.report.plots import BARS


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels, from the PNG's header."""
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height


def many_teams(n: int, low: float = 0.5) -> dict[str, dict[str, object]]:
    # Team i got 50% .. 100% of what it was owed.
    return {
        f"p{i % 4}/team{i % 15}/r{i}": _team(100.0, low + (1 - low) * i / n, 0.0, 0.0, 0)
        for i in range(n)
    }


def test_the_plots_of_a_lab_with_600_teams_raise_no_warning_and_keep_a_readable_size(tmp_path):
    run = make_run(tmp_path / "run", teams=many_teams(600), hours=24)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        paths = write_plots(run)
    sizes = {p.name: png_size(p) for p in paths}
    # At most BARS teams of bars (0.42 inch each, at 110 dpi), not one per team.
    assert sizes["delivered_vs_owed.png"][1] <= (0.42 * BARS + 1.6) * 110 + 1
    others = [height for name, (_, height) in sizes.items() if name != "delivered_vs_owed.png"]
    assert max(others) <= 600


def test_a_comparison_of_runs_with_600_teams_raises_no_warning(tmp_path):
    runs = [
        ("base/greedy", make_run(tmp_path / "a", teams=many_teams(600), hours=24)),
        ("alt/greedy", make_run(tmp_path / "b", teams=many_teams(600, low=0.7), hours=24)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_comparison(tmp_path / "out", runs)
    _, height = png_size(tmp_path / "out" / "comparison.png")
    assert height <= (BARS * (0.2 + 0.16 * 2) + 3.6) * 110 + 1

"""alloc.report: plots, report.html and what-if comparisons from hand-made output folders."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from alloc.cli.render import print_summary
from alloc.report import comparison_table, write_comparison, write_plots, write_report
from alloc.report.data import load_run
from alloc.report.plots import PLOTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TEAMS = ("nlp/olmo", "<b>x</b>", "ml$ops$")
CREDIT = "Derived from the Microsoft Philly trace (CC BY 4.0), ATC'19 <test>"


def _team(delivered: float, ratio: float, p50: float, p90: float, preempt: int) -> dict[str, Any]:
    return {
        "owed_gpu_hours": 100.0,
        "delivered_gpu_hours": delivered,
        "delivered_over_owed": ratio,
        "wait_p50_s": p50,
        "wait_p90_s": p90,
        "preemptions": preempt,
    }


def _csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def make_run(
    folder: Path,
    teams: dict[str, dict[str, Any]] | None = None,
    hours: int = 3,
    jobs: int = 6,
    **extra: Any,
) -> Path:
    """An output folder as `alloc.sim.output.write_run` writes it."""
    folder.mkdir(parents=True)
    if teams is None:
        teams = {
            t: _team(90.0 + 10 * i, 0.8 + 0.1 * i, 30.0 * i, 600.0 * i, i)
            for i, t in enumerate(TEAMS)
        }
    owed = [kv for kv in teams.items() if kv[1]["delivered_over_owed"] is not None]
    worst = min(owed, key=lambda kv: kv[1]["delivered_over_owed"], default=None)
    counts = {"debug": jobs // 2, "small": jobs - jobs // 2, "large": 0, "unallocated": 0}
    metrics = {
        "policy": "milp",
        "seed": 1,
        "days": hours / 24,
        "rounds": 12,
        "skipped_rounds": 2,
        "wall_seconds": 0.5,
        "availability": 0.97,
        "occupancy": 0.95,
        "allocated_occupancy": 0.8,
        "unallocated_occupancy": 0.15,
        "occupancy_while_queued": 0.99,
        "delivered_over_owed": 0.9,
        "worst_team": {"budget": worst[0], "delivered_over_owed": worst[1]["delivered_over_owed"]}
        if worst
        else None,
        "teams": teams,
        "wait_s": {
            k: {"p50": 60.0 * bool(n), "p90": 600.0 * bool(n), "max": 3600.0 * bool(n), "count": n}
            for k, n in counts.items()
        },
        "preemptions": 4,
        "preempted_gpu_hours_lost": 12.5,
        "drains_completed": 1,
        "drain_hours_p50": 2.0,
        "utilization": None,
        "invariant_violations": 0,
        "jobs": {"submitted": jobs, "completed": jobs - 1, "running_at_end": 1, "queued_at_end": 0},
        **extra,
    }
    (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    _csv(
        folder / "timeline.csv",
        [
            {
                "hour": h,
                "installed": 64.0,
                "ready": 60.0,
                "allocated": 40.0 + h,
                "unallocated": 10.0,
                "idle": 10.0 - h,
                "unavailable": 4.0,
                "queued": 30.0 - 5 * h,
            }
            for h in range(hours)
        ],
    )
    _csv(
        folder / "teams.csv",
        [
            {
                "hour": h,
                "team": t,
                "owed": 10.0,
                "delivered": 9.0 + i,
                "demand": 12.0,
                "ratio": 0.8 + 0.1 * i + 0.01 * h,
            }
            for h in range(hours)
            for i, t in enumerate(teams)
        ],
    )
    _csv(
        folder / "jobs.csv",
        [
            {
                "id": f"j{k}",
                "team": TEAMS[k % len(TEAMS)],
                "class": "debug" if k < jobs // 2 else "small",
                "kind": "",
                "gpus": 8,
                "submitted_s": 100.0 * k,
                "first_start_s": 100.0 * k + 10 ** (k % 5),
                "end_s": "",
                "wait_s": float(10 ** (k % 5)),
                "started": k != jobs - 1,
                "preemptions": 0,
                "lost_gpu_hours": 0.0,
                "state": "running",
            }
            for k in range(jobs)
        ],
    )
    _csv(
        folder / "rounds.csv",
        [
            {
                "t_s": 300.0 * k,
                "seconds": 0.01,
                "status": "optimal",
                "violations": 0,
                "starts": 1,
                "preempts": 0,
            }
            for k in range(12)
        ],
    )
    return folder


def empty_run(folder: Path) -> Path:
    """A run with nothing in it: no teams, no hours, no jobs (the CSVs are empty files)."""
    return make_run(folder, teams={}, hours=0, jobs=0)


def assert_png(path: Path, min_bytes: int = 4000) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    assert len(data) > min_bytes, (path, len(data))


def test_write_plots_draws_the_four_pngs(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    paths = write_plots(run)
    assert [p.name for p in paths] == list(PLOTS)
    for p in paths:
        assert p.parent == run
        assert_png(p, 15000)


@pytest.mark.parametrize("kind", ["empty", "one-hour"])
def test_write_plots_handles_empty_and_tiny_runs(tmp_path: Path, kind: str) -> None:
    if kind == "empty":
        run = empty_run(tmp_path / "run")
        assert (run / "jobs.csv").read_text() == ""
    else:
        run = make_run(tmp_path / "run", hours=1, jobs=1)
    for p in write_plots(run):
        assert_png(p)


def test_write_plots_needs_metrics(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="metrics.json"):
        write_plots(tmp_path)


def _images(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


def test_report_is_self_contained_and_escaped(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    path = write_report(run, "Philly <replay> & co", credit=CREDIT)
    assert path == run / "report.html"
    html = path.read_text(encoding="utf-8")
    assert "Philly &lt;replay&gt; &amp; co" in html
    assert "<replay>" not in html
    assert html.count("Microsoft Philly trace (CC BY 4.0), ATC&#x27;19 &lt;test&gt;") == 2
    assert "nlp/olmo" in html and "ml$ops$" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    images = _images(html)
    assert len(images) == 4 and all(i[:8] == PNG_MAGIC for i in images)
    assert not re.search(r'(src|href)="(?!data:)', html)  # no external assets
    assert "not in the trace" in html  # utilization is null
    for text in ("97.0%", "95.0%", "80.0%", "15.0%", "90.0%", "12.5", "optimal 12"):
        assert text in html


def test_report_shows_the_window_figure_and_the_hourly_one_beside_it(tmp_path: Path) -> None:
    teams = {
        "a": _team(100.0, 0.95, 60.0, 600.0, 0) | {"delivered_over_owed_hourly": 0.81},
        "b": _team(90.0, 0.9, 60.0, 600.0, 0) | {"delivered_over_owed_hourly": 0.85},
    }
    run = make_run(
        tmp_path / "run",
        teams=teams,
        delivered_over_owed_hourly=0.83,
        worst_team_hourly={"budget": "a", "delivered_over_owed_hourly": 0.81},
    )
    html = write_report(run, "synthetic").read_text(encoding="utf-8")
    # Over the window b is the worst team (90%); hour by hour a is (81%).
    assert "worst team b at 90.0%" in html
    assert "impact: hour by hour" in html and "worst team a at 81.0%" in html
    assert "83.0%" in html


def test_report_credit_recorded_by_the_run_and_none(tmp_path: Path) -> None:
    recorded = make_run(tmp_path / "a", credit="Derived from ITP <x>", source="itp")
    html = write_report(recorded, "itp").read_text(encoding="utf-8")
    assert html.count("Derived from ITP &lt;x&gt;") == 2
    plain = write_report(make_run(tmp_path / "b"), "synthetic").read_text(encoding="utf-8")
    assert 'class="credit"' not in plain


def test_report_of_an_empty_run(tmp_path: Path) -> None:
    html = write_report(empty_run(tmp_path / "run"), "empty").read_text(encoding="utf-8")
    assert len(_images(html)) == 4
    assert "No funded teams." in html


def _runs(tmp_path: Path) -> list[tuple[str, Path]]:
    base = make_run(
        tmp_path / "base",
        teams={"a": _team(100.0, 0.8, 60.0, 600.0, 3), "b": _team(50.0, 1.0, 0.0, 10.0, 0)},
    )
    alt = make_run(
        tmp_path / "alt",
        teams={"a": _team(120.0, 0.9, 30.0, 900.0, 1), "<b>x</b>": _team(5.0, 0.5, 1.0, 2.0, 7)},
    )
    return [("baseline", base), ("alt <i>", alt), ("empty", empty_run(tmp_path / "empty"))]


def test_comparison_csv_has_the_deltas(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    write_comparison(out, _runs(tmp_path))
    with (out / "comparison.csv").open(newline="", encoding="utf-8") as f:
        rows = {(r["team"], r["run"]): r for r in csv.DictReader(f)}
    assert len(rows) == 3 * 3  # teams a, b, <b>x</b> x three runs
    a = rows[("a", "alt <i>")]
    assert (a["delivered_gpu_hours"], a["delta_delivered_gpu_hours"]) == ("120.0", "20.0")
    assert float(a["delta_delivered_over_owed"]) == pytest.approx(0.1)
    assert (a["delta_wait_p50_s"], a["delta_wait_p90_s"]) == ("-30.0", "300.0")
    assert (a["preemptions"], a["delta_preemptions"]) == ("1", "-2")
    base = rows[("a", "baseline")]
    assert [base[f"delta_{k}"] for k in ("delivered_gpu_hours", "preemptions")] == ["0.0", "0"]
    # a team missing from a run, or from the baseline, has no numbers or no deltas
    assert rows[("b", "alt <i>")]["delivered_gpu_hours"] == ""
    new = rows[("<b>x</b>", "alt <i>")]
    assert new["delivered_gpu_hours"] == "5.0" and new["delta_delivered_gpu_hours"] == ""
    assert rows[("a", "empty")]["delta_preemptions"] == ""


def test_comparison_json_png_html(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    html_path = write_comparison(out, _runs(tmp_path), credit=CREDIT)
    assert html_path == out / "comparison.html"
    data = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert data["baseline"] == "baseline" and data["credit"] == CREDIT
    assert [r["label"] for r in data["runs"]] == ["baseline", "alt <i>", "empty"]
    assert data["runs"][1]["delta"]["preemptions"] == 0
    assert data["runs"][2]["overall"]["wait_debug_p50_s"] is None  # no jobs, no quantile
    assert data["teams"]["a"]["alt <i>"]["delta"]["preemptions"] == -2
    assert "empty" not in data["teams"]["a"]
    assert_png(out / "comparison.png", 15000)
    html = html_path.read_text(encoding="utf-8")
    assert html.count("ATC&#x27;19 &lt;test&gt;") == 2
    assert "alt &lt;i&gt;" in html and "<i>" not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert 'class="good"' in html and 'class="bad"' in html
    assert len(_images(html)) == 1
    # The worst team differs between runs: each cell names it.
    assert "a: 80.0%" in html and "&lt;b&gt;x&lt;/b&gt;: 50.0%" in html


def test_comparison_table_rows(tmp_path: Path) -> None:
    rows = comparison_table(_runs(tmp_path)[:2])
    assert rows[0] == [
        "team",
        "run",
        "delivered",
        "owed",
        "d/o",
        "wait p50",
        "wait p90",
        "preempt.",
        "against baseline",
    ]
    assert all(len(r) == 9 for r in rows)
    team = ""
    by: dict[tuple[str, str], list[str]] = {}
    for r in rows[1:]:
        team = r[0] or team  # a team is named on its first run's row
        by[team, r[1]] = r[2:]
    assert set(by) == {(t, run) for t in ("a", "b", "<b>x</b>") for run in ("baseline", "alt <i>")}
    assert by["a", "baseline"] == ["100 h", "100 h", "80.0%", "1 min", "10 min", "3", ""]
    assert by["a", "alt <i>"] == [
        "120 h",
        "100 h",
        "90.0%",
        "30 s",
        "15 min",
        "1",
        "+20 h / +10.0 pp / -30 s / +5 min / -2",
    ]
    assert by["b", "alt <i>"] == ["-"] * 6 + ["-"]


def test_a_team_without_jobs_shows_no_wait_not_zero(tmp_path: Path) -> None:
    # metrics.json has null waits for a team that had no job: the comparison's table, CSV and
    # JSON say "no wait" ("-", empty, null), not 0 s, and its wait deltas are empty too.
    idle = _team(0.0, 1.0, 0.0, 0.0, 0) | {"wait_p50_s": None, "wait_p90_s": None}
    base = make_run(tmp_path / "base", teams={"a": _team(100.0, 0.8, 60.0, 600.0, 3), "q": idle})
    alt = make_run(tmp_path / "alt", teams={"a": _team(100.0, 0.8, 60.0, 600.0, 3), "q": idle})
    runs = [("base", base), ("alt", alt)]
    rows = {(r[0], r[1]): r[2:] for r in comparison_table(runs)[1:] if r[0]}
    assert rows["q", "base"][3:5] == ["-", "-"]
    out = tmp_path / "cmp"
    write_comparison(out, runs)
    with (out / "comparison.csv").open(newline="", encoding="utf-8") as f:
        q = {r["run"]: r for r in csv.DictReader(f) if r["team"] == "q"}
    assert (q["alt"]["wait_p50_s"], q["alt"]["delta_wait_p90_s"]) == ("", "")
    data = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert data["teams"]["q"]["alt"]["wait_p50_s"] is None
    assert data["teams"]["q"]["alt"]["delta"]["wait_p90_s"] is None
    table = comparison_table(runs)
    alt_row = next(r for r in table if r[1] == "alt" and r[4] == "100.0%")
    assert alt_row[-1] == "0 / 0 / - / - / 0"


def test_comparison_rejects_bad_runs(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    with pytest.raises(ValueError, match="distinct"):
        comparison_table([("x", run), ("x", run)])
    with pytest.raises(ValueError, match="no runs"):
        write_comparison(tmp_path / "out", [])


def test_durations_that_round_to_zero_have_no_sign() -> None:
    from alloc.report.fmt import duration, signed_duration

    assert (duration(-0.3), signed_duration(-0.3), signed_duration(0.2)) == ("0 s", "0", "0")
    assert (duration(-45), signed_duration(-45)) == ("-45 s", "-45 s")
    assert signed_duration(90) == "+2 min"


def test_each_run_can_have_its_own_baseline(tmp_path: Path) -> None:
    runs = _runs(tmp_path)[:2] + [
        ("alt2", make_run(tmp_path / "alt2", teams={"a": _team(130.0, 0.95, 30.0, 900.0, 1)}))
    ]
    rows = comparison_table(runs, baselines=[0, 0, 1])
    assert rows[0][-1] == "against its baseline"
    team, by = "", {}
    for r in rows[1:]:
        team = r[0] or team  # a team is named on its first run's row
        if team == "a":
            by[r[1]] = r[-1]
    assert by["alt2"].startswith("alt <i>: +10 h / +5.0 pp")
    assert by["alt <i>"].startswith("baseline: +20 h")
    with pytest.raises(ValueError, match="itself or an earlier run"):
        comparison_table(runs, baselines=[0, 2, 0])


def test_a_team_owed_nothing_reads_as_such_in_every_report(tmp_path: Path) -> None:
    # Team b is owed 100 GPU-hours in the baseline and nothing in the other run (a null
    # ratio): report.html shows "-", the comparison's delta "-" (not 0), and every plot draws.
    nothing = _team(0.0, 1.0, 0.0, 0.0, 0) | {"owed_gpu_hours": 0.0, "delivered_over_owed": None}
    base = make_run(
        tmp_path / "base",
        teams={"a": _team(100.0, 0.8, 60.0, 600.0, 3), "b": _team(50.0, 0.5, 0.0, 10.0, 0)},
    )
    alt = make_run(tmp_path / "alt", teams={"a": _team(100.0, 0.8, 60.0, 600.0, 3), "b": nothing})
    write_plots(alt)
    report = write_report(alt, "owed nothing")
    html = report.read_text(encoding="utf-8")
    assert html.count("100.0%") == 0  # b is not shown as fully served
    rows = comparison_table([("base", base), ("alt", alt)])
    b_alt = next(r for r in rows if r[1] == "alt" and r[2] == "0 h")
    assert b_alt[4] == "-" and b_alt[-1].split(" / ")[1] == "-"
    write_comparison(tmp_path / "cmp", [("base", base), ("alt", alt)])
    assert_png(tmp_path / "cmp" / "comparison.png", 15000)


def test_a_partial_run_is_compared_as_far_as_it_went(tmp_path: Path) -> None:
    # base ran its 3 hours; alt was stopped (Ctrl-C) after 1 of its 3; "never" did not begin.
    # alt's totals cover a third of base's time: no delta is taken against base, and every
    # output says what was partial and what did not run.
    base = make_run(tmp_path / "base", teams={"a": _team(100.0, 0.8, 60.0, 600.0, 3)})
    alt = make_run(
        tmp_path / "alt",
        teams={"a": _team(30.0, 0.9, 30.0, 900.0, 1)},
        hours=1,
        days=3 / 24,
        partial=True,
        simulated_days=1 / 24,
        stopped_at="2026-11-30T13:00:00Z",
    )
    out = tmp_path / "cmp"
    write_comparison(out, [("base", base), ("alt", alt)], not_run=["never"])
    data = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert (data["partial"], data["not_run"]) == (True, ["never"])
    by = {r["label"]: r for r in data["runs"]}
    assert (by["base"]["partial"], by["alt"]["partial"]) == (False, True)
    assert by["alt"]["simulated_days"] == pytest.approx(1 / 24)
    assert by["alt"]["stopped_at"] == "2026-11-30T13:00:00Z"
    assert set(by["alt"]["delta"].values()) == {None}
    assert data["teams"]["a"]["alt"]["delta"] is None
    with (out / "comparison.csv").open(newline="", encoding="utf-8") as f:
        alt_a = next(r for r in csv.DictReader(f) if r["run"] == "alt")
    assert alt_a["delivered_gpu_hours"] == "30.0" and alt_a["delta_delivered_gpu_hours"] == ""
    html = (out / "comparison.html").read_text(encoding="utf-8")
    banner = re.search(r'<p class="partial">(.*?)</p>', html)
    assert banner is not None
    assert "alt stopped after 1 h of 3 h simulated (33%)" in banner.group(1)
    assert "Not run: never" in banner.group(1)
    rows = comparison_table([("base", base), ("alt", alt)])
    assert rows[2][1] == "alt" and rows[2][-1] == "-"


def test_a_whole_comparison_says_nothing_of_partial_runs(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    write_comparison(out, _runs(tmp_path)[:2])
    data = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert (data["partial"], data["not_run"]) == (False, [])
    assert 'class="partial"' not in (out / "comparison.html").read_text(encoding="utf-8")


def test_a_partial_runs_report_shows_where_it_stopped(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        hours=2,
        days=7.0,
        partial=True,
        simulated_days=2 / 24,
        stopped_at="2026-11-30T14:00:00Z",
    )
    html = write_report(run, "partial").read_text(encoding="utf-8")
    assert (
        '<p class="partial">partial: stopped after 2 h of 7 d simulated (1%), at '
        "2026-11-30T14:00:00Z; the figures cover the time simulated</p>"
    ) in html


def test_report_counts_rounds_in_the_terminals_words(tmp_path: Path) -> None:
    # The report said "rounds (skipped as quiet)" where the terminal says "full rounds".
    run = make_run(tmp_path / "run", event_passes=40, skipped_passes=3, label="milp")
    html = write_report(run, "synthetic").read_text(encoding="utf-8")
    screen = io.StringIO()
    print_summary(Console(file=screen, width=100, color_system=None), load_run(run).metrics, run)
    terminal = [" ".join(line.split()) for line in screen.getvalue().splitlines()]
    for label, value in (
        ("full rounds (skipped as quiet)", "12 (2)"),
        ("event passes (skipped as quiet)", "40 (3)"),
    ):
        assert f"{label} {value}" in terminal
        assert f'<td class="l">{label}</td><td>{value}</td>' in html
    assert ">rounds (skipped as quiet)<" not in html

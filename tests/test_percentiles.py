"""One percentile definition (issue 17): metrics.json, the terminal summary, report.html's
tables and the legend of its wait plot all give the nearest-rank p50 and p90
(`alloc.metrics.quantiles`), so the plot and the tables of one run never disagree (they did:
the plot took the value above the median and the 90th value from the top of the rank)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import host, instance
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.metrics.quantiles import nearest_rank, summary
from alloc.readable import duration
from alloc.report.data import load_run
from alloc.report.plots import wait_label

H = 3600.0


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        pytest.param([5.0], 0.5, 5.0, id="one value is every percentile"),
        pytest.param([1.0, 2.0], 0.5, 1.0, id="the median of two is the lower one"),
        pytest.param([float(v) for v in range(1, 11)], 0.5, 5.0, id="p50 of 1..10 is 5"),
        pytest.param([float(v) for v in range(1, 11)], 0.9, 9.0, id="p90 of 1..10 is 9"),
        pytest.param([float(v) for v in range(1, 12)], 0.9, 10.0, id="p90 of 1..11 is 10"),
        pytest.param([3.0, 7.0, 9.0], 1.0, 9.0, id="p100 is the largest"),
    ],
)
def test_the_nearest_rank_is_the_ceil_p_n_th_smallest(values, p, expected):
    assert nearest_rank(values, p) == expected


def test_the_summary_of_no_values_has_no_percentiles():
    assert summary([]) == {"p50": None, "p90": None, "max": None, "count": 0}
    assert summary([3.0, 1.0, 2.0]) == {"p50": 2.0, "p90": 3.0, "max": 3.0, "count": 3}


@pytest.fixture(scope="module")
def queued_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One host of 8 GPUs and ten 8-GPU jobs of one team submitted at once, each running 1 h:
    they start one after the other, so the waits are 0, 1 h, ..., 9 h (small work). Nearest
    rank: p50 = the 5th wait (4 h), p90 = the 9th (8 h); the plot used to say 5 h and 9 h."""
    folder = tmp_path_factory.mktemp("queued")
    data = instance(hosts=[host("h1")])
    data.pop("workloads")
    (folder / "lab.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    rows = "".join(f"j{i},a,8,0,3600,1h,true,0,\n" for i in range(10))
    (folder / "trace.csv").write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n" + rows
    )
    out = folder / "out"
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(folder / "lab.yaml"),
            "--trace",
            str(folder / "trace.csv"),
            "--policy",
            "greedy",
            "--days",
            "0.5",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def test_the_run_waits_are_as_derived_by_hand(queued_run):
    small = json.loads((queued_run / "metrics.json").read_text())["wait_s"]["small"]
    assert small["count"] == 10
    assert small["p50"] == pytest.approx(4 * H, abs=60)
    assert small["p90"] == pytest.approx(8 * H, abs=60)
    assert small["max"] == pytest.approx(9 * H, abs=60)


def test_the_wait_plot_and_every_table_give_the_same_percentiles(queued_run):
    run = load_run(queued_run)
    table = run.metrics["wait_s"]["small"]
    plotted = run.wait_summary("small")
    assert (plotted["p50"], plotted["p90"], plotted["count"]) == (
        table["p50"],
        table["p90"],
        table["count"],
    )
    p50, p90 = duration(table["p50"]), duration(table["p90"])
    assert p50 == "4 h" and p90 == "8 h"
    assert wait_label(run, "small") == f"small (10 jobs; p50 {p50}, p90 {p90})"
    html = (queued_run / "report.html").read_text()
    assert re.search(rf"<td class=\"l\">small</td><td>10</td><td>{p50}</td><td>{p90}</td>", html)
    team = run.metrics["teams"]["a"]
    assert (team["wait_p50_s"], team["wait_p90_s"]) == (table["p50"], table["p90"])


def test_the_plot_counts_the_jobs_that_never_started(tmp_path):
    # jobs.csv writes started as `false` (older runs: `False`); both count.
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.json").write_text("{}")
    (out / "jobs.csv").write_text(
        "id,class,wait_s,started\na,debug,10,true\nb,debug,20,false\nc,debug,30,False\n"
    )
    run = load_run(out)
    assert run.never_started("debug") == 2
    assert wait_label(run, "debug") == "debug (3 jobs, 2 never started; p50 20 s, p90 30 s)"

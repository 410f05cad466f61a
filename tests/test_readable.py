"""Numbers as a person writes them (issue 17): one helper, `alloc.readable`, for counts,
nouns that agree with them and durations, used by every terminal output and report; and the
outputs themselves never say "1 GPUs" or "1.04444 h"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import host, instance, workload
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.readable import count, counted, duration, gpus, hours, number, pct, signed_duration

EXAMPLES = Path(__file__).resolve().parents[1] / "instances" / "examples"
H = 3600.0


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (7, "7"),
        (950, "950"),
        (999, "999"),
        (1000, "1,000"),
        (1024, "1,024"),
        (82247, "82,247"),
        (16.0, "16"),
        (2.5, "2.5"),
    ],
)
def test_counts_take_a_thousands_separator_from_1000_on(n, text):
    assert count(n) == text


@pytest.mark.parametrize(
    ("n", "noun", "plural", "text"),
    [
        (1, "GPU", None, "1 GPU"),
        (8, "GPU", None, "8 GPUs"),
        (0, "job", None, "0 jobs"),
        (1024, "GPU", None, "1,024 GPUs"),
        (1, "leaf", "leaves", "1 leaf"),
        (3, "leaf", "leaves", "3 leaves"),
    ],
)
def test_a_noun_agrees_with_its_count(n, noun, plural, text):
    assert counted(n, noun, plural) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [(8, "8 GPUs"), (1.0, "1 GPU"), (12.8, "12.8 GPUs"), (0.87, "0.9 GPUs"), (12.96, "13 GPUs")],
)
def test_gpus_that_need_not_be_whole_show_one_decimal_when_fractional(n, text):
    assert gpus(n) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(None, "-", id="not measured"),
        pytest.param(0, "0 s", id="nothing"),
        pytest.param(0.4, "0 s", id="under half a second"),
        pytest.param(45, "45 s", id="seconds"),
        pytest.param(59.6, "1 min", id="rounds up into minutes"),
        pytest.param(90, "2 min", id="half a minute rounds up"),
        pytest.param(15 * 60, "15 min", id="minutes"),
        pytest.param(3599.7, "1 h", id="rounds up into hours"),
        pytest.param(3760, "1 h 3 min", id="1.04444 h"),
        pytest.param(5.3 * H, "5 h 18 min", id="5.3 h"),
        pytest.param(24 * H - 10, "1 d", id="rounds up into days"),
        pytest.param(2 * 86400 + 5 * H + 600, "2 d 5 h", id="days and hours"),
        pytest.param(400 * 86400, "400 d", id="many days"),
        pytest.param(2000 * 86400, "2,000 d", id="days have the separator too"),
        pytest.param(-45, "-45 s", id="negative"),
        pytest.param(-0.3, "0 s", id="no minus zero"),
    ],
)
def test_durations_read_in_whole_units(seconds, text):
    assert duration(seconds) == text


def test_the_other_quantities():
    assert hours(2.5) == "2 h 30 min" and hours(None) == "-"
    assert signed_duration(90) == "+2 min" and signed_duration(-0.2) == "0"
    assert number(1234.56, 1) == "1,234.6" and number(None) == "-"
    assert pct(0.953) == "95.3%" and pct(None) == "-"


# --- the outputs ------------------------------------------------------------------------------

# A number then a plural noun that needs the singular, or an hour figure with decimals.
DISAGREES = re.compile(
    r"(?<![\d.,])1 (GPUs|jobs|hosts|decisions|requests|actions|workloads|rows|leaves|tenants|"
    r"nodes|invariants|candidates)\b"
)
LONG_DECIMALS = re.compile(r"\d\.\d{2,} (h|d|min)\b")


def assert_reads_well(text: str) -> None:
    assert not DISAGREES.search(text), DISAGREES.search(text)
    assert not LONG_DECIMALS.search(text), LONG_DECIMALS.search(text)


def run(*args: str | Path):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_solve_and_explain_of_every_example_read_well(path):
    solved = run("solve", path)
    assert solved.exit_code == 0, solved.output
    assert_reads_well(solved.stdout)
    ids = [w["id"] for w in yaml.safe_load(path.read_text()).get("workloads") or []]
    for wid in ids:
        explained = run("explain", path, wid)
        assert explained.exit_code == 0, explained.output
        assert_reads_well(explained.stdout)


def test_a_single_decision_a_single_gpu_and_a_single_job_read_in_the_singular(tmp_path):
    lab = tmp_path / "lab.yaml"
    data = instance(hosts=[host("h1")], workloads=[workload("w", 1, min_runtime="1h")])
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    plan = tmp_path / "plan.json"
    assert run("solve", lab, "-o", plan).exit_code == 0
    checked = run("validate", lab, plan)
    assert f"{plan}: valid (1 decision, every invariant holds)" in checked.stdout
    explained = run("explain", lab, "w")
    assert "1 GPU, minimum runtime 1 h," in explained.stdout
    assert_reads_well(explained.stdout)


def test_the_trace_import_summary_reads_well(tmp_path):
    source = tmp_path / "c.csv"
    source.write_text("job_id,submission_time,duration,num_gpu\na,1000,10000,1\n")
    result = run("trace", "import", "itp", source, "-o", tmp_path / "t.csv", "--tenants", "1")
    assert result.exit_code == 0, result.output
    assert "itp: 1 job imported from" in result.stdout and "(1 row; none dropped)" in result.stdout
    assert "cluster: 1 host x 8 GPUs = 8 GPUs" in result.stdout
    assert "budgets: 1 leaf," in result.stdout and "1 tenant," in result.stdout
    assert_reads_well(result.stdout)


def test_the_simulation_summary_reads_well(tmp_path):
    lab = tmp_path / "lab.yaml"
    data = instance(hosts=[host("h1")])
    data.pop("workloads")
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        "small,a,8,0,3760,1h,true,0,\nhuge,a,64,0,3600,1h,true,0,\n"
    )
    out = tmp_path / "out"
    result = run("simulate", lab, "--trace", trace, "--days", "0.5", "--out", out)
    assert result.exit_code == 0, result.output
    assert (
        "warning: 1 job is larger than every place this lab has: it never starts and is not "
        "counted as demand" in result.stdout
    )
    assert_reads_well(result.stdout)
    assert_reads_well((out / "report.html").read_text())


@pytest.mark.parametrize("where", ["instance", "trace"])
def test_a_minimum_runtime_above_the_maximum_is_told_as_written_not_in_decimal_hours(
    tmp_path, where
):
    # 3,760 s is 1.04444 h: the message says 3760s, as the input may write it.
    data = instance(
        workloads=[workload("w", 1, min_runtime="3760s")] if where == "instance" else [],
        policy={"max_min_runtime": "1h"},
    )
    if where == "trace":
        data.pop("workloads")
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        "j,a,1,0,7200,3760s,true,0,\n"
    )
    if where == "instance":
        result = run("solve", lab)
    else:
        result = run("simulate", lab, "--trace", trace, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "min_runtime: 3760s is above max_min_runtime (1h)" in result.stderr, result.stderr
    assert "1.04444" not in result.stderr


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (0.99995, 1, "99.9%"),  # report.html said 100.0% where the terminal said 99.99%
        (0.99995, 2, "99.99%"),
        (0.999999, 2, "99.99%"),
        (1.0, 1, "100.0%"),
        (0.9994, 1, "99.9%"),
        (0.95349, 2, "95.35%"),  # elsewhere the nearest, as before
    ],
)
def test_a_percentage_never_reads_100_percent_unless_it_is(value, digits, shown):
    assert pct(value, digits) == shown

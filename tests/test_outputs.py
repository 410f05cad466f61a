"""Where outputs go (issue 17): an output into a folder that does not exist is bad input (exit 2,
the option and the missing folder named, nothing made), and a run into an `--out` that holds
an earlier run says, before it starts, which files it replaces and from when."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from conftest import host, instance
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.report.compare import COMPARISON_FILES
from alloc.sim.run import RUN_FILES

HEADER = "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"


def run(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    lab = tmp_path / "lab.yaml"
    data = instance(hosts=[host("h1")])
    data.pop("workloads")
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    trace = tmp_path / "trace.csv"
    trace.write_text(HEADER + "j1,a,8,0,3600,1h,true,0,\n")
    itp = tmp_path / "itp.csv"
    itp.write_text("job_id,submission_time,duration,num_gpu\na,1000,100,4\n")
    return {"lab": lab, "trace": trace, "itp": itp, "missing": tmp_path / "no-such-folder"}


SIM = ["--trace", "{trace}", "--days", "0.05"]


@pytest.mark.parametrize(
    ("args", "option", "what"),
    [
        pytest.param(
            ["solve", "{lab}", "-o", "{missing}/plan.json"], "--output", "write", id="solve -o"
        ),
        pytest.param(
            ["generate", "--hosts", "4", "-o", "{missing}/g.yaml"],
            "--output",
            "write",
            id="generate -o",
        ),
        pytest.param(
            ["trace", "import", "itp", "{itp}", "-o", "{missing}/t.csv"],
            "--output",
            "write",
            id="trace import -o",
        ),
        pytest.param(
            ["trace", "import", "itp", "{itp}", "-o", "{lab}.csv", "--lab", "{missing}/lab.yaml"],
            "--lab",
            "write",
            id="trace import --lab",
        ),
        pytest.param(
            ["simulate", "{lab}", *SIM, "--out", "{missing}/out"],
            "--out",
            "create",
            id="simulate --out",
        ),
        pytest.param(
            ["whatif", "{lab}", *SIM, "--policies", "greedy", "--out", "{missing}/out"],
            "--out",
            "create",
            id="whatif --out",
        ),
    ],
)
def test_an_output_into_a_folder_that_does_not_exist_is_bad_input(files, args, option, what):
    result = run(*(a.format(**files) for a in args))
    assert result.exit_code == 2, result.output
    missing = files["missing"]
    command = " ".join(args[:2] if args[0] == "trace" else args[:1])
    assert re.fullmatch(
        rf"error: alloc {command}: {option}: cannot {what} {re.escape(str(missing))}/\S+: the "
        rf"folder "
        rf"{re.escape(str(missing))} does not exist \(create it first\)\n",
        result.stderr,
    ), result.stderr
    assert not missing.exists()
    assert not Path(f"{files['lab']}.csv").exists()


def test_export_into_a_folder_that_does_not_exist_says_it_in_the_same_words(files):
    missing = files["missing"]
    result = run("export", files["lab"], "--to", "slurm", "-o", missing)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: alloc export: --output: cannot write into {missing}: the folder {missing} "
        "does not exist (create it first)\n"
    )


def test_a_new_output_folder_is_made_in_an_existing_one(files, tmp_path):
    out = tmp_path / "new-run"
    result = run("simulate", files["lab"], *[a.format(**files) for a in SIM], "--out", out)
    assert result.exit_code == 0, result.output
    assert "replacing" not in result.stderr
    assert {p.name for p in out.iterdir()} == set(RUN_FILES)


def test_a_second_simulation_into_one_folder_says_what_it_replaces_and_from_when(files, tmp_path):
    out = tmp_path / "out"
    args = ["simulate", files["lab"], *[a.format(**files) for a in SIM], "--out", out]
    assert run(*args).exit_code == 0
    earlier = datetime(2026, 11, 1, 8, 30, tzinfo=UTC).timestamp()
    for name in RUN_FILES:
        os.utime(out / name, (earlier, earlier))
    (out / "notes.txt").write_text("mine\n")
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == (
        f"replacing {', '.join(RUN_FILES)} in {out}, from the run of 2026-11-01 08:30 UTC"
    )
    assert (out / "notes.txt").read_text() == "mine\n"  # not the run's: left alone
    assert (out / "metrics.json").stat().st_mtime > earlier


def test_a_second_whatif_into_one_folder_names_the_comparison_and_the_runs_it_replaces(
    files, tmp_path
):
    out = tmp_path / "cmp"
    base = ["whatif", files["lab"], *[a.format(**files) for a in SIM], "--out", out]
    assert run(*base, "--policies", "greedy").exit_code == 0
    result = run(*base, "--policies", "greedy,fifo")
    assert result.exit_code == 0, result.output
    line = result.stderr.splitlines()[0]
    assert line.startswith(
        f"replacing {', '.join(COMPARISON_FILES)}, base-greedy/ in {out}, from the run of "
    ), line
    assert "base-fifo" not in line  # new: nothing of it to replace


def test_bad_input_into_a_used_folder_replaces_nothing_and_says_nothing(files, tmp_path):
    out = tmp_path / "out"
    args = ["simulate", files["lab"], "--days", "0.05", "--out", out]
    assert run(*args, "--trace", files["trace"]).exit_code == 0
    before = (out / "metrics.json").read_bytes()
    files["trace"].write_text(HEADER + "j1,a,x,0,3600,1h,true,0,\n")
    result = run(*args, "--trace", files["trace"])
    assert result.exit_code == 2
    assert "replacing" not in result.stderr
    assert (out / "metrics.json").read_bytes() == before


def test_a_run_into_a_folder_of_the_other_kind_of_run_names_what_it_leaves(files, tmp_path):
    # A whatif into a simulate's folder said nothing, and report.html and metrics.json stayed
    # beside the comparison as if they were its own; the same the other way round.
    out = tmp_path / "rep"
    sim = ["simulate", files["lab"], *[a.format(**files) for a in SIM], "--out", out]
    whatif = ["whatif", files["lab"], *[a.format(**files) for a in SIM], "--out", out]
    assert run(*sim).exit_code == 0
    result = run(*whatif, "--policies", "greedy")
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert (
        f"note: {out} also holds {', '.join(RUN_FILES)}, left from an earlier `alloc simulate` "
        "run: not this run's, left as they are" in said
    )
    assert "replacing" not in said  # whatif writes none of them
    assert all((out / name).exists() for name in RUN_FILES)  # left, not removed
    again = run(*sim)
    assert again.exit_code == 0, again.output
    said = " ".join(again.stderr.split())
    assert said.startswith(f"replacing {', '.join(RUN_FILES)} in {out}")
    assert (
        f"note: {out} also holds {', '.join(COMPARISON_FILES)}, base-greedy/, left from an "
        "earlier `alloc whatif` run" in said
    )
    # a folder of one kind of run only: no note
    assert "note:" not in run(*whatif, "--out", tmp_path / "fresh").stderr


def test_a_simulate_into_a_synthetic_whatifs_folder_names_its_trace_csv_too(files, tmp_path):
    # The note named whatif's comparison and runs but not the trace.csv that `whatif
    # --synthetic` wrote beside them; a trace.csv its runs read without whatif writing it
    # (the user's own, given with --trace) is named with a doubt; one that this run reads
    # is not named at all.
    out = tmp_path / "rep"
    whatif = ["whatif", files["lab"], "--days", "0.05", "--policies", "greedy", "--out", out]
    assert run(*whatif, "--synthetic").exit_code == 0
    assert (out / "trace.csv").is_file()
    sim = ["simulate", files["lab"], "--days", "0.05", "--out", out]
    said = " ".join(run(*sim, "--trace", files["trace"]).stderr.split())
    assert (
        f"note: {out} also holds {', '.join(COMPARISON_FILES)}, base-greedy/, trace.csv, left "
        "from an earlier `alloc whatif` run: not this run's, left as they are" in said
    )
    assert "only if" not in said

    own = tmp_path / "own"  # the user's trace.csv in the folder, read by whatif's runs
    own.mkdir()
    (own / "trace.csv").write_text(files["trace"].read_text())
    whatif = ["whatif", files["lab"], "--days", "0.05", "--policies", "greedy", "--out", own]
    assert run(*whatif, "--trace", own / "trace.csv").exit_code == 0
    sim = ["simulate", files["lab"], "--days", "0.05", "--out", own]
    said = " ".join(run(*sim, "--trace", files["trace"]).stderr.split())
    assert (
        "base-greedy/, trace.csv, left from an earlier `alloc whatif` run: not this run's, "
        "left as they are (trace.csv is that run's only if it ran with --synthetic)" in said
    )
    said = " ".join(run(*sim, "--trace", own / "trace.csv").stderr.split())
    assert "base-greedy/, left from an earlier `alloc whatif` run" in said  # its own input

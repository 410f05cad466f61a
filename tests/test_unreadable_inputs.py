"""An input file that cannot be read is bad input (exit 2) named once, with what is wrong with
it (issue 17): not `x.csv: cannot read the file: [Errno 21] Is a directory: 'x.csv'`, and not
an internal error for a plan that is a folder or not UTF-8."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import instance
from typer.testing import CliRunner

from alloc.cli.app import app

HEADER = "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    lab = tmp_path / "lab.yaml"
    data = instance()
    data.pop("workloads")
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    trace = tmp_path / "trace.csv"
    trace.write_text(HEADER + "j1,a,8,0,3600,1h,true,0,\n")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    latin = tmp_path / "latin1.csv"
    latin.write_bytes(
        HEADER.encode() + "j1,a,8,0,3600,1h,true,0,\nj\xe9,a,8,0,60,0,true,0,\n".encode("latin-1")
    )
    return {"lab": lab, "trace": trace, "folder": folder, "latin": latin, "out": tmp_path / "out"}


# (command with {lab}, {trace}, {out} and {bad} for the unreadable file, what it expected)
COMMANDS = [
    pytest.param(
        ["simulate", "{lab}", "--trace", "{bad}", "--days", "0.01", "--out", "{out}"],
        "a CSV file",
        id="simulate --trace",
    ),
    pytest.param(
        [
            "simulate",
            "{lab}",
            "--trace",
            "{trace}",
            "--host-events",
            "{bad}",
            "--days",
            "0.01",
            "--out",
            "{out}",
        ],
        "a CSV file",
        id="simulate --host-events",
    ),
    pytest.param(
        ["simulate", "{bad}", "--trace", "{trace}", "--out", "{out}"],
        "a YAML file",
        id="simulate LAB",
    ),
    pytest.param(
        ["trace", "import", "itp", "{bad}", "-o", "{out}"], "a CSV file", id="trace import itp"
    ),
    pytest.param(["solve", "{bad}"], "a YAML file", id="solve INSTANCE"),
    pytest.param(["validate", "{lab}", "{bad}"], "a plan JSON file", id="validate PLAN"),
]


def _run(command: list[str], files: dict[str, Path], bad: Path):
    args = [a.format(bad=bad, **files) for a in command]
    return CliRunner().invoke(app, args)


@pytest.mark.parametrize(("command", "kind"), COMMANDS)
def test_a_folder_given_as_an_input_file_is_named_once(files, command, kind):
    if command[0] == "trace":  # itp SOURCE may be a folder: its cluster01.csv
        (files["folder"] / "cluster01.csv").mkdir()
        result = _run(command, files, files["folder"])
        folder = files["folder"] / "cluster01.csv"
        assert result.stderr.strip() == f"error: {folder}: is a folder, expected {kind}"
        return
    result = _run(command, files, files["folder"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"error: {files['folder']}: is a folder, expected {kind}"
    assert not files["out"].exists()


@pytest.mark.parametrize(("command", "kind"), COMMANDS)
def test_a_file_that_is_not_utf8_names_its_line_and_byte(files, command, kind):
    result = _run(command, files, files["latin"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: {files['latin']}:3: not UTF-8 text (byte 0xe9 cannot be read; save it as UTF-8)"
    )
    assert str(files["latin"]) not in result.stderr.split(":3:", 1)[1]


@pytest.mark.parametrize(("command", "kind"), COMMANDS)
def test_a_missing_input_file_is_named_once(files, command, kind):
    missing = files["folder"] / "missing.csv"
    result = _run(command, files, missing)
    assert result.exit_code == 2, result.output
    assert result.stderr.count(str(missing)) == 1, result.stderr
    assert "no such file" in result.stderr and "Errno" not in result.stderr


def test_a_bad_trace_row_is_named_once(files):
    files["trace"].write_text(HEADER + "j1,a,8,0,3600,1h,true,0,\nj2,a,x,0,60,0,true,0,\n")
    result = _run(
        ["simulate", "{lab}", "--trace", "{trace}", "--days", "0.01", "--out", "{out}"],
        files,
        files["folder"],
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {files['trace']}:3: gpus: expected a positive whole number, got 'x'"
    )

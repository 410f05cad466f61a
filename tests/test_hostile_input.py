"""Hostile input at any size is bad input, never a hang, an exhausted memory or an internal
error (issue 18, point 1; README "Limits of input"). Each case is a file a user or a script
could hand alloc: an instance YAML, a trace CSV, a host-event CSV or a plan JSON; each is
answered with InputError naming the file, the line where there is one, the field and the
bound. A few cases run through the command line to pin exit code 2 and that nothing is
written. (The time and memory each case takes are measured in benchmarks/hostile.py: within
5 s and 300 MiB.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.io import InputError, load_instance, load_plan
from alloc.io.limits import limits
from alloc.io.trace_csv import read_trace
from alloc.sim.hosts import read_host_events

NOW = "now: 2026-11-30T12:00:00Z\n"
CLUSTER = "cluster:\n  name: c\n  hosts:\n  - {name: h1, gpus: 8}\n"
BUDGETS = "budgets:\n  name: root\n  children:\n  - {name: a, share: 50%}\n"
INSTANCE = NOW + CLUSTER + BUDGETS + "workloads: []\n"
HEADER = "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
ROW = "j1,a,1,0,3600,15m,true,0,any\n"


def instance(body: str) -> str:
    return NOW + body


def deep_list(levels: int) -> str:
    return "[" * levels + "]" * levels


LAUGHS = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
)


def tree(levels: int) -> str:
    """A budget tree `levels` deep, one child each."""
    lines, indent = ["budgets:", "  name: root"], "  "
    for k in range(levels):
        lines += [f"{indent}children:", f"{indent}- name: n{k}", f"{indent}  share: 50%"]
        indent += "  "
    return "\n".join(lines) + "\n"


# (file text, the field or words the message names)
YAML_CASES = [
    pytest.param(
        LAUGHS,
        "aliases of lists or mappings (*a) are not accepted",
        id="a billion-laughs file is refused at its first alias",
    ),
    pytest.param(
        NOW + "x: &x {a: 1}\ny: *x\n",
        "aliases of lists or mappings (*x)",
        id="even one alias of a mapping is refused, with the line it is on",
    ),
    pytest.param(
        "a: " + deep_list(300),
        "nested more than 64 levels",
        id="a list nested 300 deep is refused, not a RecursionError",
    ),
    pytest.param(
        NOW + CLUSTER + tree(300) + "workloads: []\n",
        "nested more than 64 levels",
        id="a 300-level budget tree is refused at its depth",
    ),
    pytest.param(
        NOW + CLUSTER + tree(60) + "workloads: []\n",
        "nested more than 64 levels",
        id="a 60-level budget tree is refused (the nesting bound admits 31 levels)",
    ),
    pytest.param(
        "now: " + "x" * 1_000_000 + "\n",
        "1,000,000 characters",
        id="a million-character value is refused by its length",
    ),
    pytest.param(
        "now: '" + "x" * 5000 + "'\n",
        "5,000 characters",
        id="a quoted value past 4,096 characters is refused",
    ),
    pytest.param(
        "x" * 5000 + ": 1\n", "5,000 characters", id="a key past 4,096 characters is refused"
    ),
    pytest.param(
        INSTANCE + "---\n" + INSTANCE,
        "more than one YAML document",
        id="a second YAML document is refused",
    ),
    pytest.param(
        "now: !!python/object:os.system x\n",
        "!!python/object",
        id="a python object tag is refused, not constructed",
    ),
    pytest.param(
        "now: !!python/name:os.system\n", "!!python/name", id="a python name tag is refused"
    ),
    pytest.param("a: !!set {x, y}\n", "!!set", id="a set tag is refused"),
    pytest.param("a: !custom 1\n", "!custom", id="a local tag is refused"),
    pytest.param(
        "now: !!int abc\n",
        "not valid YAML",
        id="an int tag on text is bad input, not an internal error",
    ),
    pytest.param("now: !!float x\n", "not valid YAML", id="a float tag on text is bad input"),
    pytest.param(
        "now: !!binary '%%%'\n",
        "now:",
        id="a binary tag where a time belongs is bad input",
    ),
    pytest.param(
        "now: 1\nnow: 2\n", "appears twice", id="a key given twice is refused at its second line"
    ),
    pytest.param("? [a, b]\n: 1\n", "a key must be a plain name", id="a list as a key is refused"),
    pytest.param(
        "? {a: 1}\n: 1\n", "a key must be a plain name", id="a mapping as a key is refused"
    ),
    pytest.param("a: [1, 2\n", "not valid YAML", id="an unclosed list is bad input with its line"),
    pytest.param("a:\n\tb: 1\n", "not valid YAML", id="a tab as indentation is bad input"),
    pytest.param("", "the file is empty", id="an empty file is bad input"),
    pytest.param("# a comment only\n", "the file is empty", id="a file of comments is empty"),
    pytest.param(
        "- 1\n- 2\n", "a mapping", id="a list where an instance mapping belongs is bad input"
    ),
    pytest.param(
        NOW
        + "cluster:\n  name: c\n  host_groups:\n  - {prefix: h, count: 1000000, gpus: 4096}\n"
        + BUDGETS
        + "workloads: []\n",
        "1,000,000 hosts, more than the 65,536",
        id="a group of a million 4,096-GPU hosts is refused before a host is made",
    ),
    pytest.param(
        NOW
        + "cluster:\n  name: c\n  host_groups:\n  - {prefix: h, count: 60000, gpus: 64}\n"
        + BUDGETS
        + "workloads: []\n",
        "3,840,000 GPUs, more than the 262,144",
        id="a cluster of more GPUs than the bound is refused",
    ),
    pytest.param(
        NOW
        + "cluster:\n  name: c\n  host_groups:\n"
        + "  - {prefix: a, count: 40000, gpus: 1}\n  - {prefix: b, count: 40000, gpus: 1}\n"
        + BUDGETS
        + "workloads: []\n",
        "host_groups[1]: 80,000 hosts",
        id="the host group that crosses the hosts bound is the one named",
    ),
    pytest.param(
        NOW
        + "cluster:\n  name: c\n  hosts:\n  - {name: h1, gpus: true}\n"
        + BUDGETS
        + "workloads: []\n",
        "gpus",
        id="a host given true GPUs is refused, not read as 1",
    ),
    pytest.param(
        NOW + "policy: {lookback: 1e300}\n" + CLUSTER + BUDGETS + "workloads: []\n",
        "lookback",
        id="a lookback of 1e300 seconds is refused",
    ),
    pytest.param(
        NOW
        + CLUSTER
        + BUDGETS
        + "workloads:\n- {id: w, budget: a, gpus: 99999999999, min_runtime: 1h}\n",
        "gpus",
        id="a workload of 99,999,999,999 GPUs is refused",
    ),
]


@pytest.mark.parametrize(("text", "named"), YAML_CASES)
def test_a_hostile_instance_is_bad_input(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_instance(path)
    assert named in str(caught.value), str(caught.value)
    assert caught.value.file == str(path)


def test_an_alias_error_names_the_line_and_field_of_the_alias(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(LAUGHS, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_instance(path)
    assert caught.value.line == 2 and caught.value.field == "b[0]"


def test_lines_are_still_right_after_the_fast_first_reading(tmp_path: Path) -> None:
    """The first reading keeps no lines; an error found after it (here by validation) gets
    its line from the second."""
    path = tmp_path / "lab.yaml"
    path.write_text(INSTANCE.replace("workloads: []\n", "workloads:\n- {id: w, gpus: 0}\n"))
    with pytest.raises(InputError) as caught:
        load_instance(path)
    assert caught.value.line == 11 and caught.value.field == "workloads[0].gpus"


def test_a_file_past_the_size_bound_is_refused_without_being_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALLOC_MAX_FILE_MB", "1")
    limits.cache_clear()
    try:
        path = tmp_path / "lab.yaml"
        path.write_text(INSTANCE + "# " + "x" * (2 << 20) + "\n")
        with pytest.raises(InputError, match="larger than 1 MiB.*ALLOC_MAX_FILE_MB"):
            load_instance(path)
    finally:
        limits.cache_clear()


def test_an_endless_file_is_refused_at_the_bound() -> None:
    with pytest.raises(InputError, match="larger than 16 MiB"):
        load_instance("/dev/zero")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        pytest.param("ALLOC_MAX_HOSTS", "lots", id="a bound set to a word is bad input"),
        pytest.param("ALLOC_MAX_GPUS", "0", id="a bound set to zero is bad input"),
        pytest.param("ALLOC_MAX_FILE_MB", "-5", id="a negative bound is bad input"),
    ],
)
def test_a_bound_set_to_nonsense_is_bad_input_not_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    limits.cache_clear()
    try:
        path = tmp_path / "lab.yaml"
        path.write_text(INSTANCE)
        with pytest.raises(InputError, match=f"{variable}: expected a whole number above 0"):
            load_instance(path)
    finally:
        limits.cache_clear()


def test_a_bound_raised_in_the_environment_admits_a_larger_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = NOW + "cluster:\n  name: c\n  host_groups:\n  - {prefix: h, count: 70000, gpus: 1}\n"
    path = tmp_path / "lab.yaml"
    path.write_text(text + BUDGETS + "workloads: []\n")
    monkeypatch.setenv("ALLOC_MAX_HOSTS", "100_000")
    limits.cache_clear()
    try:
        assert len(load_instance(path).cluster.hosts) == 70_000
    finally:
        limits.cache_clear()


TRACE_CASES = [
    pytest.param(
        HEADER + "x" * 1_000_000 + ",a,1,0,3600,15m,true,0,any\n",
        "",  # the csv module stops before it knows the column
        "more than 131,072 characters",
        id="a million-character job id is refused, not a csv error",
    ),
    pytest.param(
        HEADER + "x" * 5000 + ",a,1,0,3600,15m,true,0,any\n",
        "id",
        "5,000 characters",
        id="a job id past 4,096 characters is refused",
    ),
    pytest.param(
        HEADER + "j1,a,99999999999,0,3600,15m,true,0,any\n",
        "gpus",
        "more than the 262,144",
        id="a job of 99,999,999,999 GPUs is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1,1e300,3600,15m,true,0,any\n",
        "submitted",
        "more than ten years",
        id="a submission 1e300 seconds in is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1,0,1e300,15m,true,0,any\n",
        "runtime",
        "more than ten years",
        id="a runtime of 1e300 seconds is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1,inf,3600,15m,true,0,any\n",
        "submitted",
        "finite",
        id="an infinite submission time is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1,nan,3600,15m,true,0,any\n",
        "submitted",
        "finite",
        id="a submission time of nan is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1,0,3600,1e300,true,0,any\n",
        "min_runtime",
        "more than ten years",
        id="a minimum runtime of 1e300 seconds is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1,0,3600,15m,true,99999999999999,any\n",
        "priority",
        "-1,000,000 to 1,000,000",
        id="a priority past a million is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1,0,3600,15m,true,0,any,extra\n",
        "",
        "more columns than the header",
        id="a row with an extra column is refused",
    ),
    pytest.param(
        HEADER + 'j1,a,1,0,3600,15m,true,0,"any\n',
        "topology",
        "quote is not closed",
        id="an unclosed quote is refused at the row it opens",
    ),
    pytest.param(
        HEADER + "j1,a,-1,0,3600,15m,true,0,any\n",
        "gpus",
        "positive whole number",
        id="a negative GPU count is refused",
    ),
    pytest.param(
        HEADER + "j1,a,1.5,0,3600,15m,true,0,any\n",
        "gpus",
        "positive whole number",
        id="a fractional GPU count is refused",
    ),
    pytest.param(
        HEADER + "j1,a,١,0,3600,15m,true,0,any\n",
        "gpus",
        "positive whole number",
        id="a GPU count in Arabic-Indic digits is refused",
    ),
    pytest.param("id,id\n", "", "missing columns", id="a header of one column twice is refused"),
]


@pytest.mark.parametrize(("text", "field", "named"), TRACE_CASES)
def test_a_hostile_trace_is_bad_input(tmp_path: Path, text: str, field: str, named: str) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_trace(path, max_min_runtime_s=8 * 3600.0)
    assert named in caught.value.message, str(caught.value)
    assert caught.value.field == field
    assert caught.value.line is not None


EVENTS = "time,host,state\n"
EVENT_CASES = [
    pytest.param(
        EVENTS + "1e300,h1,ready\n",
        "time",
        "more than ten years",
        id="a host event 1e300 seconds in is refused",
    ),
    pytest.param(
        EVENTS + "0," + "h" * 200_000 + ",ready\n",
        "",
        "more than 131,072 characters",
        id="a 200,000-character host name is refused, not a csv error",
    ),
    pytest.param(
        EVENTS + "0," + "h" * 5000 + ",ready\n",
        "host",
        "5,000 characters",
        id="a host name past 4,096 characters is refused",
    ),
    pytest.param(
        EVENTS + "0,h9,ready\n", "host", "unknown host", id="a host the lab lacks is refused"
    ),
    pytest.param(
        EVENTS + "0,h1,exploded\n", "state", "expected ready", id="an unknown host state is refused"
    ),
    pytest.param(
        EVENTS + "nan,h1,ready\n", "time", "duration", id="a host event at nan is refused"
    ),
    pytest.param(
        "time,host\n",
        "",
        "expected the columns",
        id="host events without a state column are refused",
    ),
]


@pytest.mark.parametrize(("text", "field", "named"), EVENT_CASES)
def test_hostile_host_events_are_bad_input(
    tmp_path: Path, text: str, field: str, named: str
) -> None:
    path = tmp_path / "events.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_host_events(path, {"h1"})
    assert named in caught.value.message, str(caught.value)
    assert caught.value.field == field


def plan_text(change: Callable[[dict], object]) -> str:
    plan = {
        "now": "2026-11-30T12:00:00Z",
        "decisions": [
            {
                "workload": "w",
                "action": "start",
                "occupancy": "allocated",
                "hosts": {"h1": 1},
                "reason": "under_allocation",
            }
        ],
    }
    change(plan)
    return json.dumps(plan)


PLAN_CASES = [
    pytest.param(
        plan_text(lambda p: p["decisions"][0]["hosts"].update(h1=True)),
        "hosts",
        id="a host given true GPUs in a plan is refused, not read as 1",
    ),
    pytest.param(
        plan_text(lambda p: p["decisions"][0]["hosts"].update(h1="8")),
        "hosts",
        id="a host given GPUs as text in a plan is refused",
    ),
    pytest.param(
        plan_text(lambda p: p["decisions"][0]["hosts"].update(h1=10**12)),
        "hosts",
        id="a host given a trillion GPUs in a plan is refused",
    ),
    pytest.param(
        plan_text(lambda p: p["decisions"][0].update(workload="w" * 5000)),
        "workload",
        id="a workload id past 4,096 characters in a plan is refused",
    ),
    pytest.param(
        plan_text(lambda p: p["decisions"][0].update(workload=7)),
        "workload",
        id="a numeric workload id in a plan is refused",
    ),
    pytest.param(
        plan_text(lambda p: p.update(now=1e300)), "now", id="a plan time of 1e300 is refused"
    ),
    pytest.param(
        "[" * 100_000 + "]" * 100_000,
        "nested too deep",
        id="a JSON array nested 100,000 deep is refused, not a RecursionError",
    ),
    pytest.param(
        '{"now": ' + "9" * 5000 + "}",
        "4,300 digits",
        id="a 5,000-digit number in a plan is refused",
    ),
    pytest.param(
        '{"now": "2026-11-30T12:00:00Z", "decisions": [',
        "not valid JSON",
        id="a truncated plan is refused",
    ),
    pytest.param("", "not valid JSON", id="an empty plan file is refused"),
]


@pytest.mark.parametrize(("text", "named"), PLAN_CASES)
def test_a_hostile_plan_is_bad_input(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_plan(path)
    assert named in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        pytest.param(
            LAUGHS, "aliases", id="the command line answers a billion-laughs file with exit 2"
        ),
        pytest.param(
            "a: " + deep_list(5000),
            "nest",
            id="the command line answers a 5,000-deep list with exit 2",
        ),
    ],
)
def test_the_command_line_answers_hostile_files_with_exit_2_and_writes_nothing(
    tmp_path: Path, text: str, named: str
) -> None:
    path, out = tmp_path / "lab.yaml", tmp_path / "plan.json"
    path.write_text(text)
    result = CliRunner().invoke(app, ["solve", str(path), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert named in result.stderr and "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("variable", "file", "text", "named"),
    [
        pytest.param(
            "ALLOC_MAX_VALUES",
            "lab.yaml",
            "a: [" + ",".join(["1"] * 2000) + "]\n",
            "more than 1,000 values, the most alloc reads (set ALLOC_MAX_VALUES",
            id="a YAML file of more values than the bound is refused",
        ),
        pytest.param(
            "ALLOC_MAX_ROWS",
            "trace.csv",
            HEADER + "".join(ROW.replace("j1", f"j{i}") for i in range(1001)),
            "more than 1,000 rows, the most alloc reads (set ALLOC_MAX_ROWS",
            id="a trace of more rows than the bound is refused at the first row past it",
        ),
    ],
)
def test_a_file_of_more_values_or_rows_than_the_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, file: str, text: str, named: str
) -> None:
    monkeypatch.setenv(variable, "1000")
    limits.cache_clear()
    try:
        path = tmp_path / file
        path.write_text(text)
        with pytest.raises(InputError) as caught:
            load_instance(path) if file.endswith(".yaml") else read_trace(path)
        assert named in str(caught.value)
        assert caught.value.line == (1 if file.endswith(".yaml") else 1002)
    finally:
        limits.cache_clear()


def test_an_alias_of_a_scalar_repeats_its_value_as_pyyaml_dumps_a_shared_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lab.yaml"
    text = INSTANCE.replace(
        "workloads: []\n",
        "workloads:\n- {id: w0, gpus: 1, min_runtime: &t 1h}\n"
        "- {id: w1, gpus: 1, min_runtime: *t}\n",
    )
    path.write_text(text)
    assert [w.min_runtime_s for w in load_instance(path).workloads] == [3600.0, 3600.0]

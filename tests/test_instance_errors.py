"""Bad instances: every one is an `InputError` naming the file, the field path and what is wrong,
and through the CLI exit code 2 with one message on stderr, no traceback and no output file
(SPEC.md, "Exit codes")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ago, host, instance, workload
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.io import InputError, load_instance, parse_instance

FILE = "lab.yaml"
TREE = {
    "name": "lab",
    "children": [
        {
            "name": "nlp",
            "share": "60%",
            "children": [{"name": "olmo", "share": "70%"}, {"name": "tulu", "share": "30%"}],
        },
        {"name": "robotics", "share": "40%"},
    ],
}

# a's children x and y hold 70% + 40% of a's share
GRANDCHILDREN_OVER_100 = {
    "name": "root",
    "children": [
        {
            "name": "a",
            "share": "60%",
            "children": [{"name": "x", "share": 70}, {"name": "y", "share": 40}],
        },
        {"name": "b", "share": "40%"},
    ],
}


def text_of(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def error_of(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_instance(text, FILE)
    return caught.value


def shares(*pairs: tuple[str, Any]) -> dict[str, Any]:
    return {"name": "root", "children": [{"name": n, "share": s} for n, s in pairs]}


def one(**fields: Any) -> str:
    """An instance whose only workload is `workload("w", ...)` with these fields."""
    gpus = fields.pop("gpus", 4)
    return text_of(instance(workloads=[workload("w", gpus, **fields)]))


def running_without_started() -> str:
    w = workload("w", 4, hosts={"h1": 4})
    del w["started"]
    return text_of(instance(workloads=[w]))


# (instance text, field path, key phrases of the message)
FIELD_ERRORS = [
    pytest.param(
        one(gpus=0),
        "workloads[0].gpus",
        ["greater than 0"],
        id="a workload of zero GPUs is refused",
    ),
    pytest.param(
        one(gpus=-2),
        "workloads[0].gpus",
        ["greater than 0"],
        id="a workload of negative GPUs is refused",
    ),
    pytest.param(
        one(gpus="four"),
        "workloads[0].gpus",
        ["integer", "four"],
        id="gpus given as a word is not an integer",
    ),
    pytest.param(
        one(gpus=2.5),
        "workloads[0].gpus",
        ["integer", "2.5"],
        id="gpus given as a fraction is not an integer",
    ),
    pytest.param(
        text_of(instance(budgets=TREE, workloads=[workload("w", 1, budget="nlp/olm")])),
        "workloads[0].budget",
        ["unknown budget node 'nlp/olm'", "did you mean 'nlp/olmo'"],
        id="an unknown budget path is refused with the closest node as a hint",
    ),
    pytest.param(
        text_of(instance(budgets=TREE, workloads=[workload("w", 1, budget="nlp")])),
        "workloads[0].budget",
        ["'nlp' is not a leaf", "work is charged to a leaf, such as nlp/olmo, nlp/tulu"],
        id="a workload charged to an internal budget node is pointed to its leaves",
    ),
    pytest.param(
        text_of(instance(budgets=shares(("a", "60%"), ("b", "50%")))),
        "budgets.children",
        ["110%", "more than 100%"],
        id="sibling shares over 100 percent are refused at their parent",
    ),
    pytest.param(
        text_of(instance(budgets=GRANDCHILDREN_OVER_100)),
        "budgets.children[0].children",
        ["more than 100%"],
        id="grandchild shares over 100 percent are refused at their own parent",
    ),
    pytest.param(
        text_of(instance(budgets=shares(("a", 0.5), ("b", "40%")))),
        "budgets.children[0].share",
        ["ambiguous", "50%", "0.5%"],
        id="a bare share between 0 and 1 is refused as ambiguous",
    ),
    pytest.param(
        text_of(instance(budgets={**shares(("a", "50%")), "share": "50%"})),
        "budgets.share",
        ["root is the whole cluster"],
        id="a share on the root is refused",
    ),
    pytest.param(
        text_of(instance(usage={"a": 10, "/a": 5})),
        "usage['/a']",
        ["given twice"],
        id="usage for one node given twice is refused",
    ),
    pytest.param(
        text_of({**instance(), "now": "9999-12-31T00:00:00Z"}),
        "now",
        ["out of range"],
        id="a time near the end of the calendar is refused",
    ),
    pytest.param(
        text_of(
            instance(workloads=[{k: v for k, v in workload("w", 2).items() if k != "min_runtime"}])
        ),
        "workloads[0].min_runtime",
        ["required"],
        id="a workload must declare its minimum runtime",
    ),
    pytest.param(
        text_of(instance(budgets=shares(("a", "150%")))),
        "budgets.children[0].share",
        ["between 0% and 100%"],
        id="a share above 100 percent is refused",
    ),
    pytest.param(
        text_of(instance(budgets=shares(("a", "-5%")))),
        "budgets.children[0].share",
        ["between 0% and 100%"],
        id="a negative share is refused",
    ),
    pytest.param(
        text_of(instance(budgets=shares(("a", "lots")))),
        "budgets.children[0].share",
        ["expected a percentage", "lots"],
        id="a share that is not a number is refused",
    ),
    pytest.param(
        text_of(instance(budgets=shares(("a", "35%%")))),
        "budgets.children[0].share",
        ["expected a percentage"],
        id="a share with a doubled percent sign is refused",
    ),
    pytest.param(
        text_of(instance(workloads=[workload("w", 1), workload("w", 2)])),
        "workloads[1].id",
        ["'w' is used twice", "workloads[0]"],
        id="a duplicate workload id is refused at its second use",
    ),
    pytest.param(
        text_of(instance(hosts=[host("h1"), host("h1")])),
        "cluster.hosts[1].name",
        ["h1 is defined twice", "cluster.hosts[0]"],
        id="a duplicate host name is refused at its second definition",
    ),
    pytest.param(
        text_of(
            {
                **instance(),
                "cluster": {
                    "hosts": [host("h002")],
                    "host_groups": [{"prefix": "h", "count": 4, "gpus": 8}],
                },
            }
        ),
        "cluster.host_groups[0]",
        ["h002 is defined twice"],
        id="a host group overlapping an explicit host is refused",
    ),
    pytest.param(
        text_of(instance(workloads=[workload("w", 4, hosts={"h9": 4})])),
        "workloads[0].hosts.h9",
        ["unknown host 'h9'"],
        id="a running workload on an unknown host is refused",
    ),
    pytest.param(
        text_of(
            instance(
                workloads=[workload("w1", 6, hosts={"h1": 6}), workload("w2", 4, hosts={"h1": 4})]
            )
        ),
        "workloads[1].hosts.h1",
        ["has 8 GPUs", "place 10"],
        id="two running workloads that together overflow a host are refused",
    ),
    pytest.param(
        text_of(instance(workloads=[workload("w", 16, hosts={"h1": 8})])),
        "workloads[0].hosts",
        ["places 8 GPUs", "of 16"],
        id="a running workload whose hosts give fewer GPUs than it asks is refused",
    ),
    pytest.param(
        one(started=ago(hours=1)),
        "workloads[0].hosts",
        ["both started and hosts"],
        id="a workload started without hosts is refused",
    ),
    pytest.param(
        running_without_started(),
        "workloads[0].started",
        ["both started and hosts"],
        id="a workload on hosts without a start time is refused",
    ),
    pytest.param(
        one(hosts={"h1": 4}, submitted=ago(hours=1), started=ago(hours=2)),
        "workloads[0].started",
        ["before it was submitted"],
        id="a workload started before it was submitted is refused",
    ),
    pytest.param(
        one(min_runtime="9h"),
        "workloads[0].min_runtime",
        ["above max_min_runtime", "8h"],
        id="a minimum runtime above the default maximum of 8h is refused",
    ),
    pytest.param(
        text_of(
            instance(
                workloads=[workload("w", 4, min_runtime="3h")], policy={"max_min_runtime": "2h"}
            )
        ),
        "workloads[0].min_runtime",
        ["above max_min_runtime", "2h"],
        id="a minimum runtime above the policy's own maximum is refused",
    ),
    pytest.param(
        one(min_runtime="8 hours"),
        "workloads[0].min_runtime",
        ["expected a duration", "8 hours"],
        id="a duration spelled out in words is refused",
    ),
    pytest.param(
        one(min_runtime="-1h"),
        "workloads[0].min_runtime",
        ["expected a duration", "-1h"],
        id="a negative duration is refused",
    ),
    pytest.param(
        one(min_runtime="abc"),
        "workloads[0].min_runtime",
        ["expected a duration", "abc"],
        id="a duration that is not one is refused",
    ),
    pytest.param(
        one(min_runtime=-5),
        "workloads[0].min_runtime",
        ["zero or more"],
        id="a negative number of seconds is refused",
    ),
    pytest.param(
        text_of(instance(policy={"lookback": "a week"})),
        "policy.lookback",
        ["expected a duration"],
        id="a malformed policy duration is refused",
    ),
    pytest.param(
        text_of(instance(policy={"lookback": 0})),
        "policy.lookback",
        ["lookback window must be above 0"],
        id="a lookback of zero is refused",
    ),
    pytest.param(
        text_of(instance(policy={"lookback": "0d"})),
        "policy.lookback",
        ["lookback window must be above 0"],
        id="a lookback of zero days is refused",
    ),
    pytest.param(
        text_of(instance(policy={"lookback": -3600})),
        "policy.lookback",
        ["zero or more", "-3600"],
        id="a negative lookback is refused",
    ),
    pytest.param(
        text_of(instance(budgets=shares(("a", "60%"), ("b", "40.0000001%")))),
        "budgets.children",
        ["100.0000001%", "more than 100%"],
        id="sibling shares over 100 percent by any amount are refused",
    ),
    pytest.param(
        one(submitted="2026-11-30T10:00:00"),
        "workloads[0].submitted",
        ["no zone"],
        id="a time without a zone is refused",
    ),
    pytest.param(
        one(submitted="yesterday"),
        "workloads[0].submitted",
        ["expected an ISO 8601 time", "yesterday"],
        id="a time that is not a date is refused",
    ),
    pytest.param(
        text_of({**instance(), "now": "2026-11-30T12:00:00"}),
        "now",
        ["no zone"],
        id="now without a zone is refused",
    ),
    pytest.param(
        text_of(instance(hosts=[host("h1", state="broken")])),
        "cluster.hosts[0].state",
        ["'ready'", "broken"],
        id="an unknown host state is refused with the states there are",
    ),
    pytest.param(
        text_of(instance(usage={"c": 10})),
        "usage.c",
        ["unknown budget node 'c'"],
        id="usage for an unknown budget node is refused",
    ),
    pytest.param(
        text_of(instance(usage={"a/x": 10})),
        "usage['a/x']",
        ["unknown budget node 'a/x'"],
        id="usage for an unknown node below a leaf is refused",
    ),
    pytest.param(
        one(hosts={"h1": 4}, started="2026-11-30T13:00:00Z"),
        "workloads[0].started",
        ["after now"],
        id="a workload started after now is refused",
    ),
    pytest.param(
        one(submitted="2026-11-30T13:00:00Z"),
        "workloads[0].submitted",
        ["after now"],
        id="a workload submitted after now is refused",
    ),
    pytest.param(
        text_of(instance(workloads=[{"id": "w", "gpu": 4}])),
        "workloads[0].gpu",
        ["unknown field", "did you mean 'gpus'"],
        id="a misspelt field is named as unknown with the intended field as a hint",
    ),
    pytest.param(
        text_of({**instance(), "worklaods": []}),
        "worklaods",
        ["unknown field", "did you mean 'workloads'"],
        id="a misspelt top-level field is named as unknown",
    ),
    pytest.param(
        text_of(without(instance(), "now")),
        "now",
        ["required field is missing"],
        id="an instance without now is refused",
    ),
    pytest.param(
        text_of(without(instance(), "cluster")),
        "cluster",
        ["required field is missing"],
        id="an instance without a cluster is refused",
    ),
    pytest.param(
        text_of(instance(workloads=[{"id": "w", "budget": "a"}])),
        "workloads[0].gpus",
        ["required field is missing"],
        id="a workload without gpus is refused",
    ),
    pytest.param(
        text_of({**instance(), "cluster": {"name": "empty"}}),
        "cluster",
        ["no hosts"],
        id="a cluster without hosts is refused",
    ),
    pytest.param(
        "now: 2026-11-30T12:00:00Z\nnow: 2026-11-30T13:00:00Z\n",
        "now",
        ["appears twice"],
        id="a key written twice is refused instead of overwritten",
    ),
]

# (instance text, key phrases of the message) for problems of the whole file
FILE_ERRORS = [
    pytest.param("", ["the file is empty"], id="an empty file is refused"),
    pytest.param(
        "# only a comment\n",
        ["the file is empty"],
        id="a file of comments only is refused as empty",
    ),
    pytest.param(
        "- now\n- cluster\n",
        ["is a mapping"],
        id="a top-level list instead of a mapping is refused",
    ),
    pytest.param(
        "now: 2026-11-30T12:00:00Z\ncluster:\n  hosts: [a, b\nbudgets: {}\n",
        ["not valid YAML"],
        id="YAML that does not parse is refused",
    ),
    pytest.param(
        "now: !!python/object:os.system x\n",
        ["not valid YAML", "python/object"],
        id="a YAML tag that is not plain data is refused",
    ),
    pytest.param(
        "now: !!int soon\n", ["not valid YAML"], id="a tagged YAML value its tag rejects is refused"
    ),
    pytest.param("? [a, b]\n: 1\n", ["plain name"], id="a YAML key that is a list is refused"),
]


@pytest.mark.parametrize(("text", "field", "phrases"), FIELD_ERRORS)
def test_a_bad_field_is_named_by_file_path_and_problem(text, field, phrases):
    err = error_of(text)
    assert err.file == FILE
    assert err.field == field
    assert str(err).startswith(FILE)
    assert f" {field}: " in str(err)
    for phrase in phrases:
        assert phrase in err.message


@pytest.mark.parametrize(("text", "phrases"), FILE_ERRORS)
def test_a_bad_file_is_named_with_its_problem(text, phrases):
    err = error_of(text)
    assert str(err).startswith(FILE)
    for phrase in phrases:
        assert phrase in str(err)


def test_yaml_that_does_not_parse_names_the_line():
    text = "now: 2026-11-30T12:00:00Z\ncluster:\n  hosts: [a, b\nbudgets: {}\n"
    err = error_of(text)
    assert err.line in (3, 4)
    assert str(err).startswith(f"{FILE}:{err.line}: ")


def test_a_field_error_names_the_line_of_the_offending_field():
    text = (
        "now: 2026-11-30T12:00:00Z\n"
        "cluster:\n"
        "  hosts:\n"
        "    - {name: h1, gpus: 8}\n"
        "budgets: {name: root}\n"
        "workloads:\n"
        "  - id: w\n"
        "    gpu: 4\n"
    )
    err = error_of(text)
    assert err.field == "workloads[0].gpu"
    assert str(err).startswith(f"{FILE}:8: ")


def test_a_duplicate_key_names_the_line_of_its_second_use():
    err = error_of("now: 2026-11-30T12:00:00Z\nnow: 2026-11-30T13:00:00Z\n")
    assert err.line == 2


def test_a_missing_file_is_named(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(InputError) as caught:
        load_instance(path)
    assert str(path) in str(caught.value)
    assert "no such file" in str(caught.value)


def test_a_valid_instance_of_the_same_builders_loads():
    """The cases above fail for the reason they name, not because the builders are broken."""
    snapshot = parse_instance(
        text_of(
            instance(budgets=TREE, workloads=[workload("w", 4, budget="nlp/olmo", hosts={"h1": 4})])
        ),
        FILE,
    )
    assert [w.id for w in snapshot.workloads] == ["w"]


# Through the CLI: exit 2, one line on stderr, no traceback, nothing written.

CLI_CASES = [pytest.param(*p.values[:2], id=p.id) for p in FIELD_ERRORS] + [
    pytest.param(p.values[0], "", id=p.id) for p in FILE_ERRORS
]


def solve_cli(path: Path, out: Path) -> Any:
    return CliRunner().invoke(app, ["solve", str(path), "-o", str(out)])


def assert_refused(result: Any, out: Path, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert result.stdout == ""
    assert not out.exists()


@pytest.mark.parametrize(("text", "field"), CLI_CASES)
def test_the_cli_refuses_a_bad_instance_with_exit_2_and_writes_nothing(tmp_path, text, field):
    path = tmp_path / FILE
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.json"
    assert_refused(solve_cli(path, out), out, str(path), f" {field}: " if field else "")


def test_the_cli_refuses_a_missing_file_with_exit_2(tmp_path):
    path = tmp_path / "nope.yaml"
    out = tmp_path / "out.json"
    assert_refused(solve_cli(path, out), out, str(path), "no such file")


@pytest.mark.parametrize(
    "budget",
    [
        pytest.param("x[/b]", id="a closing markup tag in user text is printed verbatim"),
        pytest.param("x[bold]y", id="an opening markup tag in user text is printed verbatim"),
    ],
)
def test_the_cli_prints_user_text_in_an_error_as_written(tmp_path, budget):
    path = tmp_path / FILE
    path.write_text(text_of(instance(workloads=[workload("w", 1, budget=budget)])))
    out = tmp_path / "out.json"
    assert_refused(solve_cli(path, out), out, f"unknown budget node {budget!r}")


def test_the_roots_name_as_a_budget_says_the_root_is_no_budget_not_that_it_is_unknown(tmp_path):
    # `budget: lab` (the root's name) was `unknown budget node 'lab'`: it exists, and is no
    # budget to charge. The hint names leaves: `nlp`, a child of the root, is refused too.
    path = tmp_path / FILE
    path.write_text(text_of(instance(budgets=TREE, workloads=[workload("w", 1, budget="lab")])))
    out = tmp_path / "out.json"
    result = solve_cli(path, out)
    assert_refused(
        result,
        out,
        "workloads[0].budget: 'lab' is the root of the budget tree, the whole cluster, and "
        "cannot be a budget: work is charged to a leaf below it, such as nlp/olmo, nlp/tulu, "
        "robotics",
    )
    assert "unknown" not in result.stderr


def test_a_lookback_of_zero_is_bad_input_naming_file_line_and_field(tmp_path):
    # Fair-share ratios divide by the window's GPU time: a window of 0 is no window.
    path = tmp_path / FILE
    path.write_text(text_of(instance(policy={"lookback": "0s"})), encoding="utf-8")
    out = tmp_path / "out.json"
    result = solve_cli(path, out)
    assert_refused(result, out, f"{path}:4: policy.lookback: the lookback window must be above 0")


@pytest.mark.parametrize("lookback", [0, "0h", -1])
def test_a_scenario_or_controller_config_with_a_lookback_of_zero_or_less_is_bad_input(
    tmp_path, lookback
):
    from alloc.io.controller_config import load_controller_config
    from alloc.io.scenario import load_scenario

    scenario = tmp_path / "alt.yaml"
    scenario.write_text(text_of({"budgets": TREE, "policy": {"lookback": lookback}}))
    with pytest.raises(InputError) as caught:
        load_scenario(scenario, parse_instance(text_of(instance()), FILE))
    assert (caught.value.file, caught.value.field) == (str(scenario), "policy.lookback")
    config = tmp_path / "c.yaml"
    config.write_text(text_of({"budgets": TREE, "policy": {"lookback": lookback}}))
    with pytest.raises(InputError) as caught:
        load_controller_config(config)
    assert (caught.value.file, caught.value.field) == (str(config), "policy.lookback")
    assert caught.value.line is not None

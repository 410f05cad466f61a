"""Names that cannot forge a terminal or a report (issue 18, point 2).

A name in a file alloc reads is printable text (alloc.io.names): one with an escape sequence,
a control character or a format character such as U+202E is bad input (exit 2) naming the
file, the line, the field and the character with its position. What a cluster reports alloc
cannot refuse: such names are shown escaped (alloc.printable.shown) in `alloc explain`,
`alloc status` and `alloc queue`, HTML-escaped in report.html and comparison.html, and
escaped per the exposition format in Prometheus labels; the queue's CSV and JSON keep them
exact."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import NOW, host, instance, snapshot_of, solve_checked, workload
from typer.testing import CliRunner

from alloc.adapters.slurm import SlurmExecutor, SlurmSite
from alloc.adapters.slurm.commands import SlurmCommands
from alloc.cli.app import app
from alloc.controller import StateStore
from alloc.domain import BudgetNode, BudgetPath, BudgetTree, HostName, Snapshot, WorkloadId
from alloc.printable import shown

ANSI = "\x1b[31m"  # red
OSC8 = "\x1b]8;;http://evil\x07"  # a hyperlink
RLO = "\u202e"  # right-to-left override
ZWSP = "\u200b"  # zero-width space
CSI = "\x9b"  # the C1 control sequence introducer
LSEP = "\u2028"  # line separator
MARKUP = "[bold red]x[/]"
HEADER = "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology"


def alloc(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def hidden(text: str) -> list[str]:
    """The characters of `text` a terminal would act on rather than show (line breaks apart)."""
    return [c for c in text if not c.isprintable() and c != "\n"]


# -- files we read: refused -----------------------------------------------------------------


def lab(**change: Any) -> dict[str, Any]:
    """A two-host lab with one queued and one running workload."""
    data = instance(
        hosts=[host("h1", block="b1", rack="r1"), host("h2", gpu_type="gpu")],
        budgets={"name": "root", "owners": ["pm"], "children": [{"name": "a"}]},
        workloads=[workload("w1", 8), workload("w2", 8, hosts={"h2": 8})],
        usage={"a": 5.0},
    )
    data["cluster"]["host_groups"] = [{"prefix": "g", "count": 1, "gpus": 8}]
    for path, value in change.items():
        *above, last = path.split(".")
        at: Any = data
        for part in above:
            at = at[int(part)] if part.isdigit() else at[part]
        at[int(last) if last.isdigit() else last] = value
    return data


def dumped(data: dict[str, Any]) -> str:
    """As YAML writes it: a control character inside a double-quoted escape (`"\\e[31m"`)."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=False)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def solve_lab(tmp: Path, text: str) -> tuple[list[object], Path]:
    (tmp / "lab.yaml").write_text(text)
    return ["solve", tmp / "lab.yaml"], tmp / "lab.yaml"


def instance_case(path: str, value: Any, needle: str) -> Callable[[Path], Any]:
    def make(tmp: Path) -> tuple[list[object], Path, int]:
        text = dumped(lab(**{path: value}))
        args, file = solve_lab(tmp, text)
        return args, file, line_of(text, needle)

    return make


def raw_yaml_case(tmp: Path) -> tuple[list[object], Path, int]:
    text = dumped(lab()).replace("id: w1", f"id: w{ANSI}1")  # as typed: YAML refuses it
    args, file = solve_lab(tmp, text)
    return args, file, line_of(text, "id: w")


def scenario_case(tmp: Path) -> tuple[list[object], Path, int]:
    data = lab()
    data.pop("workloads")
    (tmp / "lab.yaml").write_text(dumped(data))
    (tmp / "trace.csv").write_text(HEADER + "\nj1,a,8,0,3600,1h,true,0,\n")
    text = dumped({"budgets": {"name": "root", "children": [{"name": f"b{OSC8}"}]}})
    (tmp / "alt.yaml").write_text(text)
    args = ["whatif", tmp / "lab.yaml", "--trace", tmp / "trace.csv"]
    args += ["--scenario", tmp / "alt.yaml", "--days", "0.01", "--out", tmp / "out"]
    return args, tmp / "alt.yaml", line_of(text, 'name: "b')


def config_case(section: dict[str, Any], needle: str) -> Callable[[Path], Any]:
    def make(tmp: Path) -> tuple[list[object], Path, int]:
        data = {"name": "c", "budgets": {"name": "root", "children": [{"name": "a"}]}}
        text = dumped({**data, **section, "state": f"sqlite:///{tmp / 's.db'}"})
        (tmp / "c.yaml").write_text(text)
        return ["status", "--config", tmp / "c.yaml"], tmp / "c.yaml", line_of(text, needle)

    return make


def simulated(tmp: Path, trace: str, events: str | None = None) -> list[object]:
    data = lab()
    data.pop("workloads")
    (tmp / "lab.yaml").write_text(dumped(data))
    (tmp / "trace.csv").write_text(trace)
    args: list[object] = ["simulate", tmp / "lab.yaml", "--trace", tmp / "trace.csv"]
    if events is not None:
        (tmp / "events.csv").write_text(events)
        args += ["--host-events", tmp / "events.csv"]
    return [*args, "--days", "0.01", "--out", tmp / "out"]


def trace_case(row: str, header: str = HEADER) -> Callable[[Path], Any]:
    def make(tmp: Path) -> tuple[list[object], Path, int]:
        first = "j0,a,8,0,3600,1h,true,0," + "," * header[len(HEADER) :].count(",")
        text = f"{header}\n{first}\n{row}\n"
        return simulated(tmp, text), tmp / "trace.csv", 3

    return make


def events_case(tmp: Path) -> tuple[list[object], Path, int]:
    events = f"time,host,state\n1h,h1,unhealthy\n2h,h1{ANSI},ready\n"
    args = simulated(tmp, HEADER + "\nj1,a,8,0,3600,1h,true,0,\n", events)
    return args, tmp / "events.csv", 3


def plan_case(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], Any]:
    def make(tmp: Path) -> tuple[list[object], Path, None]:
        (tmp / "lab.yaml").write_text(dumped(lab()))
        assert alloc("solve", tmp / "lab.yaml", "-o", tmp / "plan.json").exit_code == 0
        plan = json.loads((tmp / "plan.json").read_text())
        change(plan)
        (tmp / "plan.json").write_text(json.dumps(plan))
        return ["validate", tmp / "lab.yaml", tmp / "plan.json"], tmp / "plan.json", None

    return make


def _rename_first(plan: dict[str, Any]) -> None:
    plan["decisions"][0]["workload"] = f"w{ANSI}1"


def _host_key(plan: dict[str, Any]) -> None:
    d = next(d for d in plan["decisions"] if d.get("hosts"))
    d["hosts"] = {f"{h}{RLO}": g for h, g in d["hosts"].items()}


def _drained(plan: dict[str, Any]) -> None:
    plan["drained_hosts"] = ["h1\t"]


def itp_case(tmp: Path) -> tuple[list[object], Path, int]:
    (tmp / "itp.csv").write_text(
        "job_id,submission_time,duration,num_gpu\nj1,0,60,1\nj2\u202e,10,60,1\n"
    )
    return ["trace", "import", "itp", tmp / "itp.csv", "-o", tmp / "t.csv"], tmp / "itp.csv", 3


ESC_AT = "a control character (U+001B ESCAPE) at position"
REFUSED = [
    pytest.param(
        instance_case("workloads.0.id", f"w{ANSI}1", 'id: "w'),
        "workloads[0].id",
        f"contains {ESC_AT} 2",
        id="an ANSI colour code in a workload id is refused with its position",
    ),
    pytest.param(
        instance_case("cluster.hosts.0.name", f"h1{OSC8}", 'name: "h1'),
        "cluster.hosts[0].name",
        f"contains {ESC_AT} 3",
        id="an OSC 8 hyperlink in a host name is refused",
    ),
    pytest.param(
        instance_case("budgets.children.0.name", f"a{RLO}", 'name: "a'),
        "budgets.children[0].name",
        "contains a format character (U+202E RIGHT-TO-LEFT OVERRIDE) at position 2",
        id="a right-to-left override in a budget name is refused",
    ),
    pytest.param(
        instance_case("budgets.owners.0", "pm\x00", "pm\\0"),
        "budgets.owners[0]",
        "contains a control character (U+0000 NUL) at position 3",
        id="a NUL in a budget owner is refused",
    ),
    pytest.param(
        instance_case("cluster.hosts.1.gpu_type", "gpu\t", "gpu\\t"),
        "cluster.hosts[1].gpu_type",
        "contains a control character (U+0009 TAB) at position 4",
        id="a tab in a GPU type is refused",
    ),
    pytest.param(
        instance_case("cluster.hosts.0.block", "b1\nb2", "block:"),
        "cluster.hosts[0].block",
        "contains a control character (U+000A LINE FEED) at position 3",
        id="a newline in a block name is refused",
    ),
    pytest.param(
        instance_case("cluster.hosts.0.rack", f"r{CSI}31m", "rack:"),
        "cluster.hosts[0].rack",
        "contains a control character (U+009B CONTROL SEQUENCE INTRODUCER) at position 2",
        id="a C1 control sequence introducer in a rack name is refused",
    ),
    pytest.param(
        instance_case("workloads.0.budget", f"a{ZWSP}", 'budget: "a'),
        "workloads[0].budget",
        "contains a format character (U+200B ZERO WIDTH SPACE) at position 2",
        id="a zero-width space in a workload's budget path is refused",
    ),
    pytest.param(
        instance_case("usage", {"a\r": 5.0}, "a\\r"),
        "usage['a\\r']",
        "the key contains a control character (U+000D CARRIAGE RETURN) at position 2",
        id="a carriage return in a usage key is refused as a key",
    ),
    pytest.param(
        instance_case("cluster.name", f"test{LSEP}x", 'name: "test'),
        "cluster.name",
        "contains a line separator (U+2028 LINE SEPARATOR) at position 5",
        id="a line separator in the cluster's name is refused",
    ),
    pytest.param(
        instance_case("cluster.host_groups.0.prefix", "g\x7f", "prefix:"),
        "cluster.host_groups[0].prefix",
        "contains a control character (U+007F DELETE) at position 2",
        id="a DEL in a host group's prefix is refused",
    ),
    pytest.param(
        instance_case("workloads.1.hosts", {"h2\ufeff": 8}, "h2\\uFEFF"),
        "workloads[1].hosts['h2\\ufeff']",
        "the key contains a format character (U+FEFF ZERO WIDTH NO-BREAK SPACE) at position 3",
        id="a byte order mark in a running workload's host is refused",
    ),
    pytest.param(
        raw_yaml_case,
        "workloads[0].id",
        "contains a control character (U+001B ESCAPE) at column 8",
        id="an escape character typed into the YAML text is refused with its field and column",
    ),
    pytest.param(
        scenario_case,
        "budgets.children[0].name",
        f"contains {ESC_AT} 2",
        id="a hyperlink in a what-if scenario's budget name is refused",
    ),
    pytest.param(
        config_case({"slurm": {"accounts": {"acct\x07": "a"}}}, "acct"),
        "slurm.accounts['acct\\x07']",
        "the key contains a control character (U+0007 BELL) at position 5",
        id="a bell in a controller config's Slurm account is refused",
    ),
    pytest.param(
        config_case({"kubernetes": {"queues": {"ns": f"a{RLO}"}}}, "ns:"),
        "kubernetes.queues.ns",
        "contains a format character (U+202E RIGHT-TO-LEFT OVERRIDE) at position 2",
        id="a right-to-left override in a controller config's queue mapping is refused",
    ),
    pytest.param(
        trace_case(f"j{ANSI}1,a,8,0,3600,1h,true,0,"),
        "id",
        f"contains {ESC_AT} 2",
        id="an ANSI colour code in a trace id is refused",
    ),
    pytest.param(
        trace_case(f"j1,a{RLO},8,0,3600,1h,true,0,"),
        "budget",
        "contains a format character (U+202E RIGHT-TO-LEFT OVERRIDE) at position 2",
        id="a right-to-left override in a trace budget is refused",
    ),
    pytest.param(
        trace_case('j1,a,8,0,3600,1h,true,0,,,"de\x00bug"', HEADER + ",util,kind"),
        "kind",
        "contains a control character (U+0000 NUL) at position 3",
        id="a NUL in a trace's kind is refused",
    ),
    pytest.param(
        lambda tmp: (
            simulated(tmp, f"{HEADER}{ANSI}\nj1,a,8,0,3600,1h,true,0,\n"),
            tmp / "trace.csv",
            1,
        ),
        "header column 9",
        f"contains {ESC_AT} 9",
        id="an escape sequence in a trace's header is refused",
    ),
    pytest.param(
        events_case,
        "host",
        f"contains {ESC_AT} 3",
        id="an escape sequence in a host event's host is refused",
    ),
    pytest.param(
        plan_case(_rename_first),
        "decisions[0].workload",
        f"contains {ESC_AT} 2",
        id="an escape sequence in a plan's workload id is refused",
    ),
    pytest.param(
        plan_case(_host_key),
        "].hosts['h",
        "contains a format character (U+202E RIGHT-TO-LEFT OVERRIDE) at position 3",
        id="a right-to-left override in a plan's host is refused",
    ),
    pytest.param(
        plan_case(_drained),
        "drained_hosts[0]",
        "contains a control character (U+0009 TAB) at position 3",
        id="a tab in a plan's drained host is refused",
    ),
    pytest.param(
        itp_case,
        "job_id",
        "contains a format character (U+202E RIGHT-TO-LEFT OVERRIDE) at position 3",
        id="a right-to-left override in an imported ITP job id is refused",
    ),
]


@pytest.mark.parametrize(("make", "field", "message"), REFUSED)
def test_a_name_that_is_not_printable_text_is_bad_input(tmp_path, make, field, message):
    args, file, line = make(tmp_path)
    result = alloc(*args)
    assert result.exit_code == 2, result.output
    where = f"{file}:{line}" if line else str(file)
    assert result.stderr.startswith(f"error: {where}: "), result.stderr
    assert field in result.stderr and message in result.stderr, result.stderr
    assert hidden(result.stderr) == [], result.stderr  # the message shows nothing raw
    assert not (tmp_path / "out").exists()  # nothing written


def test_every_name_of_a_valid_lab_passes_and_its_plan_keeps_the_invariants():
    data = lab(**{"workloads.0.id": "olmo-7b ünï 名前 🚀 [bold]"})
    plan = solve_checked(data, "greedy")
    assert "olmo-7b ünï 名前 🚀 [bold]" in {d.workload for d in plan.decisions}


# -- what a cluster reports: shown escaped ----------------------------------------------------

# One name of each kind a cluster may report that no input file may hold.
WAITING = f"ns/w{ANSI}ait{RLO}\t{MARKUP}"
RUNNING = f"ns/r{OSC8}un\r\x00"
LEFT_OUT = f"ns/left{ZWSP}{LSEP}out"
HOST = f"h2{CSI}2J\n"
NOTE = f"Slurm holds it back (Dependency{ANSI}) {MARKUP}"
BUDGETS = {"name": "root", "children": [{"name": "a"}]}


class ReportedCluster:
    """An executor whose cluster reports hostile names: the `executor_for` of a config."""

    def __init__(self, snapshot: Snapshot, notes: dict[WorkloadId, str]) -> None:
        self._snapshot, self._notes = snapshot, notes

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def notes(self) -> dict[WorkloadId, str]:
        return dict(self._notes)

    def no_budget(self) -> dict[WorkloadId, str]:
        return {}


def reported_snapshot() -> Snapshot:
    base = snapshot_of(
        instance(
            hosts=[host("h1"), host("h2")],
            budgets=BUDGETS,
            workloads=[workload("w", 8), workload("r", 8, hosts={"h2": 8})],
        )
    )
    h1, h2 = base.cluster.hosts
    cluster = replace(base.cluster, hosts=(h1, replace(h2, name=HostName(HOST))))
    waiting, running = base.workloads
    return replace(
        base,
        cluster=cluster,
        workloads=(
            replace(waiting, id=WorkloadId(WAITING)),
            replace(running, id=WorkloadId(RUNNING), hosts={HostName(HOST): 8}),
        ),
    )


@pytest.fixture
def live(tmp_path, monkeypatch) -> Path:
    """A controller config whose cluster reports hostile names."""
    snapshot = reported_snapshot()
    solve_checked(snapshot, "greedy")  # the round the commands solve keeps the invariants
    cluster = ReportedCluster(snapshot, {WorkloadId(LEFT_OUT): NOTE})
    monkeypatch.setattr("alloc.controller.build.executor_for", lambda *_, **__: cluster)
    config = tmp_path / "c.yaml"
    state = f"sqlite:///{tmp_path / 's.db'}"
    config.write_text(dumped({"name": "c", "budgets": BUDGETS, "state": state}))
    StateStore(state).close()  # as a controller's first run leaves it
    return config


SHOWN = [
    pytest.param(
        ["explain", "--config", "{config}", WAITING, "--solver", "greedy"],
        [shown(WAITING)],
        id="explain shows a reported id with an escape sequence and a tab escaped",
    ),
    pytest.param(
        ["explain", "--config", "{config}", RUNNING, "--solver", "greedy"],
        [shown(RUNNING), shown(HOST)],
        id="explain shows a reported hyperlink, carriage return, NUL and host escaped",
    ),
    pytest.param(
        ["status", "--config", "{config}", "--solver", "greedy"],
        [f"{shown(LEFT_OUT)}: {shown(NOTE)}"],
        id="status shows a reported note with an escape sequence and rich markup as written",
    ),
    pytest.param(
        ["queue", "--config", "{config}", "--solver", "greedy", "--wide"],
        [shown(WAITING), shown(RUNNING), f"note: {shown(LEFT_OUT)}: {shown(NOTE)}"],
        id="queue's table shows reported ids and notes escaped",
    ),
]


@pytest.mark.parametrize(("args", "expected"), SHOWN)
def test_names_a_cluster_reports_are_shown_escaped(live, args, expected):
    result = alloc(*(str(live) if a == "{config}" else a for a in args))
    assert result.exit_code == 0, result.output
    text = result.stdout + result.stderr
    assert hidden(text) == [], text
    for line in expected:
        assert line in text, text
    assert "\\x1b" in text  # the escape is visible


def test_the_status_table_escapes_a_reported_id_before_it_is_fitted_to_the_width(live):
    result = CliRunner().invoke(
        app, ["status", "--config", str(live), "--solver", "greedy"], env={"COLUMNS": "80"}
    )
    rows = [line for line in result.stdout.splitlines() if "ns/w" in line]
    assert rows and all(len(line) <= 80 for line in rows)  # escaped, measured, then cut
    assert hidden(result.stdout) == []


@pytest.mark.parametrize(
    "form",
    [
        pytest.param("csv", id="queue's CSV keeps reported ids exact, quoted where CSV needs"),
        pytest.param("json", id="queue's JSON keeps reported ids exact, escaped as JSON"),
    ],
)
def test_the_queue_as_data_keeps_reported_names_exact(live, form):
    result = alloc("queue", "--config", live, "--solver", "greedy", "--format", form)
    assert result.exit_code == 0, result.output
    if form == "csv":
        ids = [row["id"] for row in csv.DictReader(io.StringIO(result.stdout, newline=""))]
    else:
        ids = [w["id"] for w in json.loads(result.stdout)["workloads"]]
        assert hidden(result.stdout) == []  # JSON escapes every control (\u001b)
    assert sorted(ids) == sorted([WAITING, RUNNING])


def slurm_node(name: str, features: str) -> dict[str, Any]:
    return {"name": name, "gres": "gpu:8", "state": "idle", "active_features": features}


def slurm_json(argv: tuple[str, ...]) -> str:
    """sinfo and squeue as a Slurm whose admins and users chose hostile names (a node name, a
    node feature, a job's held reason and its comment), in Slurm 22.05's JSON."""
    if argv[0] == "sinfo":
        nodes = [slurm_node(f"n1{OSC8}", f"block-b{ANSI}1"), slurm_node("n2", "block-b1")]
        return json.dumps({"nodes": nodes})
    when = int(NOW.timestamp()) - 600
    running = {
        "job_id": 7,
        "job_state": "RUNNING",
        "account": "a",
        "tres_per_node": "gres:gpu:8",
        "submit_time": when - 60,
        "start_time": when,
        "comment": "alloc: min_runtime=1h",
        "job_resources": {"allocated_nodes": [{"nodename": f"n1{OSC8}"}]},
        "gres_detail": ["gpu:8(IDX:0-7)"],
    }
    held = {
        **running,
        "job_id": 8,
        "job_state": "PENDING",
        "state_reason": f"Dependency{ANSI}",
        "start_time": 0,
        "comment": f"alloc: min_runtime=1h {RLO}",
    }
    return json.dumps({"jobs": [running, held]})


def test_slurm_node_names_features_and_reasons_reach_status_and_explain_escaped(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(SlurmCommands, "_once", lambda self, argv: slurm_json(tuple(argv)))
    config = tmp_path / "c.yaml"
    state = f"sqlite:///{tmp_path / 's.db'}"
    slurm = {"accounts": {"a": "a"}}
    config.write_text(dumped({"name": "c", "budgets": BUDGETS, "slurm": slurm, "state": state}))
    StateStore(state).close()  # as a controller's first run leaves it
    tree = BudgetTree(BudgetNode("root", 1.0, (), (BudgetNode("a", 1.0),)))
    snapshot = SlurmExecutor(SlurmSite({"a": BudgetPath("a")}), tree).snapshot()
    assert {h.block for h in snapshot.cluster.hosts} == {f"b{ANSI}1", "b1"}
    solve_checked(snapshot, "greedy")  # the round both commands solve keeps the invariants
    status = alloc("status", "--config", config, "--solver", "greedy")
    why = alloc("explain", "--config", config, "7", "--solver", "greedy")
    for result in (status, why):
        assert result.exit_code == 0, result.output
        assert hidden(result.stdout + result.stderr) == [], result.stdout
    assert f"note: 8: Slurm holds it back (Dependency{shown(ANSI)})" in status.stderr
    assert shown(f"n1{OSC8}") in why.stdout


def test_an_error_message_shows_a_path_with_an_escape_sequence_escaped(tmp_path):
    result = alloc("solve", tmp_path / f"lab{ANSI}.yaml")
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path}/lab\\x1b[31m.yaml: no such file\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(ANSI + "red", "\\x1b[31mred", id="an ANSI colour code shows as \\x1b"),
        pytest.param(
            OSC8, "\\x1b]8;;http://evil\\x07", id="an OSC 8 hyperlink shows its ESC and BEL"
        ),
        pytest.param(
            "a\tb\nc\rd\x00",
            "a\\tb\\nc\\rd\\x00",
            id="tab, newline, CR and NUL show as Python writes them",
        ),
        pytest.param(
            f"abc{RLO}def", "abc\\u202edef", id="a right-to-left override shows as \\u202e"
        ),
        pytest.param(
            "\U000e0041x", "\\U000e0041x", id="a tag character beyond the BMP shows as \\U000e0041"
        ),
        pytest.param(
            "olmo-7b ünï 名前 🚀 [bold] \\x1b",
            "olmo-7b ünï 名前 🚀 [bold] \\x1b",
            id="printable text of any script is shown as it is",
        ),
    ],
)
def test_shown_writes_what_does_not_display_as_a_visible_escape(text, expected):
    assert shown(text) == expected
    assert hidden(shown(text)) == []


def test_the_one_rule_and_its_readers_keep_their_public_names():
    import alloc.io.names
    import alloc.printable

    assert alloc.printable.__all__ == ["describe", "escape_char", "first_hidden", "shown"]
    assert alloc.io.names.__all__ == [
        "check_name",
        "check_row",
        "problem",
        "unreadable",
        "yaml_field",
    ]


# -- reports and metrics ------------------------------------------------------------------

TEAMS = [
    "</td><script>alert(1)</script>",
    f"nlp/{ANSI}red",
    f"a{RLO}b",
    '"><img src=x onerror=alert(1)>',
]


class Page(HTMLParser):
    """The elements, attributes and text of an HTML page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.cells: list[str] = []
        self._in_td = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs.update(a for a, _ in attrs)
        self._in_td = tag == "td"
        if self._in_td:
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_td = False if tag == "td" else self._in_td

    def handle_data(self, data: str) -> None:
        if self._in_td:
            self.cells[-1] += data


def hostile_run(folder: Path) -> Path:
    from test_report import _team, make_run

    teams = {t: _team(90.0 + i, 0.8 + 0.05 * i, 30.0, 600.0, i) for i, t in enumerate(TEAMS)}
    return make_run(folder, teams=teams)


def assert_no_injection(text: str) -> Page:
    page = Page(text)
    assert "script" not in page.tags and not {a for a in page.attrs if a.startswith("on")}
    assert page.tags <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "p",
        "b",
        "table",
        "tr",
        "th",
        "td",
        "figure",
        "img",
        "figcaption",
        "code",
        "span",
        "br",
    }
    assert hidden(text) == []
    for team in TEAMS:
        assert any(shown(team) in cell for cell in page.cells), team
    return page


def test_report_html_shows_hostile_team_names_as_text(tmp_path):
    from alloc.report import write_report

    path = write_report(hostile_run(tmp_path / "run"), f"run {ANSI}<b>x</b>")
    assert_no_injection(path.read_text(encoding="utf-8"))


def test_comparison_html_shows_hostile_team_names_and_labels_as_text(tmp_path):
    from alloc.report import write_comparison

    runs = [("base", hostile_run(tmp_path / "a")), (f"alt{RLO}<i>", hostile_run(tmp_path / "b"))]
    path = write_comparison(tmp_path / "cmp", runs)
    page = assert_no_injection(path.read_text(encoding="utf-8"))
    assert "i" not in page.tags


def browser() -> str:
    """A headless Chromium; the test fails without one under ALLOC_REQUIRE_BROWSER=1 (set by
    .ci/run, which installs it) and is skipped elsewhere."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("ALLOC_REQUIRE_BROWSER") == "1":
            pytest.fail("ALLOC_REQUIRE_BROWSER=1 but no chromium on PATH")
        pytest.skip("no headless chromium here")
    return found


def test_a_headless_browser_reads_hostile_team_names_in_report_html_as_text(tmp_path):
    from alloc.report import write_report

    chromium = browser()
    path = write_report(hostile_run(tmp_path / "run"), "hostile")
    dom = subprocess.run(
        [str(chromium), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    page = Page(dom)  # the document as the browser built it
    assert "script" not in page.tags and "onerror" not in page.attrs
    for team in TEAMS:
        assert shown(team) in page.cells, team


def test_prometheus_labels_of_hostile_budget_names_parse_back_exactly():
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from alloc.controller.loop import RoundOutcome
    from alloc.controller.metrics import ControllerMetrics

    names = ['a"b\\c\nd', f"e{ANSI}{RLO}f"]
    base = snapshot_of(instance(workloads=[workload("w1", 8), workload("w2", 8, budget="b")]))
    tree = BudgetTree(BudgetNode("root", 1.0, (), tuple(BudgetNode(n, 0.5) for n in names)))
    snapshot = replace(
        base,
        budgets=tree,
        workloads=tuple(
            replace(w, budget=BudgetPath(n)) for w, n in zip(base.workloads, names, strict=True)
        ),
    )
    plan = solve_checked(snapshot, "greedy")
    metrics = ControllerMetrics()
    for at_s in (0.0, 3600.0):
        metrics.observe(RoundOutcome(at_s, 1, plan, snapshot))
    text = generate_latest(metrics.registry).decode()
    assert 'budget="a\\"b\\\\c\\nd"' in text  # escaped as the exposition format says
    budgets = {
        s.labels["budget"]
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if "budget" in s.labels
    }
    assert budgets == set(names)

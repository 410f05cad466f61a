"""`alloc export PLAN.json --to slurm`: a bash script of the executor's own `scontrol` steps
(alloc.adapters.slurm.actions), every argument quoted, so hostile job ids, host names and node
reasons stay data. Scripts are checked with `bash -n` and run with a fake `scontrol` that
records its argv. Every plan here is solved and checked (conftest.solve_checked); the real
Slurm is driven in tests/test_export_slurm_live.py."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, workload
from typer.testing import CliRunner

from alloc.adapters.shell import quote
from alloc.adapters.slurm.actions import (
    DRAINED_REASON,
    ClusterSeen,
    SlurmAction,
    implied_by,
    plan_actions,
)
from alloc.adapters.slurm.script import describe, slurm_script
from alloc.cli.app import app
from alloc.domain import HostName, HostState, Plan, Snapshot, WorkloadId
from alloc.io import dump_plan
from alloc.printable import shown

RECORDER = '#!/usr/bin/env bash\nprintf "%s\\0" "$#" "$@" >> "$ALLOC_TEST_RECORD"\n'


def one_of_each() -> Plan:
    """gpu-node1 runs unallocated job 11, gpu-node2 protected 12, gpu-node3 is unhealthy and
    empty. Team a's 13 (priority 5) takes gpu-node1 from 11; its 14 (priority 0) waits."""
    plan = solve_checked(
        instance(
            hosts=[host("gpu-node1"), host("gpu-node2"), host("gpu-node3", state="unhealthy")],
            workloads=[
                workload("11", 8, "b", "0", hosts={"gpu-node1": 8}),
                workload("12", 8, "b", "2h", hosts={"gpu-node2": 8}, started=ago(hours=1)),
                workload("13", 8, "a", priority=5),
                workload("14", 8, "a", priority=0),
            ],
        ),
        solver="greedy",
    )
    assert [(d.workload, d.action.value) for d in plan.decisions] == [
        ("11", "preempt"),
        ("12", "keep"),
        ("13", "start"),
        ("14", "wait"),
    ]
    return plan


SCRIPT = """\
#!/usr/bin/env bash
# alloc plan for Slurm: the full round of 2026-11-30T12:00:00+00:00 ({solver}, {status})
# 4 actions (5 scontrol commands)
# cluster: read by a test
# Review it, then run it with bash (`alloc export ... --apply` runs the same commands).
# It stops at the first command that fails (set -e); those before it have been run.
set -euo pipefail

# job 11: preempt: requeue, held
scontrol requeuehold -- 11

# job 14: wait: hold
scontrol hold -- 14

# job 13: start: pin to gpu-node1, then release
scontrol update JobId=13 NodeList=gpu-node1 NumNodes=1
scontrol release -- 13

# host gpu-node3: drain: mark drained, ready for repair
scontrol update NodeName=gpu-node3 State=DRAIN 'Reason=alloc: drain complete, ready for repair (xid 79)'
"""  # noqa: E501 - the script's own line


def test_a_plan_with_starts_preemptions_waits_and_drains_becomes_this_script():
    plan = one_of_each()
    seen = ClusterSeen(implied_by(plan).jobs, {HostName("gpu-node3"): "xid 79"})
    expected = SCRIPT.format(solver=plan.report.solver, status=plan.report.status)
    assert slurm_script(plan, plan_actions(plan, seen), ["cluster: read by a test"]) == expected


def test_actions_with_nothing_to_do_or_that_cannot_be_done_are_comments_only():
    plan = one_of_each()
    jobs = dict(implied_by(plan).jobs)
    jobs[WorkloadId("11")] = dataclasses.replace(jobs[WorkloadId("11")], state="PENDING")
    del jobs[WorkloadId("13")]
    script = slurm_script(plan, plan_actions(plan, ClusterSeen(jobs)), [])
    assert "# 2 actions (2 scontrol commands); 1 with nothing to do, 1 that cannot be done" in (
        script
    )
    assert "\n# job 11: preempt: nothing to do (already stopped)\n\n" in script
    assert "\n# job 13: start: NOT DONE: no such job in Slurm\n\n" in script
    assert "requeuehold" not in script and "JobId=13" not in script


# Each is a job id, a host name and a node's reason at once; {dir} is the test's folder.
HOSTILE = [
    'it\'s "quoted"',
    "new\nline\r\n# not a comment",
    "$(touch {dir}/pwned)",
    "`touch {dir}/pwned`",
    ";rm -rf {dir}/victim",
    "ünïcødé ✓ 🚀 \u202e\u2028 zero\u200bwidth",
    "x" * 10_000,
    "-V",
    "${{HOME}} * ~ ! & | > {dir}/pwned < /dev/null \\ \t",
]


def renamed(snapshot: Snapshot, names: dict[str, str]) -> Snapshot:
    """The snapshot with workloads and hosts renamed (beyond what an instance file allows)."""
    hosts = tuple(
        dataclasses.replace(h, name=HostName(names[h.name])) for h in snapshot.cluster.hosts
    )
    workloads = tuple(
        dataclasses.replace(
            w,
            id=WorkloadId(names[w.id]),
            hosts={HostName(names[h]): g for h, g in w.hosts.items()},
        )
        for w in snapshot.workloads
    )
    cluster = dataclasses.replace(snapshot.cluster, hosts=hosts)
    return dataclasses.replace(snapshot, cluster=cluster, workloads=workloads)


def hostile_plan(folder: Path, printable: bool = False, bounded: bool = False) -> Plan:
    """Hosts h0..h3 ready, h4 unhealthy and empty; unallocated p runs on h0; s0..s3
    (priority 5) start on h0..h3, so p is preempted; w0..w4 wait. Every name is hostile;
    with `printable`, names as a plan file may hold them (issue 18: no control or format
    character), their control characters written as visible escapes (`new\\nline`); with
    `printable` or `bounded`, none longer than a plan file's names may be (200 characters)."""
    names = [n.format(dir=folder) for n in HOSTILE]
    if printable:
        names = [shown(n) for n in names]
    if printable or bounded:
        names = [n[:150] for n in names]
    plain = snapshot_of(
        instance(
            hosts=[host(f"h{i}", state="unhealthy" if i == 4 else "ready") for i in range(5)],
            workloads=[
                workload("p", 8, "b", "0", hosts={"h0": 8}),
                *(workload(f"s{i}", 8, "a", priority=5) for i in range(4)),
                *(workload(f"w{i}", 8, "a") for i in range(5)),
            ],
        )
    )
    ids = [names[7], *names[:7], names[8], "w-" + names[0]]  # p is "-V"
    workload_names = dict(
        zip(["p", *(f"s{i}" for i in range(4)), *(f"w{i}" for i in range(5))], ids, strict=True)
    )
    host_names = {f"h{i}": "host-" + names[(3 + i) % len(names)] for i in range(5)}
    snapshot = renamed(plain, workload_names | host_names)
    assert snapshot.cluster.hosts[4].state is HostState.UNHEALTHY
    plan = solve_checked(snapshot)
    assert plan.by_workload[WorkloadId("-V")].action.value == "preempt"
    assert (
        sorted(d.action.value for d in plan.decisions) == ["preempt"] + ["start"] * 4 + ["wait"] * 5
    )
    assert plan.drained_hosts == (host_names["h4"],)
    return plan


def recorded(script: Path, folder: Path, fail_at: int = 0) -> tuple[int, list[list[str]]]:
    """Run `script` with a fake scontrol on PATH; its exit code and each call's arguments. With
    fail_at, the fake fails on that call (counting from 1)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "scontrol"
    body = RECORDER
    if fail_at:
        body += 'n=$(cat "$ALLOC_TEST_RECORD.n" 2>/dev/null || echo 0); n=$((n+1))\n'
        body += f'echo $n > "$ALLOC_TEST_RECORD.n"; [ $n -lt {fail_at} ] || exit 1\n'
    fake.write_text(body)
    fake.chmod(0o755)
    record = folder / "record"
    record.unlink(missing_ok=True)
    Path(f"{record}.n").unlink(missing_ok=True)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "ALLOC_TEST_RECORD": str(record),
    }
    done = subprocess.run(
        ["bash", str(script)], env=env, cwd=folder, capture_output=True, timeout=60
    )
    fields = record.read_bytes().decode("utf-8").split("\0")[:-1] if record.exists() else []
    calls = []
    while fields:
        n = int(fields.pop(0))
        calls.append(fields[:n])
        del fields[:n]
    return done.returncode, calls


def steps(actions: tuple[SlurmAction, ...]) -> list[list[str]]:
    """Each step's arguments after `scontrol` (the program the script calls)."""
    out = []
    for a in actions:
        for s in a.steps:
            assert s.argv[0] == "scontrol"
            out.append(list(s.argv[1:]))
    return out


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "victim").mkdir()
    return tmp_path


def harmless(folder: Path) -> None:
    assert not (folder / "pwned").exists()
    assert (folder / "victim").is_dir()


def test_hostile_ids_host_names_and_reasons_stay_data(folder):
    plan = hostile_plan(folder)
    reasons = [n.format(dir=folder) for n in HOSTILE]
    drained = plan.drained_hosts[0]
    for reason in reasons:
        actions = plan_actions(plan, ClusterSeen(implied_by(plan).jobs, {drained: reason}))
        script = folder / "alloc-plan.sh"
        script.write_text(slurm_script(plan, actions, [f"cluster: reason {reason}"]))
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
        code, calls = recorded(script, folder)
        assert code == 0
        assert calls == steps(actions)
        assert calls[-1][-1] == f"Reason={DRAINED_REASON} ({reason}"[:207] + (
            ")" if len(reason) < 150 else ""
        )
        harmless(folder)


def test_comments_cannot_be_broken_by_names(folder):
    plan = hostile_plan(folder)
    actions = plan_actions(plan, implied_by(plan))
    text = slurm_script(plan, actions, ["cluster: " + HOSTILE[1]])
    for a in actions:
        line = describe(a)
        assert line.isprintable() and len(line) < 1_000, line
        for s in a.steps:
            command = " ".join(quote(arg) for arg in s.argv)
            assert command.isprintable(), command  # nothing hides a line from a reader
            text = text.replace(command + "\n", "", 1)
    # what is left is comments, blank lines and the script's own lines
    for line in text.splitlines():
        assert line == "" or line.startswith("#") or line == "set -euo pipefail", line
    assert "new\\nline\\r\\n# not a comment" in text


def test_the_script_stops_at_the_first_command_that_fails(folder):
    plan = one_of_each()
    script = folder / "alloc-plan.sh"
    script.write_text(slurm_script(plan, plan_actions(plan, implied_by(plan)), []))
    code, calls = recorded(script, folder, fail_at=2)
    assert code != 0
    assert calls == [["requeuehold", "--", "11"], ["hold", "--", "14"]]


def cli(*args: str | Path):
    return CliRunner().invoke(app, ["export", *(str(a) for a in args)])


def test_the_cli_refuses_a_plan_file_whose_names_hold_control_characters(folder):
    plan_file = folder / "plan.json"
    plan_file.write_text(dump_plan(hostile_plan(folder, bounded=True)))
    result = cli(plan_file, "--to", "slurm", "-o", folder)
    assert result.exit_code == 2
    assert "contains a control character (U+000A LINE FEED) at position 4" in result.stderr
    assert not (folder / "alloc-plan.sh").exists()


def test_the_cli_exports_the_hostile_plan_from_its_json_and_the_script_runs_as_intended(folder):
    plan = hostile_plan(folder, printable=True)
    plan_file = folder / "plan.json"
    plan_file.write_text(dump_plan(plan))
    out = folder / "out"
    out.mkdir()
    result = cli(plan_file, "--to", "slurm", "-o", out)
    assert result.exit_code == 0, result.output + result.stderr
    assert "workload ids are not Slurm job ids" in result.stderr
    script = out / "alloc-plan.sh"
    mask = os.umask(0)
    os.umask(mask)
    assert script.stat().st_mode & 0o777 == 0o755 & ~mask
    assert sorted(p.name for p in out.iterdir()) == ["alloc-plan.sh"]  # no temporary left
    code, calls = recorded(script, folder)
    assert code == 0 and calls == steps(plan_actions(plan, implied_by(plan)))
    harmless(folder)
    printed = cli(plan_file, "--to", "slurm")
    assert printed.exit_code == 0 and printed.stdout == script.read_text(encoding="utf-8")


def test_the_cli_prints_the_script_of_a_plan_without_reading_any_cluster(tmp_path):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(dump_plan(one_of_each()))
    result = cli(plan_file, "--to", "slurm")
    assert result.exit_code == 0 and result.stderr == ""
    expected = SCRIPT.replace(" (xid 79)", "")
    header = result.stdout.split("set -euo pipefail")[0]
    assert "# cluster: not read (no --config)" in header
    assert result.stdout.split("set -euo pipefail")[1] == expected.split("set -euo pipefail")[1]


CONTROLLER = """\
executor: {executor}
budgets: {{name: lab, children: [{{name: a, share: 100%}}]}}
"""


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["{missing}", "--to", "slurm"], "no such file", id="a missing plan file"),
        pytest.param(["{bad_json}", "--to", "slurm"], "not valid JSON", id="a plan not JSON"),
        pytest.param(
            ["{bad_action}", "--to", "slurm"], "decisions[0].action", id="a plan with a bad field"
        ),
        pytest.param(["{nul}", "--to", "slurm"], "decisions[1].workload", id="a NUL in an id"),
        pytest.param(
            ["{plan}", "--to", "lsf"],
            "--to: expected slurm or kubernetes, got 'lsf'",
            id="an unknown target",
        ),
        pytest.param(
            ["{plan}", "--to", "slurm", "-o", "{tmp}/nowhere"],
            "nowhere does not exist (create it first)",
            id="-o into a missing folder",
        ),
        pytest.param(
            ["{plan}", "--to", "slurm", "-o", "{plan}"], "is not a folder", id="-o into a file"
        ),
        pytest.param(
            ["{plan}", "--to", "slurm", "--apply"],
            "--config: required with --apply",
            id="--apply without --config",
        ),
        pytest.param(
            ["{plan}", "--to", "slurm", "--config", "{tmp}/none.yaml"],
            "none.yaml",
            id="a missing config",
        ),
        pytest.param(
            ["{plan}", "--to", "slurm", "--config", "{sim}"],
            "executor: --to slurm reads a Slurm cluster",
            id="a config of another executor",
        ),
    ],
)
def test_bad_input_is_exit_2_naming_what_is_wrong_and_writes_nothing(tmp_path, args, message):
    plan = one_of_each()
    files = {
        "plan": tmp_path / "plan.json",
        "missing": tmp_path / "missing.json",
        "bad_json": tmp_path / "bad.json",
        "bad_action": tmp_path / "bad-action.json",
        "nul": tmp_path / "nul.json",
        "sim": tmp_path / "controller.yaml",
    }
    text = dump_plan(plan)
    files["plan"].write_text(text)
    files["bad_json"].write_text(text[:-10])
    files["bad_action"].write_text(text.replace('"preempt"', '"jump"'))
    files["nul"].write_text(text.replace('"12"', '"1\\u00002"'))
    files["sim"].write_text(CONTROLLER.format(executor="kubernetes"))
    out = tmp_path / "out"
    out.mkdir()
    argv = [a.format(tmp=tmp_path, **files) for a in args]
    if "-o" not in argv:
        argv += ["-o", str(out)]
    before = sorted(tmp_path.rglob("*"))
    result = cli(*argv)
    assert result.exit_code == 2, result.output + result.stderr
    assert message in result.stderr.replace("\n", "")
    assert sorted(tmp_path.rglob("*")) == before
    assert not (tmp_path / "nowhere").exists()

"""Hostile names, labels and annotations on the real control plane (tests/k8s_local.py) never
break a round or an export: pod names of the API's maximum length, label values of theirs,
annotations holding quotes, newlines, `$( )`, escape sequences, unicode and 100,000
characters. The round places what it can, says why the rest waits, and the exported script,
run with the real kubectl, does what the plan says and nothing else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from k8s_local import KUBECONFIG, Kube, controller_config, kube_of
from typer.testing import CliRunner

from alloc.adapters.kubernetes.executor import KubernetesExecutor
from alloc.adapters.kubernetes.read import KubeSite
from alloc.cli.app import app
from alloc.domain import Action, BudgetNode, BudgetPath, BudgetTree, Policy
from alloc.io import dump_plan
from alloc.round import run_round
from alloc.solve.validate import validate

KUBECTL = Path(os.environ.get("ALLOC_TEST_KUBECTL", "/var/cache/k8s-local/bin/kubectl"))
TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))
PWNED = Path("/tmp/alloc-pwned")
EVIL = "'\"$(touch /tmp/alloc-pwned)`touch /tmp/alloc-pwned`;\n\r\x1b[31m\u202e ünï 名前 🚀"


@pytest.fixture
def kube():
    yield from kube_of()


def test_hostile_names_and_annotations_never_break_a_round_or_an_export(kube: Kube, tmp_path):
    PWNED.unlink(missing_ok=True)
    long_name = ("a" * 62 + ".") * 4 + "b"  # 253 characters, the API's longest pod name
    kube.pod(long_name, 8, queue="nlp", annotations={"note": EVIL * 2000})  # ~100,000 chars
    for key in ("min-runtime", "priority", "topology", "resumable", "gang-size"):
        kube.pod(
            f"bad-{key}",
            1,
            queue="vision",
            min_runtime=EVIL if key == "min-runtime" else "1h",
            annotations={f"alloc.dev/{key}": EVIL},
        )
    kube.pod("g-0", 8, queue="nlp", gang="g" * 63, annotations={"alloc.dev/gang-size": "2"})
    kube.pod("g-1", 8, queue="nlp", gang="g" * 63, annotations={"alloc.dev/gang-size": "2"})
    ns = kube.namespace
    site = KubeSite(
        queues={f"{ns}/nlp": BudgetPath("nlp"), f"{ns}/vision": BudgetPath("vision")},
        namespaces=(ns,),
    )
    executor = KubernetesExecutor(site, TREE, kube.api, Policy(solver="greedy", time_limit_s=5))
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    started = {d.workload for d in plan.decisions if d.action is Action.START}
    assert f"{ns}/{long_name}" in started and f"{ns}/{'g' * 63}" in started
    notes = executor.notes()
    assert "alloc.dev/gang-size: expected a whole number" in notes[f"{ns}/bad-gang-size"]
    assert notes[f"{ns}/bad-min-runtime"].startswith("alloc.dev/min-runtime: ")

    # exported, read back, run with the real kubectl: the plan's placements, nothing else
    (tmp_path / "plan.json").write_text(dump_plan(plan))
    config = tmp_path / "controller.yaml"
    config.write_text(controller_config(tmp_path / "s.db", KUBECONFIG, ns))
    out = tmp_path / "out"
    out.mkdir()
    args = ["export", str(tmp_path / "plan.json"), "--to", "kubernetes", "--config", str(config)]
    result = CliRunner().invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all((out / "alloc-plan.yaml").read_text()) if d]
    assert docs and all(d["path"].startswith("/api/v1/") for d in docs)
    script = (out / "alloc-plan.sh").read_text()
    assert all(line.isprintable() for line in script.splitlines())
    env = {**os.environ, "KUBECTL": str(KUBECTL), "KUBECONFIG": str(KUBECONFIG)}
    done = subprocess.run(["bash", str(out / "alloc-plan.sh")], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    where = kube.placements()
    for d in plan.decisions:
        if d.action is Action.START and len(d.hosts) == 1:
            assert where[d.workload.split("/", 1)[1]] == next(iter(d.hosts))
    assert not PWNED.exists()

    # and the controller's own rounds and status go on
    db_config = ["--config", str(config)]
    result = CliRunner().invoke(app, ["controller", "run", *db_config, "--rounds", "2"])
    assert result.exit_code == 0, result.output + result.stderr
    status = CliRunner().invoke(app, ["status", *db_config])
    assert status.exit_code == 0, status.output
    assert "bad-gang-size" in status.output
    assert not PWNED.exists()

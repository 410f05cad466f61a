"""The controller against a real Kubernetes control plane (tests/k8s_local.py): `alloc
controller run --executor kubernetes` reads the cluster, binds what the plan says, keeps its
ledger, plans and actions in its state database exactly as against Slurm, and `alloc status`
says why a pod waits."""

from __future__ import annotations

import pytest
from k8s_local import KUBECONFIG, Kube, controller_config, kube_of
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.controller.state import StateStore


@pytest.fixture
def kube():
    yield from kube_of()


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_controller_binds_pods_and_records_runs_plans_and_actions(kube: Kube, tmp_path):
    db = tmp_path / "state.db"
    config = tmp_path / "controller.yaml"
    config.write_text(controller_config(db, KUBECONFIG, kube.namespace))
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    kube.pod("one", 4, queue="vision", min_runtime="30m", annotations={"alloc.dev/priority": "2"})
    kube.pod("odd", 1, queue="vision", min_runtime="soon")
    result = run("controller", "run", "--config", str(config), "--rounds", "1")
    assert result.exit_code == 0, result.output + result.stderr
    assert "round 1: full round, 3 started, 0 preempted, 0 failed" in result.stderr
    where = kube.placements()
    assert all(where.values()) and where["g-0"] != where["g-1"]
    # The second round sees them running: their runs open in the ledger.
    result = run("controller", "run", "--config", str(config), "--rounds", "1")
    assert result.exit_code == 0, result.output + result.stderr
    store = StateStore(f"sqlite:///{db}")
    gang = f"{kube.namespace}/g"
    runs = {r.workload: r for r in store.runs()}
    assert set(runs) == {gang, f"{kube.namespace}/one", f"{kube.namespace}/odd"}
    assert (runs[gang].budget, runs[gang].gpus, runs[gang].charged) == ("nlp", 16, True)
    assert runs[f"{kube.namespace}/odd"].charged is False  # unallocated: its annotation
    first = min(store.rounds(), key=lambda r: r["id"])
    decided = {d["workload"]: d for d in store.decisions_of(first["id"])}
    assert decided[gang]["action"] == "start" and len(decided[gang]["hosts"]) == 2
    status = run("status", "--config", str(config))
    assert status.exit_code == 0, status.output
    assert "alloc.dev/min-runtime: " in status.output  # why odd runs unallocated

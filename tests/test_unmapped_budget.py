"""A job that names a budget the site maps to no node (a Slurm account missing from
slurm.accounts, a Kubernetes namespace and queue missing from kubernetes.queues) runs unfunded,
and every view says what it named: the executor's note (status, queue), and live `alloc
explain`, whose headline and facts say "its account 'physics' is not mapped to a budget node
(slurm.accounts)" rather than "it names no budget" (which holds only for a job that names
none)."""

from __future__ import annotations

import json

import pytest
from conftest import NOW, solve_checked
from test_hostile_names import alloc, dumped
from test_kubernetes_read import pod, read
from test_slurm_read import job, node

from alloc.adapters.slurm.commands import SlurmCommands
from alloc.domain import BudgetNode, BudgetTree, Workload, WorkloadId
from alloc.policy.contract import unfunded_because

UNMAPPED = "its account 'physics' is not mapped to a budget node (slurm.accounts)"
BUDGETS = {"name": "root", "children": [{"name": "nlp"}]}


def slurm_json(argv: tuple[str, ...]) -> str:
    """sinfo and squeue of a Slurm with two idle nodes and two pending jobs: 1 of account
    nlp (mapped), 2 of account physics (not)."""
    if argv[0] == "sinfo":
        return json.dumps({"nodes": [node("n1"), node("n2")]})
    jobs = [job(1, state_reason="Priority"), job(2, account="physics", state_reason="Priority")]
    return json.dumps({"jobs": jobs})


def live_config(tmp_path, monkeypatch):
    monkeypatch.setattr(SlurmCommands, "_once", lambda self, argv: slurm_json(tuple(argv)))
    config = tmp_path / "c.yaml"
    slurm = {"accounts": {"nlp": "nlp"}}
    state = f"sqlite:///{tmp_path / 's.db'}"
    config.write_text(dumped({"name": "c", "budgets": BUDGETS, "slurm": slurm, "state": state}))
    return config  # no state yet: the controller has not run (its ledger is taken as empty)


def test_live_explain_says_which_account_is_unmapped(tmp_path, monkeypatch):
    config = live_config(tmp_path, monkeypatch)
    from alloc.cli.live_cmd import live

    solve_checked(live(config), "greedy")  # the round explain solves keeps the invariants
    why = alloc("explain", "--config", config, "2", "--solver", "greedy")
    assert why.exit_code == 0, why.output
    head = why.stdout.splitlines()[0]
    assert head.startswith("2: ") and "(unfunded)" in head
    assert UNMAPPED in head and "names no budget" not in why.stdout
    assert f"unfunded: {UNMAPPED}; never protected, never charged" in why.stdout
    assert "note: 2:" not in why.stderr  # the headline says what the note would


def test_status_and_queue_still_note_the_unmapped_account(tmp_path, monkeypatch):
    config = live_config(tmp_path, monkeypatch)
    for command in ("status", "queue"):
        result = alloc(command, "--config", config, "--solver", "greedy")
        assert result.exit_code == 0, result.output
        assert f"note: 2: {UNMAPPED}: it runs unfunded" in result.stderr
        assert "note: 1:" not in result.stderr  # its account is mapped


def test_a_kubernetes_namespace_and_queue_mapped_to_no_node_are_named():
    """kubernetes.queues maps vision, nlp and nlp/pretrain: a pod in physics, or in nlp
    with a queue it does not map, is read as Slurm's unmapped accounts are."""
    labels = {"alloc.dev/queue": "other"}
    found = read([pod("a", namespace="physics"), pod("b", namespace="nlp", labels=labels)])
    physics, nlp = found["physics/a"], found["nlp/b"]
    assert physics.workload.budget is None
    assert physics.no_budget == (
        "its namespace 'physics' is not mapped to a budget node (kubernetes.queues)"
    )
    assert physics.problem == f"{physics.no_budget}: it runs unfunded"
    assert nlp.workload.budget == "nlp/team2" and nlp.no_budget == "" and nlp.problem == ""


def test_a_kubernetes_queue_label_is_named_when_neither_it_nor_its_namespace_maps():
    labels = {"alloc.dev/queue": "q"}
    found = read([pod("a", namespace="physics", labels=labels)])
    assert found["physics/a"].no_budget == (
        "its namespace 'physics' and queue 'q' are not mapped to a budget node (kubernetes.queues)"
    )


def test_a_job_naming_no_budget_is_said_so_and_what_it_named_otherwise():
    tree = BudgetTree(BudgetNode("root", 1.0, (), (BudgetNode("nlp", 1.0),)))
    w = Workload(id=WorkloadId("w"), budget=None, gpus=1, min_runtime_s=0, submitted=NOW)
    assert unfunded_because(tree, w) == "it names no budget"
    assert unfunded_because(tree, w, UNMAPPED) == UNMAPPED


@pytest.mark.parametrize("command", ["status", "queue", "explain"])
def test_a_real_cluster_is_read_before_the_controller_first_ran_creating_nothing(
    tmp_path, monkeypatch, command
):
    """Tutorial 6 looks at the queue before starting the controller: on a Slurm or
    Kubernetes config whose SQLite state is not written yet, the read-only commands read
    the cluster with an empty ledger, say so, and create no state (a simulated cluster's
    config is refused instead: tests/test_live_errors.py)."""
    config = live_config(tmp_path, monkeypatch)
    args = [command, "--config", config, *(["2"] if command == "explain" else [])]
    result = alloc(*args, "--solver", "greedy")
    assert result.exit_code == 0, result.output
    assert f"note: no state at {tmp_path / 's.db'} yet (the controller has not run)" in (
        " ".join(result.stderr.split())
    )
    assert not (tmp_path / "s.db").exists()

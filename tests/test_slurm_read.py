"""How a Slurm cluster reads as alloc's hosts and workloads (no Slurm needed: the JSON here has
the shape of Slurm 22.05's `sinfo --json` and `squeue --json`)."""

from __future__ import annotations

import pytest

from alloc.adapters.slurm.contract import read_contract
from alloc.adapters.slurm.read import SlurmSite, gpus_of, hosts_from_sinfo, jobs_from_squeue
from alloc.domain import BudgetPath, Cluster, HostState, Topology

EIGHT_H = 8 * 3600.0
SITE = SlurmSite(accounts={"nlp": BudgetPath("nlp/olmo"), "vision": BudgetPath("vision")})


@pytest.mark.parametrize(
    ("comment", "min_runtime_s", "resumable", "priority", "topology"),
    [
        ("alloc: min_runtime=2h", 7200.0, True, 0, None),
        (
            "alloc: min_runtime=90s resumable=0 priority=3 topology=block",
            90.0,
            False,
            3,
            Topology.BLOCK,
        ),
        ("nightly eval; alloc: min_runtime=15m topology=any", 900.0, True, 0, Topology.ANY),
        ("alloc:   min_runtime=1h30m   resumable=true  ", 5400.0, True, 0, None),
        ("alloc: min_runtime=0", 0.0, True, 0, None),
    ],
    ids=["minimum runtime only", "every field", "text before the mark", "spaces", "zero"],
)
def test_a_comment_declares_the_contract(comment, min_runtime_s, resumable, priority, topology):
    c = read_contract(comment, EIGHT_H)
    assert (c.min_runtime_s, c.resumable, c.priority, c.topology, c.problem) == (
        min_runtime_s,
        resumable,
        priority,
        topology,
        "",
    )


@pytest.mark.parametrize(
    ("comment", "problem"),
    [
        ("alloc: resumable=1", "min_runtime is missing"),
        ("alloc: min_runtime=soon", "min_runtime: expected a duration"),
        ("alloc: min_runtime=9h", "above the policy's maximum (8h)"),
        ("alloc: min_runtime=1h min_runtime=2h", "min_runtime given twice"),
        ("alloc: min_runtime=1h gpus=8", "unknown key 'gpus'"),
        ("alloc: min_runtime=1h priority=high", "priority: expected an integer"),
        ("alloc: min_runtime=1h resumable=maybe", "resumable: expected 1 or 0"),
        ("alloc: min_runtime=1h topology=rack", "topology: expected block or any"),
        ("alloc: min_runtime=1h $(rm -rf /)", "expected key=value"),
        ("alloc: min_runtime=1h " + "x" * 5000, "longer than 4096 characters"),
    ],
    ids=[
        "no minimum runtime",
        "bad duration",
        "above the maximum",
        "twice",
        "unknown key",
        "bad priority",
        "bad resumable",
        "bad topology",
        "shell text",
        "huge",
    ],
)
def test_a_bad_contract_makes_the_job_unallocated_and_says_why(comment, problem):
    c = read_contract(comment, EIGHT_H)
    assert c.min_runtime_s == 0.0
    assert problem in c.problem


@pytest.mark.parametrize("comment", [None, "", "just a note", "ALLOC: min_runtime=1h"])
def test_a_job_without_a_contract_is_unallocated_without_a_problem(comment):
    assert read_contract(comment, EIGHT_H) == read_contract(None, EIGHT_H)
    assert read_contract(comment, EIGHT_H).min_runtime_s == 0.0


@pytest.mark.parametrize(
    ("gres", "expected"),
    [
        ("gpu:8", (8, None)),
        ("gpu:h100:4(S:0-1)", (4, "h100")),
        ("gres:gpu:16", (16, None)),
        ("gres:gpu:a100:2", (2, "a100")),
        ("", (0, None)),
        (None, (0, None)),
        ("gpu:8(IDX:0-7)", (8, None)),
        ("craynetwork:4,gpu:h100:8", (8, "h100")),
    ],
)
def test_gpus_are_read_from_gres_strings(gres, expected):
    assert gpus_of(gres, "gpu") == expected


def node(name, gres="gpu:8", state="idle", flags=(), reason="", features=""):
    return {
        "name": name,
        "gres": gres,
        "state": state,
        "state_flags": list(flags),
        "reason": reason,
        "active_features": features,
    }


def test_nodes_map_to_hosts_with_their_state_block_and_rack():
    data = {
        "nodes": [
            node("n1", features="block-b1,rack-r1"),
            node("n2", "gpu:h100:4", state="mixed", features="rack-r2,block-b2"),
            node("n3", state="idle", flags=["DRAIN"], reason="xid 79"),
            node("n4", state="idle", flags=["DRAIN"], reason="retire: end of lease"),
            node("n5", state="down", reason="not responding"),
            node("n6", state="idle", flags=["NOT_RESPONDING"]),
            node("cpu1", gres=""),
        ]
    }
    hosts = {h.name: h for h in hosts_from_sinfo(data, SITE)}
    assert sorted(hosts) == ["n1", "n2", "n3", "n4", "n5", "n6"]  # no GPU, not ours
    assert (hosts["n1"].gpus, hosts["n1"].gpu_type, hosts["n1"].block, hosts["n1"].rack) == (
        8,
        "gpu",
        "b1",
        "r1",
    )
    assert (hosts["n2"].gpus, hosts["n2"].gpu_type, hosts["n2"].block) == (4, "h100", "b2")
    assert (hosts["n3"].block, hosts["n3"].rack) == ("default", "n3")
    assert [hosts[n].state for n in ("n1", "n2", "n3", "n4", "n5", "n6")] == [
        HostState.READY,
        HostState.READY,
        HostState.UNHEALTHY,
        HostState.RETIRED,
        HostState.MAINTENANCE,
        HostState.MAINTENANCE,
    ]


def job(job_id, state="PENDING", account="nlp", comment="alloc: min_runtime=2h", **more):
    out = {
        "job_id": job_id,
        "job_state": state,
        "account": account,
        "comment": comment,
        "submit_time": 1796000000,
        "start_time": 0,
        "node_count": 1,
        "partition": "gpu",
        "tres_per_node": "gres:gpu:8",
        "tres_per_job": None,
        "state_reason": "JobHeldUser",
    }
    return out | more


CLUSTER = Cluster("t", hosts_from_sinfo({"nodes": [node(f"n{i}") for i in range(1, 5)]}, SITE))


def test_jobs_map_to_workloads_with_budget_gpus_contract_and_placement():
    data = {
        "jobs": [
            job(
                12,
                "RUNNING",
                "vision",
                "alloc: min_runtime=1h priority=2",
                node_count=2,
                start_time=1796000600,
                state_reason="None",
                job_resources={"allocated_nodes": [{"nodename": "n1"}, {"nodename": "n2"}]},
                gres_detail=["gpu:8(IDX:0-7)", "gpu:8(IDX:0-7)"],
            ),
            job(
                11, tres_per_node=None, tres_per_job="gres:gpu:16", comment="alloc: min_runtime=3h"
            ),
            job(13, account="unknown-account", tres_per_node="gres:gpu:2"),
            job(
                14,
                comment="alloc: min_runtime=tomorrow",
                tres_per_node="gres:gpu:1",
                state_reason="Priority",
            ),
            job(15, tres_per_node=None),  # no GPU: not ours
            job(16, "COMPLETED"),
        ]
    }
    jobs = jobs_from_squeue(data, SITE, CLUSTER, EIGHT_H)
    by = {j.workload.id: j for j in jobs}
    assert list(by) == ["11", "12", "13", "14"]
    running = by["12"].workload
    assert (running.budget, running.gpus, running.min_runtime_s, running.priority) == (
        "vision",
        16,
        3600.0,
        2,
    )
    assert dict(running.hosts) == {"n1": 8, "n2": 8}
    assert running.started is not None and running.started.timestamp() == 1796000600
    queued = by["11"]
    assert (queued.workload.gpus, queued.workload.topology, queued.held) == (
        16,
        Topology.BLOCK,
        True,
    )
    assert queued.workload.budget == "nlp/olmo" and queued.workload.started is None
    assert by["13"].workload.budget is None  # an account the site does not map: unfunded
    assert by["14"].workload.min_runtime_s == 0.0 and "min_runtime" in by["14"].problem
    assert not by["14"].held


def test_only_the_managed_partitions_are_read():
    site = SlurmSite(accounts=SITE.accounts, partitions=("gpu",))
    data = {"jobs": [job(1), job(2, partition="cpu-only")]}
    assert [j.workload.id for j in jobs_from_squeue(data, site, CLUSTER, EIGHT_H)] == ["1"]


def test_ended_jobs_are_runs_with_slurms_own_times_unless_they_never_ran():
    from alloc.adapters.slurm.read import ended_from_squeue

    data = {
        "jobs": [
            job(21, "COMPLETED", start_time=1796000000, end_time=1796003600, nodes="n1"),
            job(22, "CANCELLED", start_time=1796000500, end_time=1796000500, nodes=""),
            job(23, "FAILED", start_time=1796000000, end_time=1796000060, nodes="n2"),
            job(24, "RUNNING", start_time=1796000000, end_time=1796009999, nodes="n3"),
        ]
    }
    ended = {
        w.id: (w.started.timestamp(), end.timestamp())
        for w, end in ended_from_squeue(data, SITE, CLUSTER, EIGHT_H)
    }
    assert ended == {"21": (1796000000, 1796003600), "23": (1796000000, 1796000060)}


@pytest.mark.parametrize(
    ("more", "blocked"),
    [
        ({"state_reason": "Dependency"}, "Slurm holds it back (Dependency)"),
        ({"state_reason": "BeginTime"}, "Slurm holds it back (BeginTime)"),
        ({"state_reason": "QOSMaxGRESPerUser"}, "Slurm holds it back"),
        ({"state_reason": "JobHeldUser"}, ""),
        ({"state_reason": "Priority"}, ""),
        (
            {"state_reason": "JobHeldUser", "node_count": 3, "tres_per_node": "gres:gpu:4"},
            "takes whole nodes",
        ),
        ({"state_reason": "JobHeldUser", "node_count": 2, "tres_per_node": "gres:gpu:8"}, ""),
    ],
    ids=["dependency", "begin time", "limit", "held", "priority", "3 x 4 GPUs", "2 whole nodes"],
)
def test_jobs_no_round_may_place_are_marked_with_the_reason(more, blocked):
    (read,) = jobs_from_squeue({"jobs": [job(1, **more)]}, SITE, CLUSTER, EIGHT_H)
    assert blocked in read.blocked and (blocked != "" or read.blocked == "")


def test_a_drain_reason_saying_retire_in_any_case_retires_the_host():
    data = {"nodes": [node("n1", flags=["DRAIN"], reason="RETIRE at end of lease")]}
    assert hosts_from_sinfo(data, SITE)[0].state is HostState.RETIRED


def test_an_account_not_mapped_to_a_budget_node_is_noted_by_name():
    """`sbatch -A physics` where slurm.accounts lacks physics: unfunded, and the note says
    which account is unmapped (not only 'it names no budget')."""
    data = {"jobs": [job(1, account="physics"), job(2, account="nlp"), job(3, account="")]}
    one, two, three = jobs_from_squeue(data, SITE, CLUSTER, EIGHT_H)
    assert one.workload.budget is None
    assert one.problem == (
        "its account 'physics' is not mapped to a budget node (slurm.accounts): it runs unfunded"
    )
    assert two.problem == "" and three.problem == ""

"""Crash safety (issue 4): the controller is killed with SIGKILL at random moments, 50 times,
while it drives a simulated cluster that outlives it (alloc.adapters.simcluster); then its
ledger is compared, run by run and to the second, with what the cluster ran. Nothing may be
lost, charged twice or started twice."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from alloc.adapters.simcluster import SimCluster
from alloc.controller.state import StateStore
from alloc.io import load_instance
from benchmarks.kube_flow import rounds_recorded

LAB = """\
now: 2026-11-30T00:00:00Z
cluster:
  name: sim4
  host_groups:
    - {prefix: n, count: 4, gpus: 8, gpu_type: h100, hosts_per_block: 4}
budgets:
  name: lab
  children:
    - {name: nlp, share: 50%}
    - {name: vision, share: 50%}
"""
CONFIG = """\
name: kill-loop
executor: sim
interval: 0.01
state: sqlite:///{state}
policy: {{solver: greedy}}
budgets:
  name: lab
  children:
    - {{name: nlp, share: 60%}}
    - {{name: vision, share: 40%}}
metrics: {{port: 0}}
sim: {{lab: lab.yaml, trace: trace.csv, cluster: cluster.db, step: 2m}}
"""
KILLS = 50


def trace(seed: int) -> str:
    """120 jobs over 16 simulated hours: both teams and unallocated work, 1-16 GPUs, runs of
    10 minutes to 3 hours, resumable or not: preemptions and rebalancing happen."""
    r = random.Random(seed)
    rows = ["id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology"]
    for i in range(120):
        budget = r.choice(["nlp", "nlp", "vision", ""])
        min_runtime = 0 if not budget or r.random() < 0.2 else r.choice([600, 1800, 3600])
        rows.append(
            f"j{i:03d},{budget},{r.choice([1, 2, 4, 8, 8, 16])},{r.uniform(0, 16 * 3600):.0f},"
            f"{r.uniform(600, 3 * 3600):.0f},{min_runtime},{r.choice(['true', 'false'])},"
            f"{r.choice([0, 1])},"
        )
    return "\n".join(rows) + "\n"


def controller(config: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "alloc.cli.app",
            "controller",
            "run",
            "--config",
            str(config),
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_fifty_kills_lose_no_charge_charge_nothing_twice_and_start_nothing_twice(tmp_path):
    (tmp_path / "lab.yaml").write_text(LAB)
    (tmp_path / "trace.csv").write_text(trace(7))
    state = tmp_path / "state.db"
    config = tmp_path / "controller.yaml"
    config.write_text(CONFIG.format(state=state))
    rng = random.Random(11)
    killed_mid_run = 0
    for _ in range(KILLS):
        # Each kill lands at a random moment once the controller is running rounds (its
        # start-up takes 1-3 s here, more when the machine is busy).
        before = rounds_recorded(state)
        proc = controller(config)
        deadline = time.monotonic() + 60
        while rounds_recorded(state) <= before and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_mid_run += rounds_recorded(state) > before
    # Then to the end of the work, undisturbed.
    lab = load_instance(tmp_path / "lab.yaml")
    cluster = SimCluster(tmp_path / "cluster.db", lab)
    for _ in range(20):
        if cluster.unfinished() == 0:
            break
        done = controller(config, "--rounds", "200")
        assert done.wait(timeout=300) == 0, done.stderr.read() if done.stderr else ""
    assert cluster.unfinished() == 0
    assert killed_mid_run == KILLS, f"only {killed_mid_run} kills came after a round"

    ran = sorted(cluster.runs())
    store = StateStore(f"sqlite:///{state}")
    ledger = sorted((r.workload, r.started_s, r.ended_s, r.gpus, r.budget) for r in store.runs())
    charged = {(r.workload, r.started_s): r.charged for r in store.runs()}
    store.close()
    cluster.close()
    assert ledger == ran  # every run, from its start to its end, once
    for (job, start), is_charged in charged.items():
        budget = next(b for j, s, _, _, b in ran if (j, s) == (job, start))
        min_runtime = next(
            int(row.split(",")[5]) for row in trace(7).splitlines()[1:] if row.startswith(job)
        )
        assert is_charged == bool(budget and min_runtime > 0), job
    by_job: dict[str, list[tuple[float, float]]] = {}
    for job, start, end, _, _ in ran:
        by_job.setdefault(job, []).append((start, end))
    for job, spans in by_job.items():  # never started while it ran
        spans.sort()
        pairs = zip(spans, spans[1:], strict=False)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairs), job

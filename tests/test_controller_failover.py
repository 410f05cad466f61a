"""A controller that fails over (issue 18, point 5; models/failover.md): two real `alloc
controller run` processes share one state store and drive one simulated cluster
(benchmarks/failover_rig.py). The leader is killed with SIGKILL at random moments, paused with
SIGSTOP past its lease then resumed, and (PostgreSQL) cut from the database or has its
sessions ended; each time the standby must apply a round within two intervals. Then the ledger
must equal, run for run, what the cluster ran, and no plan of an older epoch of the lease may
have been applied after a newer one acted. `python -m benchmarks.failover` does the same with
30 kills."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

from pg_local import require_postgres

from benchmarks.failover import measure
from benchmarks.failover_rig import Rig

INTERVAL_S = 1.0


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("alloc_controller_")
    }


def leader_shown(rig: Rig) -> None:
    """Before the chaos: /metrics of each controller and `alloc status` name the leader."""
    held = rig.leader()
    assert held is not None and held.valid
    for slot, holder in rig.ids.items():
        lines = scrape(rig.ports[slot])
        leads = holder == held.holder
        assert lines[f'alloc_controller_leader{{controller="{holder}"}}'] == float(leads)
        assert lines[f'alloc_controller_epoch{{controller="{holder}"}}'] == held.epoch
    status = subprocess.run(
        [sys.executable, "-m", "alloc.cli.app", "status", "--config", str(rig.config("a"))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    assert f"leader: {held.holder} (epoch {held.epoch}) since " in status.stdout


def assert_failed_over(result: dict) -> None:
    events = [e for e in result["events"] if e["kind"] != "blip"]
    for e in events:  # each time the other controller ran a round within the bound
        assert e["takeover_s"] is not None, e
        assert e["takeover_s"] <= 2 * INTERVAL_S, e
        assert e["successor"] and e["successor"] != e["victim"], e
    assert result["ledger_equals_cluster"]  # every run, from its start to its end, once
    assert result["jobs_run_twice_at_once"] == 0
    assert result["applied_twice"] == 0  # no stale plan acted after a newer epoch
    assert result["epochs_with_two_holders"] == 0
    assert result["epochs"] > len(events)  # a new epoch at every takeover
    # Only a leader resumed between its last lease check and its apply gets as far as the
    # cluster (which refuses it): never one that was killed.
    assert result["stale_plans_refused"] <= result["counts"]["pause"] + result["counts"]["cut"]


def test_on_sqlite_a_standby_takes_over_from_a_killed_or_paused_leader(tmp_path):
    plan = ["kill", "pause", "kill", "kill", "pause", "kill", "kill"]  # 5 kills, 2 pauses
    result = measure(
        tmp_path, None, plan, seed=3, interval_s=INTERVAL_S, hours=3, before=leader_shown
    )
    assert_failed_over(result)


def test_on_postgresql_a_standby_takes_over_from_a_killed_paused_or_cut_off_leader(tmp_path):
    url = require_postgres()
    # 5 kills, 2 pauses, 2 cuts, 1 end of its sessions (pg_terminate_backend)
    plan = ["kill", "cut", "pause", "kill", "blip", "kill", "cut", "kill", "pause", "kill"]
    result = measure(
        tmp_path, url, plan, seed=4, interval_s=INTERVAL_S, hours=3, before=leader_shown
    )
    assert_failed_over(result)

"""The leader lease (alloc.controller.lease, models/failover.md): of the controllers sharing a
state store only the holder acts, a standby takes over once the lease has expired with the next
epoch, and everything a controller that lost it tries to write or apply is refused. In one
process, against SQLite and PostgreSQL; tests/test_controller_failover.py kills real ones."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pg_local import require_postgres
from prometheus_client import generate_latest
from sim2 import LAB, write_lab
from sqlalchemy import update
from typer.testing import CliRunner

from alloc.adapters import fence
from alloc.adapters.base import StaleEpoch
from alloc.adapters.simcluster import SimCluster
from alloc.cli.app import app
from alloc.controller import Controller, Run, StateStore
from alloc.controller.history import leader, leader_line
from alloc.controller.lease import Lease, NotLeader, leadership, lease_metadata
from alloc.controller.metrics import ControllerMetrics
from alloc.controller.tables import metadata
from alloc.io import parse_instance
from alloc.io.controller_config import load_controller_config
from alloc.io.trace_csv import read_trace

# Four 8-GPU jobs on two hosts: each round starts what fits and the cluster moves 15 minutes.
TRACE = """\
id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology
a,nlp,8,0,3600,600,true,0,
b,vision,8,0,3600,600,true,0,
c,nlp,8,600,3600,600,true,0,
d,vision,8,900,3600,600,true,0,
"""


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/state.db"
    url = require_postgres()
    store = StateStore(url)  # each test from an empty database
    lease_metadata.drop_all(store.engine)
    metadata.drop_all(store.engine)
    store.close()
    return url


def expire(store: StateStore) -> None:
    """The lease runs out now (its holder paused or cut off, as far as the database knows)."""
    with store.engine.begin() as db:
        db.execute(update(leadership).values(expires_s=0.0))


def cluster(tmp_path: Path) -> SimCluster:
    lab = parse_instance(LAB)
    (tmp_path / "trace.csv").write_text(TRACE)
    jobs = read_trace(tmp_path / "trace.csv", lab.budgets, lab.policy.max_min_runtime_s)
    return SimCluster(tmp_path / "cluster.db", lab, jobs, step_s=900.0)


def test_a_standby_takes_the_lease_only_once_it_has_expired_and_with_the_next_epoch(url):
    a, b = StateStore(url), StateStore(url)
    first, second = Lease(a, "ctl-a", 0.4), Lease(b, "ctl-b", 0.4)
    assert first.acquire() and first.epoch == 1
    assert not second.acquire() and second.seen == 1  # held: the standby waits
    time.sleep(0.8)  # two leases long: the holder's heartbeat keeps it
    assert not second.acquire()
    assert first.held
    first.release()  # a clean stop: the standby may take it at once
    assert second.acquire() and second.epoch == 2
    held = leader(b)
    assert held is not None and held.valid and (held.holder, held.epoch) == ("ctl-b", 2)
    second.release()
    a.close()
    b.close()


def test_a_controller_that_lost_the_lease_writes_nothing(url):
    a, b = StateStore(url), StateStore(url)
    first, second = Lease(a, "ctl-a", 30.0), Lease(b, "ctl-b", 30.0)
    assert first.acquire()
    a.observe(100.0, [Run("j1", 0.0, "nlp", 8, True)])  # the leader writes
    expire(a)
    assert second.acquire() and second.epoch == 2
    with pytest.raises(NotLeader):  # whatever it did not notice yet: refused
        a.observe(200.0, [], [Run("j1", 0.0, "nlp", 8, True, 150.0)])
    with pytest.raises(NotLeader):
        a.close_run("j1", 0.0, 150.0)
    assert not first.held  # and it knows now
    assert b.runs() == [Run("j1", 0.0, "nlp", 8, True, None)]  # nothing of it written
    assert not first.acquire()  # the lease is the standby's now
    second.release()
    a.close()
    b.close()


def test_a_leader_that_lost_the_lease_applies_nothing_and_a_stale_plan_is_refused(url, tmp_path):
    sim = cluster(tmp_path)
    a, b = StateStore(url), StateStore(url)
    first, second = Lease(a, "ctl-a", 30.0), Lease(b, "ctl-b", 30.0)
    one, two = Controller(sim, a, lease=first), Controller(sim, b, lease=second)
    assert first.acquire()
    done = one.round_once()
    assert not done.error and done.started == 2  # a and b start
    expire(a)
    assert second.acquire()
    lost = one.round_once()  # the old leader's next round: refused before anything is applied
    assert "NotLeader" in lost.error and not first.held
    assert [(x.holder, x.epoch) for x in fence.history(sim.path)] == [("ctl-a", 1)]
    taken = two.round_once()
    assert not taken.error and taken.plan is not None
    # A plan the old leader sent after its last check (paused in between): the cluster refuses it.
    with pytest.raises(StaleEpoch):
        sim.apply_fenced(taken.plan, "ctl-a", 1)
    history = fence.history(sim.path)
    assert [(x.holder, x.epoch, x.refused) for x in history] == [
        ("ctl-a", 1, False),
        ("ctl-b", 2, False),
        ("ctl-a", 1, True),
    ]
    second.release()
    sim.close()
    a.close()
    b.close()


class Unfenced:
    """The simulated cluster as Slurm or Kubernetes are: it checks no epoch, but asks the
    controller before each action whether it may still act (alloc.adapters.base.Guarded)."""

    def __init__(self, sim: SimCluster) -> None:
        self.sim, self.checks = sim, 0

    def __getattr__(self, name: str) -> object:
        if name == "apply_fenced":
            raise AttributeError(name)
        return getattr(self.sim, name)

    def apply_guarded(self, plan, check):  # type: ignore[no-untyped-def]
        check()
        self.checks += 1
        return self.sim.apply(plan)


def test_a_leader_without_a_quarter_of_its_lease_left_stops_before_its_next_action(tmp_path):
    sim = cluster(tmp_path)
    store = StateStore(f"sqlite:///{tmp_path}/state.db")
    lease = Lease(store, "ctl-a", 30.0)
    executor = Unfenced(sim)
    one = Controller(executor, store, lease=lease)  # type: ignore[arg-type]
    assert lease.acquire()
    done = one.round_once()
    assert not done.error and done.started == 2 and executor.checks == 1
    runs, clock = sim.runs(), sim.now_s()  # each apply moves the cluster's clock a step
    # No renewal for three quarters of the lease (paused, or the database out of reach): the
    # check between actions is on this process's clock, and refuses.
    lease._valid_until = time.monotonic() + 30.0 / 4 - 0.5
    with pytest.raises(NotLeader):
        lease.check()
    lease._valid_until = time.monotonic() + 30.0  # renewed: the round's own check passes ...
    lease.check()
    real_confirm = lease.confirm

    def confirmed_then_paused() -> int:  # ... and then it is paused before the first action
        epoch = real_confirm()
        lease._valid_until = time.monotonic() + 1.0
        return epoch

    lease.confirm = confirmed_then_paused  # type: ignore[method-assign]
    lost = one.round_once()
    assert "NotLeader" in lost.error and executor.checks == 1
    assert (sim.runs(), sim.now_s()) == (runs, clock)  # nothing more applied
    lease.release()
    sim.close()
    store.close()


def test_metrics_show_which_controller_leads_and_the_epoch(tmp_path):
    url = f"sqlite:///{tmp_path}/state.db"
    a, b = StateStore(url), StateStore(url)
    first, second = Lease(a, "ctl-a", 30.0), Lease(b, "ctl-b", 30.0)
    seen = []
    for lease in (first, second):
        metrics = ControllerMetrics()
        metrics.watch(lease)
        lease.acquire()
        seen.append(generate_latest(metrics.registry).decode())
    assert 'alloc_controller_leader{controller="ctl-a"} 1.0' in seen[0]
    assert 'alloc_controller_epoch{controller="ctl-a"} 1.0' in seen[0]
    assert 'alloc_controller_leader{controller="ctl-b"} 0.0' in seen[1]
    assert 'alloc_controller_epoch{controller="ctl-b"} 1.0' in seen[1]  # the epoch it saw
    first.release()
    a.close()
    b.close()


def test_status_shows_the_leader_and_who_held_the_lease_last(tmp_path):
    url = f"sqlite:///{tmp_path}/state.db"
    store = StateStore(url)
    assert leader(store) is None  # no controller ever ran
    lease = Lease(store, "ctl-a", 30.0)
    lease.acquire()
    held = leader(store)
    assert held is not None
    assert leader_line(held).startswith("leader: ctl-a (epoch 1) since ")
    assert "valid 30.0 s more" in leader_line(held) or "valid 29." in leader_line(held)
    lease.release()
    gone = leader(store)
    assert gone is not None and not gone.valid and gone.released
    assert leader_line(gone).startswith("leader: none: ctl-a (epoch 1) released the lease ")
    assert "ended" not in leader_line(gone)  # released at a clean stop, not run out
    store.close()


def test_status_says_a_lease_that_ran_out_ended_and_one_released_was_released(tmp_path):
    """A holder killed (or cut off) lets its lease run out: `ended ... ago`, and a standby
    takes it; one that stopped cleanly released it (`released the lease ... ago`)."""
    store = StateStore(f"sqlite:///{tmp_path}/state.db")
    held = Lease(store, "ctl-a", 30.0)
    held.acquire()  # not released: as if its holder died
    with store.engine.begin() as db:  # 40 s later by the database's clock
        db.execute(
            update(leadership).values(
                renewed_s=leadership.c.renewed_s - 40.0, expires_s=leadership.c.expires_s - 40.0
            )
        )
    gone = leader(store)
    assert gone is not None and not gone.valid and not gone.released
    line = leader_line(gone)
    assert line.startswith("leader: none: the lease of ctl-a (epoch 1) ended 10.")
    assert "a standby, if any, takes it within a quarter of the lease" in line
    assert leader_line(gone, simulated=True).startswith(
        "leader: none: the lease of ctl-a (epoch 1) ended 10."
    ) and "ago (wall clock)" in leader_line(gone, simulated=True)
    held.release()  # its renewing thread stops
    store.close()


def test_alloc_status_names_the_controller_that_last_led(tmp_path):
    write_lab(tmp_path, TRACE)
    config = tmp_path / "controller.yaml"
    config.write_text(
        "name: sim2\nexecutor: sim\ninterval: 0.01\nstate: sqlite:///state.db\n"
        "policy: {solver: greedy}\nbudgets:\n  name: lab\n  children: [{name: nlp, share: 50%},"
        " {name: vision, share: 50%}]\nmetrics: {port: 0}\n"
        "sim: {lab: lab.yaml, trace: trace.csv, cluster: cluster.db, step: 15m}\n"
    )
    runner = CliRunner()
    ran = runner.invoke(app, ["controller", "run", "--config", str(config), "--rounds", "2"])
    assert ran.exit_code == 0, ran.output
    assert "leads (epoch 1)" in ran.output
    shown = runner.invoke(app, ["status", "--config", str(config)])
    assert shown.exit_code == 0, shown.output
    # NAME@HOST:PID, stopped cleanly: released, not run out; the lease's clock is the wall's
    assert "leader: none: sim2@" in shown.output
    assert "released the lease" in shown.output and "(wall clock)" in shown.output


@pytest.mark.parametrize(
    ("line", "lease_s"),
    [("interval: 0.01", 1.0), ("interval: 10s", 10.0), ("interval: 5m", 30.0)],
    ids=["a short interval: 1 s", "the interval", "at most 30 s"],
)
def test_the_lease_lasts_the_interval_from_1_to_30_seconds_unless_configured(
    tmp_path, line, lease_s
):
    config = tmp_path / "c.yaml"
    config.write_text(f"{line}\nstate: sqlite:///s.db\nbudgets: {{name: lab}}\n")
    assert load_controller_config(config).lease_s == lease_s
    config.write_text(f"{line}\nlease: 2s\nbudgets: {{name: lab}}\n")
    assert load_controller_config(config).lease_s == 2.0


def test_a_lease_of_no_time_is_refused_naming_the_field(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("lease: 0s\nbudgets: {name: lab}\n")
    result = CliRunner().invoke(app, ["controller", "run", "--config", str(config)])
    assert result.exit_code == 2
    assert "lease" in result.output

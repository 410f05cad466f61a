"""Property tests of the two kinds of rounds over time: random small labs and traces simulated
with event passes between full rounds, every pass validated whole from scratch against the
invariants of SPEC.md (a violation raises inside the round), for both solvers.

Every example: 2-6 hosts of 4 or 8 GPUs in one or two blocks (one or two GPU types), three
teams with shares summing to at most 100%, 3-24 jobs (some unfunded, some unallocated, some
larger than a host, some of a GPU type), and now and then a host that fails or retires.
Reproducible (derandomized, no example database).
"""

from __future__ import annotations

import pytest
from conftest import host, instance, snapshot_of
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import PROPERTY
from test_sim_engine import job, simulate

from alloc.domain import HostName, HostState
from alloc.sim.hosts import HostEvent

SIMULATIONS = settings(PROPERTY, max_examples=40)  # each example is a half-day simulation


@st.composite
def labs(draw: st.DrawFn) -> tuple:
    n_hosts = draw(st.integers(2, 6))
    size = draw(st.sampled_from([4, 8]))
    typed = draw(st.booleans())
    hosts = [
        host(
            f"h{i}",
            size,
            block=f"b{i % 2}" if n_hosts > 3 else "b0",
            gpu_type="a100" if typed and i == 0 else "h100",
        )
        for i in range(n_hosts)
    ]
    a = draw(st.integers(10, 60))
    b = draw(st.integers(0, 100 - a))
    c = draw(st.integers(0, 100 - a - b))
    budgets = {
        "name": "root",
        "children": [
            {"name": "a", "share": f"{a}%"},
            {"name": "b", "share": f"{b}%"},
            {"name": "c", "share": f"{c}%"},
        ],
    }
    jobs = []
    for i in range(draw(st.integers(3, 24))):
        gpus = draw(st.sampled_from([1, 2, 4, size, size, 2 * size]))
        jobs.append(
            job(
                f"j{i}",
                draw(st.sampled_from(["a", "a", "b", "c", None])),
                gpus,
                float(draw(st.integers(0, 6 * 3600))),
                float(draw(st.integers(300, 10 * 3600))),
                float(draw(st.sampled_from([0, 60, 900, 3600, 4 * 3600]))),
                priority=draw(st.integers(0, 2)),
                resumable=draw(st.booleans()),
                gpu_type=draw(st.sampled_from([None, None, None, "h100"])),
            )
        )
    events = []
    if draw(st.booleans()):
        state = draw(st.sampled_from([HostState.UNHEALTHY, HostState.RETIRED]))
        t = float(draw(st.integers(0, 8 * 3600)))
        events.append(HostEvent(t, HostName(f"h{draw(st.integers(0, n_hosts - 1))}"), state))
    return snapshot_of(instance(hosts=hosts, budgets=budgets)), jobs, tuple(events)


@pytest.mark.parametrize("policy", ["greedy", "milp", "fairshare-sort"])
@SIMULATIONS
@given(case=labs())
def test_every_pass_and_round_of_a_simulation_keeps_every_invariant(policy, case):
    lab, jobs, events = case
    result = simulate(lab, jobs, policy, days=0.5, host_events=events, validate_passes=True)
    assert result.violations == 0
    assert result.passes + result.rounds > 0
    # Every job ends or is still queued or running: none is lost between the two kinds.
    world = result.world
    for sj in world.jobs.values():
        assert sj.state in ("pending", "queued", "running", "done")
        assert (sj.job.id in world.running) == (sj.state == "running")
        assert (sj.job.id in world.queued) == (sj.state == "queued")


@pytest.mark.parametrize("policy", ["greedy"])
@SIMULATIONS
@given(case=labs())
def test_the_state_passes_carry_matches_the_cluster_after_every_round(policy, case):
    # After every round or pass, the carried state's view of running and queued work is the
    # world's: what `sync` keeps in step.
    from alloc.sim import engine

    lab, jobs, events = case
    checked = []
    original = engine.Simulation._plan_and_apply

    def checking(self, t, result, full):  # type: ignore[no-untyped-def]
        reserved = original(self, t, result, full)
        state = self.rounds.state if self.rounds is not None else None
        if state is not None:
            running = {w.id: dict(w.hosts) for w in state.view.values() if w.running}
            world = {wid: dict(sj.hosts) for wid, sj in self.world.running.items()}
            assert running == world
            assert set(state.queued) == set(self.world.queued)
            held = {wid for wid in state.load.held}
            assert held == set(world)
            checked.append(t)
        return reserved

    engine.Simulation._plan_and_apply = checking
    try:
        simulate(lab, jobs, policy, days=0.5, host_events=events, validate_passes=True)
    finally:
        engine.Simulation._plan_and_apply = original

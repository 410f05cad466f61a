"""Every example in instances/examples/ states its expected decisions in its comments:

    # expect: <workload> <action> [<reason>]
    # expect-hosts: <workload> <host> ...
    # expect-drained: <host> ...
    # expect-reserved: <gang> <host> ...   (when present: exactly the plan's reservations)

Each was derived by hand (the derivation is in the file); both solvers must reproduce it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import solve_checked

from alloc.io import load_instance

EXAMPLES = sorted((Path(__file__).parent.parent / "instances" / "examples").glob("*.yaml"))


def expectations(
    path: Path,
) -> tuple[list[list[str]], dict[str, set[str]], set[str] | None, dict[str, set[str]]]:
    decisions, hosts, drained, reserved = [], {}, None, {}
    for line in path.read_text().splitlines():
        if line.startswith("# expect: "):
            decisions.append(line.removeprefix("# expect: ").split())
        elif line.startswith("# expect-hosts: "):
            wid, *names = line.removeprefix("# expect-hosts: ").split()
            hosts[wid] = set(names)
        elif line.startswith("# expect-drained:"):
            drained = set(line.removeprefix("# expect-drained:").split())
        elif line.startswith("# expect-reserved: "):
            wid, *names = line.removeprefix("# expect-reserved: ").split()
            reserved[wid] = set(names)
    return decisions, hosts, drained, reserved


def test_every_example_states_what_it_expects():
    assert EXAMPLES
    for path in EXAMPLES:
        assert expectations(path)[0], f"{path.name} has no '# expect:' line"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_decisions_match_the_hand_derivation(path, solver):
    plan = solve_checked(load_instance(path), solver)
    expected_decisions, expected_hosts, expected_drained, expected_reserved = expectations(path)
    for wid, action, *reason in expected_decisions:
        d = plan.decision(wid)
        assert d.action.value == action, f"{wid}: {d.action.value} ({d.reason.value})"
        if reason:
            assert d.reason.value == reason[0], f"{wid}: reason {d.reason.value}"
    for wid, names in expected_hosts.items():
        assert set(plan.decision(wid).hosts) == names
    if expected_drained is not None:
        assert set(plan.drained_hosts) == expected_drained
    assert {r.workload: set(r.hosts) for r in plan.reservations} == expected_reserved


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_decision_of_every_example_can_be_explained(path):
    from alloc.explain import explain

    snapshot = load_instance(path)
    plan = solve_checked(snapshot, "greedy")
    for w in snapshot.workloads:
        e = explain(snapshot, plan, w.id)
        d = plan.decision(w.id)
        assert e.lines()[0].startswith(f"{w.id}: {d.action.value}")
        if d.action.value == "wait":
            assert e.change, f"{w.id} waits ({d.reason.value}) and nothing says what would change"

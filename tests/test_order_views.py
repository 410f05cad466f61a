"""One order in every view: `alloc queue`'s rank and position, `alloc status`'s `#` and
`alloc explain`'s "fair-share order: N of M" all read the round's order as models/round.md 2.2
defines it (`RoundContext.ranked`: allocated work in fair-share order, then unallocated work),
and `alloc status` shows the ratios that order was decided by."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import solve_checked
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.domain import Snapshot
from alloc.generate import GeneratorSpec, generate
from alloc.queue import queue_rows as plan_rows
from alloc.solve.context import round_context
from alloc.status import queue_rows as status_rows

PLACE = re.compile(r"fair-share order: (\d+) of")


def run(*args: object) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def g16() -> Snapshot:
    # `alloc generate --hosts 16`, the walkthrough's instance: before, w00035 (entitled by
    # time slicing) was rank 11 in `alloc queue` and 16 of 28 in `alloc explain`, and the
    # five over-entitlement workloads ranked between them were one off.
    return generate(GeneratorSpec(hosts=16))


def test_queue_rank_is_the_place_explain_gives(g16, tmp_path):
    path = tmp_path / "g16.yaml"
    assert run("generate", "--hosts", "16", "-o", path).exit_code == 0
    out = run("queue", path, "--solver", "greedy", "--format", "json")
    assert out.exit_code == 0, out.output
    rank = {w["id"]: w["rank"] for w in json.loads(out.output)["workloads"]}
    ctx = round_context(g16)
    assert ctx.ranked != ctx.order  # entitled and over-entitlement work interleave here
    for wid in ("w00035", "w00034", "w00025", "w00021", "w00015", "w00005"):
        said = run("explain", path, wid, "--solver", "greedy")
        found = PLACE.search(said.output)
        assert found is not None, said.output
        assert rank[wid] == int(found.group(1)) == ctx.share.rank[wid] + 1, wid


def test_queue_position_and_status_number_count_the_same_order(g16):
    plan = solve_checked(g16, "greedy")
    ctx = round_context(g16)
    position = {r.id: r.position for r in plan_rows(g16, plan, ctx.share.ratios, ctx.ranked)}
    numbered = [(r.position, r.workload) for r in status_rows(ctx, plan) if r.position]
    assert numbered == sorted(numbered)
    assert all(position[wid] == n for n, wid in numbered)
    assert [wid for _, wid in numbered] == [w for w in ctx.ranked if not g16.by_id[w].running]


def test_status_rows_follow_the_ratios_it_prints(g16):
    """Allocated rows come by the projected ratio of their top-level node at their turn (the
    order merges the top level last), and `alloc status` prints those ratios: each one is at
    least the one above it. Before, it printed the window's ratios, which the order does not
    follow."""
    plan = solve_checked(g16, "greedy")
    ctx = round_context(g16)
    allocated = [r for r in status_rows(ctx, plan) if r.workload in ctx.share.rank]
    tops = [float(r.path.split(" > ")[0].split()[-1]) for r in allocated]
    assert len(tops) > 10
    assert tops == sorted(tops)
    for r in allocated:
        want = [round(x, 2) for x in ctx.share.grant_ratios[r.workload]]
        shown = [float(part.split()[-1]) for part in r.path.split(" > ")]
        assert shown == want, r

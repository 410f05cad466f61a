"""A failed placement search is remembered only for the shape that was searched.

The greedy, the repair passes and the event passes skip a search that already failed at the
load's current version (a long queue holds many workloads of one shape). The memo named
shapes by `id()`, and a load outlives some of the shapes searched on it (the full round's
load is carried into the event passes; the shapes that keep work off reserved hosts are
rebuilt when a reservation ends): a new shape could get a dead one's id and be told "does
not fit" without being tried. Which ids are reused depends on memory layout, so a month of
the synthetic lab differed between two processes (found 2026-12-02: the first different
pass at 8.5 simulated days, at PYTHONHASHSEED 1 against 2).
"""

from __future__ import annotations

from dataclasses import replace

from conftest import host, instance, snapshot_of, workload

from alloc.solve.load import Load
from alloc.solve.placement import place_on
from alloc.solve.problem import host_arrays, shapes_of


def _two_hosts():
    snap = snapshot_of(instance(hosts=[host("h1"), host("h2")], workloads=[workload("w", 8, "a")]))
    hosts = host_arrays(snap)
    shape = shapes_of(snap.workloads, hosts)["w"]
    return hosts, shape


def test_a_search_that_failed_is_skipped_for_the_same_shape_at_the_same_version():
    hosts, shape = _two_hosts()
    load = Load(hosts)
    nowhere = replace(shape, allowed=shape.allowed & False)
    assert place_on(nowhere, load) is None
    key = ("free GPUs", id(nowhere))
    assert load.failed_at(key, nowhere)
    load.hold("x", {0: 1})  # a new version: searched again
    assert not load.failed_at(key, nowhere)


def test_a_failure_recorded_under_an_id_does_not_answer_for_another_shape():
    # What a reused id looks like to the memo: the same key, another shape object.
    hosts, shape = _two_hosts()
    load = Load(hosts)
    nowhere = replace(shape, allowed=shape.allowed & False)
    key = ("free GPUs", id(nowhere))
    load.fail(key, nowhere)
    assert not load.failed_at(key, shape)
    load.fail(("free GPUs", id(shape)), nowhere)  # as if `nowhere` had died and `shape` took its id
    assert place_on(shape, load) is not None

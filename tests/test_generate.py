"""`alloc generate` builds the budget tree it is asked for: `--levels 4,15,150` is 4, 15 and 150
nodes in all at depths 1, 2 and 3 (not 150 under each of 15), `--depth D --width W` is a tree
whose every inner node has exactly W children, and a tree too large to be a lab's is bad input
answered at once (issue 18, point 4)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import solve_checked
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.domain.budget import BudgetNode, BudgetTree
from alloc.generate import MAX_NODES, GeneratorSpec, generate
from alloc.io import load_instance
from alloc.io.shares import over_100


def per_depth(tree: BudgetTree) -> list[int]:
    """Nodes at depths 1, 2, ... of the tree."""
    counts: Counter[int] = Counter()

    def walk(node: BudgetNode, depth: int) -> None:
        counts[depth] += 1
        for child in node.children:
            walk(child, depth + 1)

    walk(tree.root, 0)
    return [counts[d] for d in range(1, max(counts) + 1)]


def inner_nodes(tree: BudgetTree) -> list[BudgetNode]:
    return [n for n in tree.nodes.values() if n.children and n is not tree.root]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_levels_are_the_counts_of_nodes_at_each_depth(seed):
    snapshot = generate(GeneratorSpec(hosts=16, levels=(4, 15, 150), seed=seed))
    tree = snapshot.budgets
    assert per_depth(tree) == [4, 15, 150]
    assert all(n.children for n in inner_nodes(tree))  # every node but a leaf has a child
    assert sum(1 for _ in tree.leaves()) == 150  # every leaf is at the deepest level


def test_equal_levels_give_one_child_each_and_a_single_level_gives_leaves():
    assert per_depth(generate(GeneratorSpec(hosts=8, levels=(5, 5))).budgets) == [5, 5]
    assert per_depth(generate(GeneratorSpec(hosts=8, levels=(7,))).budgets) == [7]


def test_depth_and_width_give_a_full_tree_through_the_command_line(tmp_path: Path):
    out = tmp_path / "g.yaml"
    result = CliRunner().invoke(
        app, ["generate", "--hosts", "16", "--depth", "6", "--width", "3", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    snapshot = load_instance(out)
    tree = snapshot.budgets
    assert per_depth(tree) == [3, 9, 27, 81, 243, 729]
    assert len(tree.nodes) - 1 == 1092
    assert {len(n.children) for n in inner_nodes(tree)} == {3}
    assert len(tree.root.children) == 3
    for sibling_shares in ([c.share for c in n.children] for n in tree.nodes.values()):
        assert over_100(sibling_shares) is None  # exactly: no tolerance
    solve_checked(snapshot, "greedy")  # the deep tree is an instance the round solves


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (["--depth", "9", "--width", "10"], "--depth"),  # 1.1 billion nodes
        (["--depth", "1000000000", "--width", "1"], "--depth"),  # a billion, one by one
        (["--depth", "100000", "--width", "100000"], "--depth"),  # not computed in full
        (["--levels", f"4,15,{MAX_NODES}"], "--levels"),
    ],
)
def test_a_tree_larger_than_a_lab_is_refused_at_once_and_nothing_written(
    tmp_path: Path, options, field
):
    out = tmp_path / "g.yaml"
    result = CliRunner().invoke(app, ["generate", *options, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert f"{field}:" in result.stderr
    assert f"more than {MAX_NODES:,} budget nodes" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("shape", [["--depth", "2", "--width", "3"], ["--depth", "2"]])
def test_levels_with_depth_or_width_is_refused_not_ignored(tmp_path: Path, shape):
    # `--levels 4,15 --depth 2 --width 3` wrote a 3x3 tree, --levels silently dropped.
    out = tmp_path / "g.yaml"
    result = CliRunner().invoke(app, ["generate", "--levels", "4,15", *shape, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "--levels and --depth/--width are two ways to shape the tree: give one" in result.stderr
    assert not out.exists()


def test_a_generated_instance_can_be_simulated(tmp_path: Path):
    # A new user's `alloc generate --hosts 16 -o lab16.yaml && alloc simulate lab16.yaml
    # --synthetic` failed: the generated workloads stated no runtime.
    lab = tmp_path / "lab16.yaml"
    made = CliRunner().invoke(app, ["generate", "--hosts", "16", "-o", str(lab)])
    assert made.exit_code == 0, made.output
    snapshot = load_instance(lab)
    running = [w for w in snapshot.workloads if w.started is not None]
    assert running and len(running) < len(snapshot.workloads)  # queued work too
    assert all(w.runtime_s is not None and w.runtime_s >= 60 for w in snapshot.workloads)
    out = tmp_path / "out"
    args = ["simulate", str(lab), "--synthetic", "--days", "0.05", "--policy", "greedy"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert (out / "metrics.json").is_file()


def test_runtimes_leave_the_rest_of_a_generated_instance_as_it_was():
    # Runtimes come from a random stream of their own: the cluster, the tree and the work
    # (benchmarks/ solves generated instances) are those generated before runtimes were.
    snapshot = generate(GeneratorSpec(hosts=16, seed=3))
    works = [w.runtime_s for w in snapshot.workloads]
    assert len(set(works)) > 3
    debug = [w for w in snapshot.workloads if w.gpus <= 8 and 0 < w.min_runtime_s <= 900]
    assert all(w.runtime_s is not None and w.runtime_s <= 40 * 60 for w in debug)
    # As generated before runtimes were (at 4ad9ea8): 51 workloads, 333 GPUs, the first w00001.
    first = snapshot.workloads[0]
    assert (first.gpus, first.budget, first.min_runtime_s) == (1, "vision/team2/r7", 4 * 3600)
    assert (len(snapshot.workloads), sum(w.gpus for w in snapshot.workloads)) == (51, 333)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--hosts", "70000"], "70,000 hosts are more than the 65,536 alloc reads"),
        (["--hosts", "40000"], "320,000 GPUs, more than the 262,144 alloc reads"),
        (["--hosts", "20000", "--demand", "4"], "more than the 500,000 alloc reads in one file"),
    ],
)
def test_an_instance_no_command_could_read_is_refused_at_once_and_nothing_written(
    tmp_path: Path, options, says
):
    out = tmp_path / "g.yaml"
    result = CliRunner().invoke(app, ["generate", *options, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "--hosts:" in result.stderr
    assert says in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "spec",
    [
        GeneratorSpec(hosts=16),
        GeneratorSpec(hosts=256),
        GeneratorSpec(hosts=1024, demand=5.0),
        GeneratorSpec(hosts=512, sizes={64: 1.0}, cap_sizes=False),
    ],
    ids=["16 hosts", "256 hosts", "demand 5", "64-GPU gangs"],
)
def test_the_values_estimated_up_front_are_within_a_tenth_of_those_written(spec):
    from alloc.generate import estimated_values
    from alloc.io import dump_instance
    from alloc.io.yaml_source import _Reader

    reader = _Reader(dump_instance(generate(spec), ""), "g.yaml", None)
    reader.read()
    assert 0.9 <= estimated_values(spec) / reader.values <= 1.1

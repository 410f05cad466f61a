"""Real traces -> trace CSV (`alloc trace import`): the minimum-runtime rule, the Philly and ITP
importers on hand-checkable fixtures and on the real files, the command's contract (exit 2 and
nothing written on bad input), and the trace CSV's own error messages."""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.domain import BudgetNode, BudgetTree, TraceJob, WorkloadId
from alloc.io import InputError, dump_instance, load_instance
from alloc.io.trace_csv import read_trace, trace_text
from alloc.traces import PHILLY_ATTRIBUTION, MinRuntimeRule, import_itp, import_philly
from alloc.traces.itp import concurrent_demand_percentile
from alloc.traces.rules import pick, shares_percent, uniform

H = 3600.0
M = 60.0
TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
PHILLY = TRACES / "philly-sia"
ITP = TRACES / "microsoft-itp-elasticflow"
ALL_ALLOCATED = MinRuntimeRule(unallocated=0.0)


# --- the minimum-runtime rule -------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "runtime_s", "expected"),
    [
        pytest.param(1, 10 * M, (10 * M, "debug"), id="short debug work keeps its whole runtime"),
        pytest.param(8, 30 * M, (15 * M, "debug"), id="8 GPUs for 30 minutes is still debug"),
        pytest.param(9, 10 * M, (H, "train"), id="more than 8 GPUs is never debug: 1 h floor"),
        pytest.param(1, 30 * M + 1, (H, "train"), id="past 30 minutes is train: 1 h floor"),
        pytest.param(1, 2 * H, (H, "train"), id="a quarter of 2 h rounds up to 1 h"),
        pytest.param(1, 4 * H + 1, (2 * H, "train"), id="a quarter of 4 h 1 s rounds up to 2 h"),
        pytest.param(64, 20 * H, (5 * H, "train"), id="a quarter of 20 h is 5 h"),
        pytest.param(64, 100 * H, (8 * H, "train"), id="a quarter of 100 h is clamped to 8 h"),
    ],
)
def test_the_rule_classes_debug_and_train_work(gpus, runtime_s, expected):
    assert ALL_ALLOCATED.assign("job", gpus, runtime_s) == expected


def test_no_minimum_runtime_exceeds_the_labs_max_min_runtime():
    assert ALL_ALLOCATED.assign("job", 64, 100 * H, max_min_runtime_s=4 * H) == (4 * H, "train")
    assert ALL_ALLOCATED.assign("job", 1, 20 * M, max_min_runtime_s=10 * M) == (10 * M, "debug")


def test_every_threshold_is_a_field():
    rule = MinRuntimeRule(
        unallocated=0.0, debug_max_gpus=1, debug_max_runtime_s=H, train_ceiling_s=2 * H
    )
    assert rule.assign("job", 1, 50 * M) == (15 * M, "debug")
    assert rule.assign("job", 2, 50 * M) == (H, "train")
    assert rule.assign("job", 2, 100 * H) == (2 * H, "train")
    with pytest.raises(ValueError, match="unallocated"):
        MinRuntimeRule(unallocated=1.5)


@pytest.mark.parametrize("fraction", [0.1, 0.3])
def test_the_unallocated_fraction_is_close_to_the_configured_one(fraction):
    rule = MinRuntimeRule(unallocated=fraction)
    ids = [f"job-{i}" for i in range(20_000)]
    zero = [i for i in ids if rule.assign(i, 1, 10 * H) == (0.0, "unallocated")]
    assert abs(len(zero) / len(ids) - fraction) < 0.01


def test_the_draw_is_sha256_of_seed_and_id_so_it_is_the_same_in_every_process():
    digest = hashlib.sha256(b"7:philly-000001").digest()
    assert uniform(7, "philly-000001") == int.from_bytes(digest[:8], "big") / 2**64
    rule, again, other = MinRuntimeRule(seed=7), MinRuntimeRule(seed=7), MinRuntimeRule(seed=8)
    ids = [f"j{i}" for i in range(500)]
    first = [rule.assign(i, 1, 10 * H) for i in ids]
    assert first == [again.assign(i, 1, 10 * H) for i in ids]
    assert first != [other.assign(i, 1, 10 * H) for i in ids]


def test_shares_are_rounded_down_to_three_decimals_and_never_exceed_100_percent():
    assert shares_percent([1, 1, 1]) == [33.333, 33.333, 33.333]
    assert shares_percent([3, 2, 1]) == [50.0, 33.333, 16.666]
    zipf = shares_percent([Fraction(1, i) for i in range(1, 9)])
    assert zipf[0] == 36.793 and sum(zipf) <= 100


def test_a_draw_lands_in_its_slice_of_the_cumulative_weights():
    weights = [Fraction(1), Fraction(1, 2), Fraction(1, 3)]  # 6/11, 3/11, 2/11
    assert [pick(weights, u) for u in (0.0, 0.545, 0.546, 0.818, 0.819, 0.999)] == [
        0,
        0,
        1,
        1,
        2,
        2,
    ]
    counts = [0, 0, 0]
    for i in range(20_000):
        counts[pick(weights, uniform(1, f"tenant:{i}"))] += 1
    assert abs(counts[0] / 20_000 - 6 / 11) < 0.015


# --- Philly on a fixture ------------------------------------------------------------------

PHILLY_ROWS = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-02 12:00:00,3600.0,8,28800.0,vcA
2017-10-01 10:00:00,600.0,1,600.0,vcB
2017-10-01 10:00:30,0.0,1,0.0,vcA
2017-10-03 10:00:00,100.0,64,6400.0,vcC

"""


def philly_dir(tmp_path: Path, rows: str = PHILLY_ROWS) -> Path:
    folder = tmp_path / "philly"
    folder.mkdir(exist_ok=True)
    (folder / "philly.csv").write_text(rows)
    (folder / "philly_vc_nodes.csv").write_text("vc,node num\nvcA,3\nvcB,2\n")
    return folder


def test_philly_vcs_become_leaves_with_shares_by_node_count(tmp_path):
    # 3 + 2 counted nodes, and vcC (jobs but no count) counts as 1: 6 nodes of 8 GPUs.
    result = import_philly(philly_dir(tmp_path), rule=ALL_ALLOCATED)
    tree = result.lab.budgets
    assert [c.name for c in tree.root.children] == ["vcA", "vcB", "vcC"]
    assert [round(c.share * 100, 6) for c in tree.root.children] == [50.0, 33.333, 16.666]
    assert len(result.lab.cluster.hosts) == 6 and result.lab.cluster.installed_gpus == 48
    host = result.lab.cluster.hosts[0]
    assert (host.name, host.gpu_type, host.block) == ("p001", "philly", "p-b1")
    assert result.lab.now.isoformat() == "2017-10-01T00:00:00+00:00"
    assert result.lab.workloads == () and dict(result.lab.usage_gpu_hours) == {}


def test_philly_jobs_are_numbered_in_submission_order_and_zero_durations_are_counted(tmp_path):
    # The lab's now is the first submission's day at midnight; submissions count from it, so
    # the first job (10:00) arrives 10 h into a simulation, at its own time of day.
    result = import_philly(philly_dir(tmp_path), rule=ALL_ALLOCATED)
    assert result.lab.now.isoformat() == "2017-10-01T00:00:00+00:00"
    assert result.jobs == (
        TraceJob(WorkloadId("philly-000001"), "vcB", 1, 36000.0, 600.0, 600.0, kind="debug"),
        TraceJob(WorkloadId("philly-000002"), "vcA", 8, 129600.0, 3600.0, H, kind="train"),
        TraceJob(WorkloadId("philly-000003"), "vcC", 64, 208800.0, 100.0, H, kind="train"),
    )
    s = result.summary
    assert (s.rows, s.imported, s.dropped) == (4, 3, {"duration 0": 1})
    assert s.too_large == 1  # 64 GPUs on a 48-GPU cluster: kept, counted
    assert s.span_days == 2.0 and s.attribution == PHILLY_ATTRIBUTION


def test_philly_gpus_per_node_and_the_csv_itself_as_source(tmp_path):
    result = import_philly(philly_dir(tmp_path) / "philly.csv", gpus_per_node=2)
    assert result.lab.cluster.installed_gpus == 12 and result.summary.too_large == 1


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            "2017-10-01 10:00:00,ten,1,0,vcA", "philly.csv:3: duration: expected a number"
        ),
        pytest.param("2017-10-01 10:00:00,-5,1,0,vcA", "philly.csv:3: duration: must not be"),
        pytest.param("2017-10-01 10:00:00,5,-1,0,vcA", "philly.csv:3: num_gpus: must not be"),
        pytest.param("2017-10-01 10:00:00,5,1.5,0,vcA", "philly.csv:3: num_gpus: expected a whole"),
        pytest.param("yesterday,5,1,5,vcA", "philly.csv:3: timestamp: expected a time"),
        pytest.param("2017-10-01 10:00:00,5,1,5,", "philly.csv:3: cluster: empty"),
        pytest.param("2017-10-01 10:00:00,5,1,vcA", "philly.csv:3: the row has 4 columns"),
        pytest.param("2017-10-01 10:00:00,5,1,5,vcA,x", "philly.csv:3: the row has 6 columns"),
    ],
)
def test_philly_bad_rows_name_file_line_and_field(tmp_path, line, expected):
    rows = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 09:00:00,5,1,5,vcA\n"
    folder = philly_dir(tmp_path, rows + line + "\n")
    with pytest.raises(InputError, match=expected):
        import_philly(folder)


def test_philly_needs_its_node_counts(tmp_path):
    folder = philly_dir(tmp_path)
    (folder / "philly_vc_nodes.csv").unlink()
    with pytest.raises(InputError, match="philly_vc_nodes.csv: no such file"):
        import_philly(folder)


# --- ITP on a fixture ---------------------------------------------------------------------

# Job a holds 4 GPUs for 10,000 s; five 4-GPU jobs spike demand to 24 GPUs for 100 s (1% of
# the time): the 95th percentile is 4 GPUs, the largest job 4 GPUs, so one host of 8.
ITP_ROWS = "job_id,submission_time,duration,num_gpu\na,1000,10000,4\n" + "".join(
    f"b{i},6000,100,4\n" for i in range(5)
)


def test_itp_cluster_is_sized_to_the_95th_percentile_of_demand(tmp_path):
    source = tmp_path / "c.csv"
    source.write_text(ITP_ROWS + "z,7000,50,0\n")
    result = import_itp(source, tenants=3)
    assert result.lab.cluster.installed_gpus == 8 and len(result.lab.cluster.hosts) == 1
    # Submissions count from the lab's now (the collection's first midnight): 1000 s after.
    assert [j.submitted_s for j in result.jobs] == [1000, 6000, 6000, 6000, 6000, 6000]
    assert [j.id for j in result.jobs][:2] == ["itp-000001", "itp-000002"]
    assert result.summary.dropped == {"num_gpu 0": 1} and result.summary.rows == 7
    shares = [round(c.share * 100, 6) for c in result.lab.budgets.root.children]
    assert shares == [54.545, 27.272, 18.181]  # weights 1, 1/2, 1/3 of 11/6
    assert result.lab.now.isoformat() == "2021-03-04T00:00:00+00:00"  # 1000 s after the start


def test_itp_tenants_follow_the_documented_seeded_rule(tmp_path):
    source = tmp_path / "c.csv"
    source.write_text(ITP_ROWS)
    result = import_itp(source, tenants=3, rule=MinRuntimeRule(seed=5))
    weights = [Fraction(1), Fraction(1, 2), Fraction(1, 3)]
    source_ids = ["a", "b0", "b1", "b2", "b3", "b4"]
    assert [j.budget for j in result.jobs] == [
        f"tenant{pick(weights, uniform(5, f'tenant:{s}')) + 1}" for s in source_ids
    ]


def test_itp_largest_job_sets_the_floor_and_a_folder_means_cluster01(tmp_path):
    (tmp_path / "cluster01.csv").write_text(ITP_ROWS + "big,2000,10,20\n")
    assert import_itp(tmp_path).lab.cluster.installed_gpus == 24


def test_concurrent_demand_percentile_is_weighted_by_time():
    assert concurrent_demand_percentile([(0, 10, 4), (0, 10, 4)]) == 8
    assert concurrent_demand_percentile([(0, 100, 4), (50, 10, 20)]) == 24  # 10% of the time
    assert concurrent_demand_percentile([(0, 100, 4), (50, 1, 20)]) == 4  # 1% of the time


def test_itp_repeated_ids_are_an_input_error(tmp_path):
    source = tmp_path / "c.csv"
    source.write_text(ITP_ROWS + "a,9000,5,1\n")
    with pytest.raises(InputError, match=r"c.csv:8: job_id: 'a' also on line 2"):
        import_itp(source)


# --- the real traces ----------------------------------------------------------------------

needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="shared/traces not present")


def check_written(result, tmp_path: Path) -> list[TraceJob]:
    trace, lab = tmp_path / "trace.csv", tmp_path / "lab.yaml"
    trace.write_text(trace_text(result.jobs))
    lab.write_text(dump_instance(result.lab))
    loaded = load_instance(lab)
    jobs = read_trace(
        trace, budgets=loaded.budgets, max_min_runtime_s=loaded.policy.max_min_runtime_s
    )
    assert jobs == list(result.jobs)
    assert loaded.cluster.installed_gpus == result.lab.cluster.installed_gpus
    return jobs


@needs_traces
def test_the_real_philly_trace_imports_every_one_of_its_82247_jobs(tmp_path):
    result = import_philly(PHILLY)
    s = result.summary
    assert (s.rows, s.imported, s.dropped) == (82_247, 82_247, {})
    assert (s.hosts, s.gpus) == (356, 2848)  # 352 counted nodes + 4 VCs without a count
    assert len(result.lab.budgets.leaves()) == 15
    assert sum(c.share for c in result.lab.budgets.root.children) <= 1.0
    assert result.lab.now.isoformat() == "2017-09-04T00:00:00+00:00"
    assert abs(s.kinds["unallocated"] / s.imported - 0.10) < 0.005
    jobs = check_written(result, tmp_path)
    assert max(j.runtime_s for j in jobs) == 4_628_226.0  # every second kept (1285.6 h)


@needs_traces
def test_the_real_itp_cluster01_imports_its_1595_jobs(tmp_path):
    result = import_itp(ITP / "cluster01.csv")
    s = result.summary
    assert (s.rows, s.imported, s.dropped) == (1595, 1595, {})
    assert s.gpus % 8 == 0 and s.gpus >= 64  # at least the largest job (64 GPUs)
    assert round(s.span_days, 1) == 33.8
    check_written(result, tmp_path)


# --- the command --------------------------------------------------------------------------


def run(*args: str | Path):
    return CliRunner().invoke(app, ["trace", "import", *(str(a) for a in args)])


def test_the_command_writes_the_trace_and_the_lab_and_credits_philly(tmp_path):
    (tmp_path / "out").mkdir()  # an output's folder is not made (issue 17): it exists
    trace, lab = tmp_path / "out" / "t.csv", tmp_path / "out" / "lab.yaml"
    result = run("philly", philly_dir(tmp_path), "-o", trace, "--lab", lab, "--unallocated", "0")
    assert result.exit_code == 0, result.output
    assert "3 jobs imported" in result.stdout and "1 duration 0" in result.stdout
    assert PHILLY_ATTRIBUTION in result.stdout
    # what was written is the command's result: on stdout, as solve and generate say theirs
    assert result.stdout.splitlines()[-2:] == [f"trace written to {trace}", f"lab written to {lab}"]
    assert "written" not in result.stderr
    assert "CC BY 4.0" in lab.read_text()
    loaded = load_instance(lab)
    assert len(read_trace(trace, budgets=loaded.budgets)) == 3


def test_the_command_imports_itp_with_its_own_options(tmp_path):
    source, trace = tmp_path / "c.csv", tmp_path / "t.csv"
    source.write_text(ITP_ROWS)
    result = run("itp", source, "-o", trace, "--tenants", "2", "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "tenants assigned by a seeded rule" in result.stdout
    assert {j.budget for j in read_trace(trace)} <= {"tenant1", "tenant2"}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param("bad-row", "philly.csv:2: duration: expected a number", id="bad row"),
        pytest.param("missing", "no such file or folder", id="missing source"),
        pytest.param("tenants", "--tenants: applies to itp only", id="option of the other"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, case, expected):
    rows = PHILLY_ROWS.replace("3600.0,8", "ten,8")
    folder = philly_dir(tmp_path, rows)
    args: list[str | Path] = ["philly", folder]
    if case == "missing":
        args = ["philly", tmp_path / "nowhere"]
    elif case == "tenants":
        args = ["philly", philly_dir(tmp_path), "--tenants", "3"]
    trace, lab = tmp_path / "t.csv", tmp_path / "lab.yaml"
    result = run(*args, "-o", trace, "--lab", lab)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr and "Traceback" not in result.output
    assert not trace.exists() and not lab.exists()


@pytest.mark.parametrize("which", ["-o", "--lab"])
def test_an_output_under_a_file_is_bad_input_and_nothing_is_written(tmp_path, which):
    blocker = tmp_path / "taken"
    blocker.write_text("a file\n")
    trace, lab = tmp_path / "t.csv", tmp_path / "lab.yaml"
    if which == "-o":
        trace = blocker / "t.csv"
    else:
        lab = blocker / "lab.yaml"
    result = run("philly", philly_dir(tmp_path), "-o", trace, "--lab", lab)
    assert result.exit_code == 2, result.output
    assert "taken is a file" in result.stderr
    assert not trace.exists() and not lab.exists() and blocker.read_text() == "a file\n"


# --- the trace CSV's own errors -----------------------------------------------------------

HEADER = "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
TREE = BudgetTree(
    BudgetNode("root", 1.0, (), (BudgetNode("nlp", 1.0, (), (BudgetNode("olmo", 1.0),)),))
)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        pytest.param("w2,vision,1,0,60,0,true,0,", ":3: budget: unknown budget", id="unknown"),
        pytest.param(
            "w2,nlp,1,0,60,0,true,0,",
            ":3: budget: 'nlp' is not a leaf of the budget tree; work is charged to a leaf, "
            "such as nlp/olmo",
            id="not leaf",
        ),
        pytest.param(
            "w2,root,1,0,60,0,true,0,",
            ":3: budget: 'root' is the root of the budget tree, the whole cluster, and cannot be "
            "a budget: work is charged to a leaf below it, such as nlp/olmo",
            id="the root",
        ),
        pytest.param("w2,nlp/olmo,1,0,60,0,true", ":3: priority: the row has too few", id="few"),
        pytest.param("w2,nlp/olmo,1,0,60,0,true,0,,x", ":3: the row has more columns", id="many"),
        pytest.param("w2,nlp/olmo,1,0,-60,0,true,0,", ":3: runtime: must be above 0 s", id="neg"),
        pytest.param("w2,nlp/olmo,1,0,0,0,true,0,", ":3: runtime: must be above 0", id="zero"),
        pytest.param("w2,nlp/olmo,two,0,60,0,true,0,", ":3: gpus: expected a positive", id="gpus"),
        pytest.param("w2,nlp/olmo,1,0,60,soon,true,0,", ":3: min_runtime: expected", id="minrt"),
        pytest.param("w2,nlp/olmo,1,0,60,9h,true,0,", ":3: min_runtime: 9h is above", id="max"),
        pytest.param(
            "w1,nlp/olmo,1,0,60,0,true,0,", ":3: id: job id 'w1' also on line 2", id="dup"
        ),
    ],
)
def test_trace_csv_errors_name_file_line_and_field(tmp_path, row, expected):
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + "w1,nlp/olmo,1,0,60,15m,true,0,\n" + row + "\n")
    with pytest.raises(InputError) as error:
        read_trace(path, budgets=TREE, max_min_runtime_s=8 * H)
    assert str(error.value).startswith(str(path) + ":3: ")
    assert expected in str(error.value)


WIDE = BudgetTree(
    BudgetNode(
        "lab",
        1.0,
        (),
        (
            BudgetNode("nlp", 0.6, (), tuple(BudgetNode(n, 0.25) for n in ("a", "b", "c", "d"))),
            BudgetNode("vision", 0.4),
        ),
    )
)


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        pytest.param(
            "lab",
            "'lab' is the root of the budget tree, the whole cluster, and cannot be a budget: "
            "work is charged to a leaf below it, such as nlp/a, nlp/b, nlp/c, …",
            id="the root",
        ),
        pytest.param(
            "nlp",
            "'nlp' is not a leaf of the budget tree; work is charged to a leaf, such as "
            "nlp/a, nlp/b, nlp/c, …",
            id="not leaf",
        ),
    ],
)
def test_a_trace_row_charged_above_the_leaves_is_pointed_to_a_few_leaves(
    tmp_path, budget, expected
):
    """`budget: lab` was pointed to `nlp`, the root's child, which is refused too (not a
    leaf): the hint names leaves, the first three and `…` after them."""
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + f"w1,{budget},1,0,60,15m,true,0,\n")
    with pytest.raises(InputError) as error:
        read_trace(path, budgets=WIDE, max_min_runtime_s=8 * H)
    assert str(error.value) == f"{path}:2: budget: {expected}"


def test_trace_csv_keeps_every_second():
    job = TraceJob(WorkloadId("w"), None, 1, 9_123_457.0, 2_240_194.5, 1234.5)
    from alloc.io.trace_csv import parse_trace

    assert parse_trace(trace_text([job])) == [job]


def test_the_gpu_type_column_is_read_and_written_only_when_a_job_names_one():
    from alloc.io.trace_csv import parse_trace

    plain = TraceJob(WorkloadId("w"), None, 1, 0.0, 60.0, 0.0)
    typed = TraceJob(WorkloadId("t"), None, 8, 0.0, 60.0, 0.0, gpu_type="a100")
    assert "gpu_type" not in trace_text([plain])
    assert trace_text([plain, typed]).splitlines()[0].endswith(",util,kind,gpu_type")
    assert parse_trace(trace_text([plain, typed])) == [typed, plain]


@pytest.mark.parametrize("option", ["-o", "--lab"])
def test_an_output_over_philly_node_counts_beside_its_csv_is_bad_input(tmp_path, option):
    folder = philly_dir(tmp_path)
    nodes = folder / "philly_vc_nodes.csv"
    kept = nodes.read_text()
    trace, lab = tmp_path / "t.csv", tmp_path / "lab.yaml"
    if option == "-o":
        trace = nodes
    else:
        lab = nodes
    result = run("philly", folder / "philly.csv", "-o", trace, "--lab", lab)
    assert result.exit_code == 2, result.output
    assert "would overwrite the raw trace" in result.stderr
    assert nodes.read_text() == kept


@pytest.mark.parametrize("into", ["the source file", "the source folder"])
def test_an_output_over_the_raw_trace_is_bad_input_and_the_trace_is_kept(tmp_path, into):
    if into == "the source file":
        source = tmp_path / "c.csv"
        source.write_text(ITP_ROWS)
        trace = source
    else:
        source = tmp_path / "raw"
        source.mkdir()
        (source / "cluster01.csv").write_text(ITP_ROWS)
        trace = source / "cluster01.csv"
    result = run("itp", source, "-o", trace)
    assert result.exit_code == 2, result.output
    assert "would overwrite the raw trace" in result.stderr
    assert trace.read_text() == ITP_ROWS


@pytest.mark.parametrize("text", ["", "\n  \n", "\ufeff"])
def test_an_empty_trace_says_the_file_is_empty_not_which_columns_it_lacks(tmp_path, text):
    # An empty trace said `missing columns id, budget, ...`, where an empty YAML says
    # `the file is empty`.
    import yaml
    from conftest import host, instance

    path = tmp_path / "trace.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_trace(path)
    assert str(error.value).startswith(f"{path}: the file is empty (a trace has a header line")
    lab = tmp_path / "lab.yaml"
    data = instance(hosts=[host("h1")])
    data.pop("workloads")
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    args = ["simulate", str(lab), "--trace", str(path), "--days", "0.01", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"{path}: the file is empty" in result.stderr and "missing columns" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("importer", "given", "expected"),
    [
        pytest.param(
            "philly",
            "itp-folder",
            [
                "not a Philly trace: it holds no philly.csv",
                "it looks like an ITP trace: alloc trace import itp",
            ],
            id="philly given an ITP folder",
        ),
        pytest.param(
            "philly",
            "itp-file",
            ["not a Philly trace: its columns are not Philly's", "looks like an ITP trace"],
            id="philly given an ITP CSV",
        ),
        pytest.param(
            "philly",
            "empty-folder",
            ["not a Philly trace: it holds no philly.csv"],
            id="philly given a folder of neither",
        ),
        pytest.param(
            "itp",
            "philly-folder",
            ["not an ITP trace: it holds no cluster01.csv", "looks like a Philly trace"],
            id="itp given a Philly folder",
        ),
    ],
)
def test_an_importer_given_the_other_kind_of_trace_says_so(tmp_path, importer, given, expected):
    # `alloc trace import philly` of an ITP folder said `philly_vc_nodes.csv: no such file`.
    itp = tmp_path / "itp"
    itp.mkdir()
    (itp / "cluster01.csv").write_text(ITP_ROWS)
    (tmp_path / "neither").mkdir()
    source = {
        "itp-folder": itp,
        "itp-file": itp / "cluster01.csv",
        "empty-folder": tmp_path / "neither",
        "philly-folder": philly_dir(tmp_path),
    }[given]
    trace, lab = tmp_path / "t.csv", tmp_path / "lab.yaml"
    result = run(importer, source, "-o", trace, "--lab", lab)
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    assert all(e in said for e in expected), said
    assert "looks like" not in said or given != "empty-folder"
    assert not trace.exists() and not lab.exists()

from conftest import actions, instance, solve_checked, workload


def test_a_single_queued_workload_starts_on_an_empty_cluster(solver):
    plan = solve_checked(instance(workloads=[workload("w1", 4)]), solver)
    assert actions(plan) == {"w1": "start"}


def test_when_everything_fits_the_knapsack_bound_proves_the_greedy_plan_optimal():
    plan = solve_checked(instance(workloads=[workload("w1", 4), workload("w2", 8)]), "milp")
    assert plan.report.status == "optimal"
    assert plan.report.bound is not None and plan.report.gap is not None
    assert plan.report.gap <= 0.001
    assert "knapsack" in plan.report.note

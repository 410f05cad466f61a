from conftest import actions, instance, solve_checked, workload


def test_a_single_queued_workload_starts_on_an_empty_cluster(solver):
    plan = solve_checked(instance(workloads=[workload("w1", 4)]), solver)
    assert actions(plan) == {"w1": "start"}

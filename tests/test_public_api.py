import alloc
import alloc.domain
import alloc.io


def test_the_top_level_api_is_pinned():
    assert alloc.__all__ == [
        "InputError",
        "InvalidPlanError",
        "Plan",
        "RoundOptions",
        "Rounds",
        "Snapshot",
        "dump_plan",
        "load_instance",
        "load_plan",
        "parse_instance",
        "run_round",
        "validate",
    ]
    for name in alloc.__all__:
        assert getattr(alloc, name) is not None


def test_the_domain_and_io_apis_are_pinned():
    assert set(alloc.domain.__all__) >= {
        "Action",
        "BudgetTree",
        "Cluster",
        "Decision",
        "Host",
        "HostState",
        "Occupancy",
        "Plan",
        "Policy",
        "Reason",
        "Snapshot",
        "SolverReport",
        "Topology",
        "Workload",
    }
    assert set(alloc.io.__all__) == {
        "InputError",
        "SCHEMA_FILE",
        "dump_instance",
        "dump_plan",
        "json_schema",
        "load_instance",
        "load_plan",
        "parse_instance",
        "plan_to_dict",
    }


def test_the_explain_api_is_pinned():
    """`alloc explain`'s package (facts, why, change and room beneath it) exports the function
    and its result; callers import them from `alloc.explain`."""
    import alloc.explain

    assert alloc.explain.__all__ == ["Explanation", "explain"]
    assert callable(alloc.explain.explain)


def test_the_domain_imports_nothing_else_of_ours():
    import ast
    from pathlib import Path

    for path in Path(alloc.domain.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("alloc"):
                assert node.module.startswith("alloc.domain"), f"{path.name}: {node.module}"


def test_imports_point_down():
    """cli -> round -> solve/policy -> domain; io is read and written only at the edges."""
    import ast
    from pathlib import Path

    root = Path(alloc.__file__).parent
    forbidden = {
        "policy": ("alloc.solve", "alloc.round", "alloc.cli", "alloc.io"),
        "solve": ("alloc.round", "alloc.cli", "alloc.io"),
        "io": ("alloc.solve", "alloc.policy", "alloc.round", "alloc.cli"),
    }
    for package, banned in forbidden.items():
        for path in (root / package).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module:
                    assert not node.module.startswith(banned), f"{package}/{path.name}"

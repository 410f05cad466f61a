"""The command line starts without loading what only some commands need (issue 17): the
solvers (OR-Tools, scipy), the plots (matplotlib) and the instance reader load when a command
that uses them runs, and OR-Tools only when a round builds its model, so `alloc --help` and
`alloc solve` of a small instance do not wait for them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "instances" / "examples"


def loaded_by(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in out.stdout.split()}


def test_the_command_line_loads_neither_the_solvers_nor_the_plots():
    loaded = loaded_by("import alloc.cli.app")
    assert {"ortools", "matplotlib", "numpy", "scipy", "yaml"}.isdisjoint(loaded), loaded


def test_the_public_api_loads_what_it_gives_when_it_is_used():
    assert {"ortools", "numpy"}.isdisjoint(loaded_by("import alloc"))
    assert "numpy" in loaded_by("import alloc; alloc.run_round")


def _solved(name: str) -> str:
    path = str(EXAMPLES / name)
    return (
        "import alloc; from alloc.io import load_instance; "
        f"p = alloc.run_round(load_instance({path!r})); "
        "assert p.report.solver == 'milp', p.report"
    )


def test_a_round_that_needs_no_model_loads_no_solver():
    # drain.yaml: the greedy plan is within the gap of the knapsack bound (the shortcut)
    assert {"ortools", "scipy"}.isdisjoint(loaded_by(_solved("drain.yaml")))


def test_a_small_model_is_solved_without_scipy():
    # unfunded.yaml needs the model (a few terms): OR-Tools, filled term by term
    loaded = loaded_by(_solved("unfunded.yaml"))
    assert "ortools" in loaded and "scipy" not in loaded, loaded


def _modules_of_command(*args: str) -> set[str]:
    code = (
        "import sys; from alloc.cli.app import app; "
        f"app({list(args)!r}, standalone_mode=False); "
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


OTHERS = {
    "alloc.cli.sim_cmd", "alloc.cli.whatif_cmd", "alloc.cli.export_cmd",
    "alloc.cli.controller_cmd", "alloc.cli.trace_cmd", "alloc.cli.budgets_cmd",
    "alloc.cli.live_cmd", "alloc.cli.queue_cmd",
}  # fmt: skip


def test_a_command_loads_only_its_own_module_of_the_command_line():
    """`alloc solve` does not import (nor have typer build) the simulator's, the controller's or
    the export's options: each command's module loads when it runs or its help is asked for."""
    others = OTHERS
    assert others.isdisjoint(_modules_of_command("solve", str(EXAMPLES / "drain.yaml")))
    assert others.isdisjoint(_modules_of_command("schema"))
    loaded = _modules_of_command("queue", str(EXAMPLES / "drain.yaml"))
    assert "alloc.cli.queue_cmd" in loaded and "alloc.cli.sim_cmd" not in loaded


def test_schema_prints_its_shipped_copy_without_building_the_models():
    assert "alloc.io.schema" not in _modules_of_command("schema")


def test_a_command_without_options_loads_no_pydantic():
    """typer coerces each option through pydantic; its own --help (None unless given) is
    taken as the flag it is, so `alloc schema` and `alloc --help` start without pydantic."""
    for argv in (("schema",), ("--help",), ("schema", "--help"), ("controller", "--help")):
        loaded = _modules_of_command(*argv)
        assert "pydantic" not in {name.split(".")[0] for name in loaded}, argv


def test_the_list_of_commands_loads_none_of_their_modules():
    """`alloc --help` lists every command from alloc.cli.commands.SUMMARIES."""
    assert OTHERS.isdisjoint(_modules_of_command("--help"))


def test_python_dash_m_alloc_is_the_alloc_command():
    done = subprocess.run(
        [sys.executable, "-m", "alloc", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("alloc "), done

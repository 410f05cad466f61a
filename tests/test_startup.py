"""The command line starts without loading what only some commands need (issue 17): the
solvers (OR-Tools), the plots (matplotlib) and the instance reader (pydantic) load when a
command that uses them runs, so `alloc --help` does not wait for them."""

from __future__ import annotations

import subprocess
import sys


def loaded_by(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in out.stdout.split()}


def test_the_command_line_loads_neither_the_solvers_nor_the_plots():
    loaded = loaded_by("import alloc.cli.app")
    assert {"ortools", "matplotlib", "numpy", "scipy"}.isdisjoint(loaded), loaded


def test_the_public_api_loads_what_it_gives_when_it_is_used():
    assert "ortools" not in loaded_by("import alloc")
    assert "ortools" in loaded_by("import alloc; alloc.run_round")

"""A bad number (or choice) on the command line is bad input in alloc's words, exit 2: what the
option takes and what was given, not pydantic's message (typer 0.29 checks types and ranges
with pydantic: `Input should be greater than or equal to 1`). Every numeric option of every
command is checked this way (alloc.cli.params)."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from importlib import import_module
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.cli.commands import COMMANDS
from alloc.cli.params import Number


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["simulate", "--synthetic", "--days", "0"],
            "Invalid value for '--days': expected a number above 0, got '0'",
            id="zero days are no run",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--days", "abc"],
            "Invalid value for '--days': expected a number above 0, got 'abc'",
            id="days that are no number",
        ),
        pytest.param(
            ["whatif", "--synthetic", "--days", "inf"],
            "Invalid value for '--days': expected a number above 0, got 'inf'",
            id="a run without end",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--seed", "1.5"],
            "Invalid value for '--seed': expected a whole number, got '1.5'",
            id="a seed is a whole number",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--legacy-top", "2"],
            "Invalid value for '--legacy-top': expected a number from 0 to 1, got '2'",
            id="a fraction above 1",
        ),
        pytest.param(
            ["whatif", "--synthetic", "--legacy-cap", "-1"],
            "Invalid value for '--legacy-cap': expected a number of at least 0, got '-1'",
            id="a negative multiple",
        ),
        pytest.param(
            ["whatif", "--synthetic", "--jobs", "0"],
            "Invalid value for '--jobs': expected a whole number of at least 1, got '0'",
            id="no parallel process",
        ),
        pytest.param(
            ["generate", "--hosts", "1.5"],
            "Invalid value for '--hosts': expected a whole number of at least 1, got '1.5'",
            id="half a host",
        ),
        pytest.param(
            ["generate", "--running", "nan"],
            "Invalid value for '--running': expected a number from 0 to 1, got 'nan'",
            id="a share that is not a number",
        ),
        pytest.param(
            ["generate", "--demand", "inf"],
            "Invalid value for '--demand': expected a number of at least 0, got 'inf'",
            id="endless demand",
        ),
        pytest.param(
            ["generate", "--depth", "0", "--width", "2"],
            "Invalid value for '--depth': expected a whole number of at least 1, got '0'",
            id="a tree without levels",
        ),
        pytest.param(
            ["solve", "x.yaml", "--depth", "0"],
            "Invalid value for '--depth': expected a whole number of at least 1, got '0'",
            id="no budget level shown",
        ),
        pytest.param(
            ["controller", "run", "--config", "x.yaml", "--rounds", "0"],
            "Invalid value for '--rounds': expected a whole number of at least 1, got '0'",
            id="no round to run",
        ),
        pytest.param(
            ["trace", "import", "philly", "x", "-o", "t.csv", "--unallocated", "1.5"],
            "Invalid value for '--unallocated': expected a number from 0 to 1, got '1.5'",
            id="a fraction of jobs above 1",
        ),
        pytest.param(
            ["trace", "import", "philly", "x", "-o", "t.csv", "--gpus-per-node", "eight"],
            "Invalid value for '--gpus-per-node': expected a whole number of at least 1, "
            "got 'eight'",
            id="GPUs per node in words",
        ),
        pytest.param(
            ["trace", "import", "sia", "x", "-o", "t.csv"],
            "Invalid value for 'KIND': expected philly or itp, got 'sia'",
            id="an unknown trace source",
        ),
    ],
)
def test_a_bad_value_says_what_the_option_takes_and_exits_2(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr, result.stderr
    assert "Input should" not in result.stderr and "Value error" not in result.stderr


def test_good_values_and_defaults_pass_as_numbers_of_their_type():
    assert Number(int, min=1)("8") == 8 and Number(int, min=1)(128) == 128
    assert Number(float, above=0.0)(" 1e-3 ") == 0.001
    assert Number(float, min=0.0, max=1.0)(1) == 1.0
    assert isinstance(Number(float)(1), float)


def _commands(group: typer.Typer) -> Iterator[tuple[str, Any]]:
    for command in group.registered_commands:
        assert command.callback is not None
        yield command.name or command.callback.__name__, command.callback
    for sub in group.registered_groups:
        assert sub.typer_instance is not None
        yield from _commands(sub.typer_instance)
    if group is app:  # the commands alloc.cli.commands loads when they run
        for name, where in COMMANDS.items():
            if where:
                module, attribute = where.split(":")
                found = getattr(import_module(module), attribute)
                if isinstance(found, typer.Typer):
                    yield from _commands(found)
                else:
                    yield name, found


def test_every_numeric_option_of_every_command_is_read_by_alloc():
    numeric = []
    for name, callback in _commands(app):
        for param, hint in typing.get_type_hints(callback, include_extras=True).items():
            kind, *infos = typing.get_args(hint) if typing.get_origin(hint) else (hint,)
            if not {int, float} & {kind, *typing.get_args(kind)}:
                continue
            numeric.append(f"{name} --{param}")
            parsers = [getattr(info, "parser", None) for info in infos]
            assert any(isinstance(p, Number) for p in parsers), f"typer reads {name} --{param}"
    assert len(numeric) > 15, numeric  # the walk found the commands' options

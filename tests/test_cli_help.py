"""The help of every command reads as git's and click's does, in 80 columns: arguments in
capitals (`alloc explain [OPTIONS] INSTANCE [WORKLOAD]`, not typer's `{instance}`, braces that
read as a set of choices), every option with a metavar that says what it takes (`--hosts N`,
`--out DIR`, not `<int range>` or `<list[Path]>`), and `alloc --help` a whole summary of each
command on one line (not its docstring cut mid-sentence)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.cli.commands import COMMANDS, SUMMARIES, Command


def help_of(*words: str) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command and group below `group` (lazy ones loaded), with its words."""
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield (*path, name), command
        if hasattr(command, "list_commands"):
            yield from commands(command, (*path, name))


ALL = list(commands(typer.main.get_command(app)))
LEAVES = [(words, c) for words, c in ALL if not hasattr(c, "list_commands")]


def test_every_command_is_an_alloc_command():
    assert len(LEAVES) >= 15, [w for w, _ in LEAVES]
    assert all(isinstance(c, Command) for _, c in LEAVES), [
        " ".join(w) for w, c in LEAVES if not isinstance(c, Command)
    ]


@pytest.mark.parametrize("words", [(), *(w for w, _ in ALL)], ids=lambda w: " ".join(w) or "alloc")
def test_help_fits_80_columns_and_shows_no_python_type(words):
    text = help_of(*words)
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert not re.search(r"<[a-zA-Z]", text), text  # <path>, <str>, <int range>, <list[str]>
    assert "{" not in text, text


@pytest.mark.parametrize(
    ("words", "usage"),
    [
        (["solve"], "alloc solve [OPTIONS] INSTANCE"),
        (["validate"], "alloc validate [OPTIONS] INSTANCE PLAN"),
        (["explain"], "alloc explain [OPTIONS] [INSTANCE] [WORKLOAD]"),  # --config: no instance
        (["queue"], "alloc queue [OPTIONS] [INSTANCE]"),
        (["export"], "alloc export [OPTIONS] PLAN"),
        (["trace", "import"], "alloc trace import [OPTIONS] KIND SOURCE"),
        (["budgets", "set"], "alloc budgets set [OPTIONS] PATH SHARE"),
    ],
)
def test_usage_names_the_arguments_in_capitals(words, usage):
    text = help_of(*words)
    assert text.splitlines()[0] == f"Usage: {usage}"
    for name in usage.split()[3 + len(words) - 1 :]:
        assert f"\n  {name.strip('[]')}  " in text, text  # listed under Arguments


@pytest.mark.parametrize(
    ("words", "option"),
    [
        (["generate"], "--hosts N "),
        (["generate"], "--running FRACTION "),
        (["generate"], "-o, --output FILE "),
        (["simulate"], "--out DIR "),
        (["simulate"], "--min-round-gap DURATION "),
        (["whatif"], "--scenario FILE "),
        (["queue"], "--budget PATH "),
        (["solve"], "--time-limit DURATION "),
    ],
)
def test_an_option_shows_what_it_takes(words, option):
    assert f"  {option}" in help_of(*words)


def test_alloc_help_lists_each_command_with_its_whole_summary_on_one_line():
    text = help_of()
    assert set(SUMMARIES) == set(COMMANDS)
    for name, summary in SUMMARIES.items():
        assert re.search(rf"^  {name} +{re.escape(summary)}$", text, re.MULTILINE), (name, text)
    assert "..." not in text.split("Commands:")[1]


def test_subcommands_are_listed_with_a_summary_that_is_not_cut():
    for words in (["trace"], ["controller"], ["budgets"]):
        assert "..." not in help_of(*words).split("Commands:")[1]


def test_trace_import_shows_its_defaults_as_every_option_does():
    text = help_of("trace", "import")
    assert "--gpus-per-node N" in text and "[default: 8; x>=1]" in text
    assert "(default 8)" not in text


def test_the_round_gap_says_what_it_does():
    text = " ".join(help_of("simulate").split())
    assert "call a round at most this often" in text
    assert "Event rounds coalesce." not in text

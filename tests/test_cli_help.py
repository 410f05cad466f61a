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


def help_at(width: int, words: tuple[str, ...], command: Any) -> str:
    """The help of a command as a terminal `width` columns wide shows it (CliRunner forces
    80 columns, whatever COLUMNS says; a terminal of 80 gets 78)."""
    ctx = command.context_class(
        command, info_name=" ".join(("alloc", *words)), terminal_width=width
    )
    return str(command.get_help(ctx))


@pytest.mark.parametrize("width", [80, 78, 70, 60])
@pytest.mark.parametrize(("words", "command"), ALL, ids=[" ".join(w) for w, _ in ALL])
def test_no_help_line_is_broken_at_a_hyphen(words, command, width):
    """textwrap breaks after a hyphen and click leaves that on: `alloc queue --help` read
    `(read-` / `only)` in an 80-column terminal (alloc.cli.commands._Formatter)."""
    text = help_at(width, words, command)
    broken = [line for line in text.splitlines() if re.search(r"\w-$", line)]
    assert not broken, text
    assert "\u2011" not in text  # the hyphens are written back as typed


@pytest.mark.parametrize("width", range(60, 101))
def test_queue_help_keeps_read_only_whole_at_any_width(width):
    (command,) = [c for w, c in ALL if w == ("queue",)]
    text = " ".join(help_at(width, ("queue",), command).split())
    assert "(read-only)" in text and "running-protected" in text


@pytest.mark.parametrize("words", [(), *(w for w, _ in ALL)], ids=lambda w: " ".join(w) or "alloc")
def test_help_shows_numbers_as_a_person_writes_them(words):
    """`[default: 30]`, `0<=x<=1`: not typer's `30.0` and `0.0<=x<=1.0`."""
    text = help_of(*words)
    assert not re.search(r"\b\d+\.0\b", text), text


@pytest.mark.parametrize(
    ("words", "shown"),
    [
        (["simulate"], "[default: 30]"),
        (["simulate"], "[default: 1; x>=0]"),  # --legacy-cap
        (["generate"], "[default: 0; 0<=x<=1]"),  # --unhealthy
        (["generate"], "[default: 2.5; x>=0]"),  # --demand
    ],
)
def test_a_number_s_default_and_bounds_are_shown_as_written(words, shown):
    assert shown in " ".join(help_of(*words).split()), help_of(*words)

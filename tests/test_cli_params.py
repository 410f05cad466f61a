"""A bad number (or choice) on the command line is bad input in alloc's words, exit 2: what the
option takes and what was given, not pydantic's message (typer 0.29 checks types and ranges
with pydantic: `Input should be greater than or equal to 1`). Every numeric option of every
command is checked this way (alloc.cli.params). It is said in the one form of all bad input
on the command line, `error: alloc COMMAND: OPTION: what is wrong`, on one line."""

from __future__ import annotations

import shutil
import typing
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
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
            "error: alloc simulate: --days: expected a number above 0, got '0'",
            id="zero days are no run",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--days", "abc"],
            "error: alloc simulate: --days: expected a number above 0, got 'abc'",
            id="days that are no number",
        ),
        pytest.param(
            ["whatif", "--synthetic", "--days", "inf"],
            "error: alloc whatif: --days: expected a finite number above 0, got 'inf'",
            id="a run without end",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--seed", "1.5"],
            "error: alloc simulate: --seed: expected a whole number, got '1.5'",
            id="a seed is a whole number",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--legacy-top", "2"],
            "error: alloc simulate: --legacy-top: expected a number from 0 to 1, got '2'",
            id="a fraction above 1",
        ),
        pytest.param(
            ["whatif", "--synthetic", "--legacy-cap", "-1"],
            "error: alloc whatif: --legacy-cap: expected a number of at least 0, got '-1'",
            id="a negative multiple",
        ),
        pytest.param(
            ["whatif", "--synthetic", "--jobs", "0"],
            "error: alloc whatif: --jobs: expected a whole number of at least 1, got '0'",
            id="no parallel process",
        ),
        pytest.param(
            ["generate", "--hosts", "1.5"],
            "error: alloc generate: --hosts: expected a whole number of at least 1, got '1.5'",
            id="half a host",
        ),
        pytest.param(
            ["generate", "--running", "nan"],
            "error: alloc generate: --running: expected a finite number from 0 to 1, got 'nan'",
            id="a share that is not a number",
        ),
        pytest.param(
            ["generate", "--demand", "inf"],
            "error: alloc generate: --demand: expected a finite number of at least 0, got 'inf'",
            id="endless demand",
        ),
        pytest.param(
            ["generate", "--depth", "0", "--width", "2"],
            "error: alloc generate: --depth: expected a whole number of at least 1, got '0'",
            id="a tree without levels",
        ),
        pytest.param(
            ["solve", "x.yaml", "--depth", "0"],
            "error: alloc solve: --depth: expected a whole number of at least 1, got '0'",
            id="no budget level shown",
        ),
        pytest.param(
            ["controller", "run", "--config", "x.yaml", "--rounds", "0"],
            "error: alloc controller run: --rounds: expected a whole number of at least 1, got '0'",
            id="no round to run",
        ),
        pytest.param(
            ["trace", "import", "philly", "x", "-o", "t.csv", "--unallocated", "1.5"],
            "error: alloc trace import: --unallocated: expected a number from 0 to 1, got '1.5'",
            id="a fraction of jobs above 1",
        ),
        pytest.param(
            ["trace", "import", "philly", "x", "-o", "t.csv", "--gpus-per-node", "eight"],
            "error: alloc trace import: --gpus-per-node: expected a whole number of at least 1, "
            "got 'eight'",
            id="GPUs per node in words",
        ),
        pytest.param(
            ["trace", "import", "sia", "x", "-o", "t.csv"],
            "error: alloc trace import: KIND: expected philly or itp, got 'sia'",
            id="an unknown trace source",
        ),
    ],
)
def test_a_bad_value_says_what_the_option_takes_and_exits_2(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr == message + "\n", result.stderr
    assert "Input should" not in result.stderr and "Value error" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["generate", "--levels", "4,2"],
            "error: alloc generate: --levels: expected positive, non-decreasing counts",
            id="a value alloc checks",
        ),
        pytest.param(
            ["solve", "x.yaml", "--solver", "foo"],
            "error: alloc solve: --solver: expected milp or greedy, got 'foo'",
            id="a choice alloc checks",
        ),
        pytest.param(
            ["solve", "x.yaml", "--time-limit=-1"],
            "error: alloc solve: --time-limit: expected a duration above 0, got '-1'",
            id="a negative duration: out of bounds as 0 is, not misspelt",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--progress-every=-5m"],
            "error: alloc simulate: --progress-every: expected a duration of at least 0, got '-5m'",
            id="a negative duration where 0 is allowed",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--days", "1e-9"],
            "error: alloc simulate: --days: expected at least one --round-interval of simulated "
            "time, 5 min (0.00347 days), got 1e-09",
            id="less simulated time than one round",
        ),
        pytest.param(
            ["queue", "x.yaml", "--state", "wating"],
            "error: alloc queue: --state: expected one of running-protected, running, "
            "preempted, starting, waiting, got 'wating'",
            id="a bad state: the shape of every bad choice",
        ),
        pytest.param(
            ["queue", "x.yaml", "--sort", "size"],
            "error: alloc queue: --sort: expected one of wait, gpus, budget, state, id, ratio, "
            "got 'size'",
            id="a bad sort key: the same shape",
        ),
        pytest.param(
            ["simulate", "--days", "1", "--synthetic", "--policy", "nosuch"],
            "error: alloc simulate: --policy: expected one of ",
            id="a bad policy: the same shape",
        ),
        pytest.param(
            ["budgets", "set", "a", "200%", "--as", "me", "--config", "c.yaml"],
            "error: alloc budgets set: SHARE: a share is between 0% and 100%",
            id="an argument",
        ),
    ],
)
def test_bad_input_on_the_command_line_is_said_in_one_form(args, message):
    """Whether typer finds it or alloc: `error: alloc COMMAND: OPTION: what is wrong`."""
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("args", "message", "usage"),
    [
        (["export", "p.json", "--bogus"], "no such option: --bogus", "alloc export [OPTIONS] PLAN"),
        (["export", "p.json"], "--to: required, but not given", "alloc export [OPTIONS] PLAN"),
        (
            ["validate", "x.yaml"],
            "PLAN: required, but not given",
            "alloc validate [OPTIONS] INSTANCE PLAN",
        ),
        (["nosuch"], "no such command 'nosuch'", "alloc [OPTIONS] COMMAND [ARGS]..."),
        (  # options given together that exclude each other, as one missing: with the usage
            ["simulate", "--days", "1", "--trace", "t.csv", "--synthetic"],
            "give exactly one of --trace TRACE.csv or --synthetic",
            "alloc simulate [OPTIONS] [LAB]",
        ),
        (
            ["simulate", "--days", "1"],
            "give --trace TRACE.csv or --synthetic",
            "alloc simulate [OPTIONS] [LAB]",
        ),
    ],
)
def test_a_command_line_of_the_wrong_shape_is_followed_by_the_usage(args, message, usage):
    result = run(*args)
    assert result.exit_code == 2, result.output
    command = " ".join(["alloc", *args[:1]]) if args[0] != "nosuch" else "alloc"
    help_hint = f"See '{command} --help'."
    assert result.stderr.splitlines() == [
        f"error: {command}: {message}",
        f"Usage: {usage}",
        help_hint,
    ]


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


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dry_run_config(tmp_path: Path) -> Path:
    """The bundled dry-run config and its lab and trace, copied: nothing is written beside
    the repository's."""
    for name in ("dry-run.yaml", "lab.yaml", "trace.csv"):
        shutil.copy(ROOT / "instances" / "controller" / name, tmp_path / name)
    return tmp_path / "dry-run.yaml"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["solve", "x.yaml", "--time-limit", "0"],
            "error: alloc solve: --time-limit: expected a duration above 0, got '0'",
            id="a solve without time",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--time-limit", "0"],
            "error: alloc simulate: --time-limit: expected a duration above 0, got '0'",
            id="rounds without time",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--days", "0"],
            "error: alloc simulate: --days: expected a number above 0, got '0'",
            id="a run of no days",
        ),
        pytest.param(
            ["whatif", "--synthetic", "--round-interval", "0"],
            "error: alloc whatif: --round-interval: expected a duration above 0, got '0'",
            id="periodic rounds at no interval",
        ),
        pytest.param(
            ["simulate", "--synthetic", "--mtbf", "0s"],
            "error: alloc simulate: --mtbf: expected a duration above 0, got '0s'",
            id="failures at no interval",
        ),
    ],
)
def test_a_value_of_no_size_is_refused_in_one_wording_whatever_the_option(args, message):
    """Numbers and durations alike: `expected a ... above 0, got '0'` (the time limit said
    `must be above 0`, --days `expected a number above 0`)."""
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr == message + "\n"


def test_until_of_no_time_is_refused_in_the_same_wording(dry_run_config):
    args = ["--config", str(dry_run_config), "--clock", "simulated", "--until", "0"]
    result = run("controller", "run", *args)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "error: alloc controller run: --until: expected a duration above 0, got '0'\n"
    )


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "Infinity"])
def test_every_number_option_refuses_a_number_without_end_saying_a_finite_one_is_expected(value):
    floats = [
        (name, param, info.parser)
        for name, callback in _commands(app)
        for param, hint in typing.get_type_hints(callback, include_extras=True).items()
        for info in typing.get_args(hint)[1:]
        if isinstance(getattr(info, "parser", None), Number) and info.parser.kind is float
    ]
    assert len(floats) > 8, floats  # the walk found the commands' options
    for name, param, parse in floats:
        with pytest.raises(typer.BadParameter) as caught:
            parse(value)
        said = str(caught.value.message)
        assert said.startswith("expected a finite number"), (name, param, said)
        assert said.endswith(f", got {value!r}"), (name, param, said)


def _duration_options() -> Iterator[tuple[tuple[str, ...], str]]:
    """Every option of every command that takes a DURATION, with the command's words."""

    def walk(group: Any, words: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
        ctx = typer.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if hasattr(command, "list_commands"):
                yield from walk(command, (*words, name))
                continue
            for param in command.params:
                if getattr(param, "metavar", None) == "DURATION":
                    yield (*words, name), max(param.opts, key=len)

    yield from walk(typer.main.get_command(app), ())


DURATIONS = list(_duration_options())


@pytest.mark.parametrize("value", ["inf", "nan", "1e400"])
@pytest.mark.parametrize(
    ("words", "option"), DURATIONS, ids=[" ".join((*w, o)) for w, o in DURATIONS]
)
def test_every_duration_option_refuses_a_time_without_end_saying_a_finite_one_is_expected(
    words, option, value, dry_run_config
):
    # What else each command needs for its options to be read.
    needs = {
        ("solve",): ["x.yaml"],
        ("simulate",): ["--synthetic"],
        ("whatif",): ["--synthetic"],
        ("controller", "run"): ["--config", str(dry_run_config), "--clock", "simulated"],
    }
    assert len(DURATIONS) >= 15, DURATIONS
    result = run(*words, *needs[words], option, value)
    assert result.exit_code == 2, result.output
    line = result.stderr.splitlines()[0]
    assert line.startswith(f"error: alloc {' '.join(words)}: {option}: expected a finite duration")
    assert line.endswith(f", got {value!r}"), line


def test_a_share_without_end_is_refused_saying_a_finite_one_is_expected(dry_run_config):
    result = run("budgets", "set", "nlp", "inf%", "--as", "me", "--config", str(dry_run_config))
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "error: alloc budgets set: SHARE: expected a finite percentage such as 35% or 35, "
        "got 'inf%'\n"
    )


@pytest.mark.parametrize("value", ["6h", "nan"])
def test_until_on_the_wall_clock_names_the_option_once_and_says_what_it_needs(
    dry_run_config, value
):
    result = run("controller", "run", "--config", str(dry_run_config), "--until", value)
    assert result.exit_code == 2, result.output
    line = result.stderr.splitlines()[0]
    assert line.count("--until") == 1, line
    if value == "nan":  # the value is read first, whatever the clock
        assert line.endswith("--until: expected a finite duration above 0, got 'nan'"), line
    else:
        assert line == (
            "error: alloc controller run: --until: only with --clock simulated: it ends a dry "
            "run at a time of the simulated clock"
        )


@pytest.mark.parametrize(
    ("args", "message", "usage"),
    [
        pytest.param(
            ["queue"],
            "INSTANCE: required, but not given (or, live, --config FILE)",
            "alloc queue [OPTIONS] [INSTANCE]",
            id="a bare queue",
        ),
        pytest.param(
            ["explain", "good.yaml"],
            "WORKLOAD: required, but not given: alloc explain INSTANCE WORKLOAD (or, live, "
            "alloc explain --config FILE WORKLOAD)",
            "alloc explain [OPTIONS] [INSTANCE] [WORKLOAD]",
            id="explain without the workload",
        ),
        pytest.param(
            ["explain"],
            "INSTANCE: required, but not given: alloc explain INSTANCE WORKLOAD (or, live, "
            "alloc explain --config FILE WORKLOAD)",
            "alloc explain [OPTIONS] [INSTANCE] [WORKLOAD]",
            id="a bare explain",
        ),
        pytest.param(
            ["explain", "--config", "c.yaml"],
            "WORKLOAD: required, but not given: alloc explain --config FILE WORKLOAD",
            "alloc explain [OPTIONS] [INSTANCE] [WORKLOAD]",
            id="a live explain without the workload",
        ),
        pytest.param(
            ["simulate"],
            "give --trace TRACE.csv or --synthetic",
            "alloc simulate [OPTIONS] [LAB]",
            id="a simulation of nothing",
        ),
        pytest.param(
            ["whatif", "--trace", "t.csv"],
            "LAB: required, but not given (or --synthetic for the built-in lab)",
            "alloc whatif [OPTIONS] [LAB]",
            id="a trace without its lab",
        ),
        pytest.param(
            ["export", "p.json", "--to", "slurm", "--apply"],
            "--config: required with --apply: the controller config of the cluster to act on "
            "(without --apply nothing is run)",
            "alloc export [OPTIONS] PLAN",
            id="apply to no cluster",
        ),
    ],
)
def test_a_missing_argument_alloc_finds_is_followed_by_the_usage_as_typer_s_own_is(
    args, message, usage
):
    """typer knows only arguments that are always required (`alloc solve` alone); those
    required in one form of a command (`alloc queue INSTANCE` or `alloc queue --config FILE`)
    are found by alloc and said the same way: the error, the usage line, where the help is."""
    result = run(*args)
    assert result.exit_code == 2, result.output
    command = " ".join(["alloc", *args[:1]])
    assert result.stderr.splitlines() == [
        f"error: {command}: {message}",
        f"Usage: {usage}",
        f"See '{command} --help'.",
    ]


@pytest.mark.parametrize(
    ("days", "title"),
    [(30, "30 days"), (1, "1 day"), (0.05, "1 h 12 min"), (1.5, "1 d 12 h"), (0.1, "2 h 24 min")],
)
def test_a_run_title_says_its_simulated_time_as_a_duration(days, title):
    from alloc.report.fmt import simulated_span

    assert simulated_span(days) == title  # `greedy, 0.05 days` before


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        pytest.param(
            [],
            "error: the environment: ALLOC_PROGRESS_EVERY: expected a duration such as 90s, "
            "15m, 8h or 7d, got 'abc' (for --progress-every)",
            id="from the environment: the variable is named",
        ),
        pytest.param(
            ["--progress-every", "xyz"],
            "error: alloc simulate: --progress-every: expected a duration",
            id="given on the command line: the option is",
        ),
    ],
)
def test_a_bad_value_from_the_environment_names_the_variable(tmp_path, argv, said):
    args = ["simulate", "--synthetic", "--days", "0.01", "--out", str(tmp_path / "o"), *argv]
    result = CliRunner().invoke(app, args, env={"ALLOC_PROGRESS_EVERY": "abc"})
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(said), result.stderr

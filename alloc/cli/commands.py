"""Every `alloc` command in the order `alloc --help` lists them, with its one-line summary, and
the group that imports a command's module only when that command runs or its own help page is
asked for (click's lazy loading of subcommands): `alloc solve` loads neither the simulator's
options nor the controller's, nor does typer build their parameters, and `alloc --help` lists
every command from SUMMARIES without loading any. `Command` is the class of every command
(`cls=Command`): help and usage lines as git and click write them."""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from alloc.cli.common import WithUsage, bad_input, on_the_command_line, stdout_closed
from alloc.cli.params import as_written
from alloc.io.errors import InputError

# click's UsageError, the class of typer's own complaints about a command line (a bad value,
# a missing or unknown option); typer 0.29 vendors click and exports, of its errors, only
# this subclass.
UsageError: Any = typer.BadParameter.__mro__[1]

# name -> "module:attribute" (a command function or a sub-app), or "" for a command defined
# in alloc.cli.app itself (registered there with @app.command(cls=Command)).
COMMANDS: dict[str, str] = {
    "solve": "",
    "validate": "",
    "explain": "",
    "status": "alloc.cli.live_cmd:status",
    "queue": "alloc.cli.queue_cmd:queue",
    "generate": "alloc.cli.generate_cmd:generate",
    "schema": "",
    "simulate": "alloc.cli.sim_cmd:simulate",
    "whatif": "alloc.cli.whatif_cmd:whatif",
    "export": "alloc.cli.export_cmd:export",
    "trace": "alloc.cli.trace_cmd:trace_app",
    "controller": "alloc.cli.controller_cmd:controller_app",
    "budgets": "alloc.cli.budgets_cmd:budgets_app",
}

# name -> what `alloc --help` says of it: one line that fits beside the names in 80 columns
# (tests/test_cli_help.py), where click would cut the docstring's first sentence mid-way.
SUMMARIES: dict[str, str] = {
    "solve": "Solve one round: print its summary, or the plan JSON.",
    "validate": "Check a plan against every invariant of the contract.",
    "explain": "Why a workload starts, waits or is preempted.",
    "status": "The live queue in the round's order, and why work waits.",
    "queue": "The queue like squeue: a line per workload, with its reason.",
    "generate": "Generate a seeded instance shaped like a research lab.",
    "schema": "Print the JSON Schema of the instance file.",
    "simulate": "Run a lab over simulated time with the production round.",
    "whatif": "Replay one trace under several budget trees or policies.",
    "export": "A plan as Slurm or Kubernetes actions: a dry run, or --apply.",
    "trace": "Import a real GPU-cluster trace as a trace CSV (and a lab).",
    "controller": "Run alloc as a controller beside Slurm or Kubernetes.",
    "budgets": "Show and change budget shares (audited).",
}


# U+2011, a non-breaking hyphen: what the help formatter wraps in place of "-" (see _Formatter)
_HYPHEN = "\u2011"


# click's Context and HelpFormatter, as typer vendors them (typer._click is private; a command
# class names them)
_ClickContext: Any = TyperCommand.context_class
_ClickFormatter: Any = _ClickContext.formatter_class


class _Formatter(_ClickFormatter):
    """click's help formatter, except that it never breaks a line after a hyphen: Python's
    textwrap does (`break_on_hyphens`, which click leaves on), so `(read-only)` became
    `(read-` and `only)` and `running-protected` was cut in two. Each "-" is wrapped as a
    non-breaking hyphen of the same width and written back as "-"."""

    def write(self, string: str) -> None:
        super().write(string.replace(_HYPHEN, "-"))

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(prog, _unbroken(args), prefix)

    def write_text(self, text: str) -> None:
        super().write_text(_unbroken(text))

    def write_dl(self, rows: Any, *args: Any, **kwargs: Any) -> None:
        super().write_dl([(first, _unbroken(second)) for first, second in rows], *args, **kwargs)


def _unbroken(text: str) -> str:
    return text.replace("-", _HYPHEN)


class _Context(_ClickContext):
    formatter_class = _Formatter


class _HelpOption(TyperOption):
    """typer's `--help`, its value taken as the flag it is. typer 0.29 coerces every
    parameter's value through a pydantic TypeAdapter, this option's None too: that alone
    imported pydantic (~0.15 s of start-up) into commands that need none (`alloc schema`)."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        value = bool(value)
        return self.callback(ctx, self, value) if self.callback is not None else value


def _plain_help(option: Any) -> Any:
    """The help option typer made, as a `_HelpOption` (made once per command and cached)."""
    if type(option) is TyperOption:
        option.__class__ = _HelpOption
    return option


class Command(TyperCommand):
    """A command whose help reads as git's and click's: its arguments named in capitals, in
    the usage line (`alloc explain [OPTIONS] INSTANCE [WORKLOAD]`; typer 0.29 writes
    `{instance}`, braces that read as a set of choices) and under Arguments (without typer's
    `<path>`), each option followed by the metavar it declares (`--hosts N`), numbers shown as
    a person writes them (`[default: 30]`, not typer's `30.0`: `as_written`), and no line of
    it broken at a hyphen (`_Formatter`)."""

    context_class = _Context

    def get_help_option(self, ctx: Any) -> Any:
        return _plain_help(super().get_help_option(ctx))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and param.metavar is None:
                param.metavar = (param.name or "").upper()
            if isinstance(param.default, float):  # read by its parser (alloc.cli.params)
                param.default = as_written(param.default)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; bad input it finds is said with the command's name (`bad_input`),
        and what the command line lacks or options given together that exclude each other
        (WithUsage) then with its usage, as typer's own missing argument is
        (`_say_usage_error`)."""
        try:
            return super().invoke(ctx)
        except InputError as given:
            exc = _from_the_environment(ctx, given)
            more = usage_lines(ctx) if isinstance(exc, WithUsage) else []
            bad_input(str(exc), ctx.command_path if on_the_command_line(exc) else "", more)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = f"{param.metavar}..." if param.nargs != 1 else str(param.metavar)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                arguments.append((str(param.metavar), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _load(name: str, where: str) -> Any:
    module, attribute = where.split(":")
    found = getattr(import_module(module), attribute)
    if isinstance(found, typer.Typer):  # a sub-app: its own group
        return typer.main.get_group(found)
    one = typer.Typer(rich_markup_mode=None, add_completion=False)
    one.command(name=name, cls=Command, short_help=SUMMARIES[name])(found)
    return typer.main.get_command(one)


class _Commands(MutableMapping[str, Any]):
    """The group's name -> click command mapping, in COMMANDS' order, a lazy command's value
    built the first time it is read. Its names are known without importing anything, so typo
    suggestions ("did you mean 'queue'?") cover every command."""

    def __init__(self, defined_here: MutableMapping[str, Any]) -> None:
        self._built = dict(defined_here)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            where = COMMANDS.get(name)
            if not where:
                raise KeyError(name)
            self._built[name] = _load(name, where)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        listed = [n for n in COMMANDS if n in self._built or COMMANDS[n]]
        return iter([*listed, *(n for n in self._built if n not in COMMANDS)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Subcommands(TyperGroup):
    """The group of a command with subcommands (`alloc controller`, `alloc trace`, `alloc
    budgets`): its help written as its commands' is (`Command`)."""

    context_class = _Context

    def get_help_option(self, ctx: Any) -> Any:
        return _plain_help(super().get_help_option(ctx))


class Group(Subcommands):
    """alloc's top-level group (`typer.Typer(cls=Group)`). Every command runs inside it, so a
    closed stdout is answered here, once (`alloc.cli.common.stdout_closed`: exit 141, quietly;
    typer's own answer is exit 1, an internal error for alloc): while the group reads its
    options (`alloc --help | head -1`) and while a command runs."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, command in self.commands.items():  # those alloc.cli.app defines
            command.short_help = SUMMARIES.get(name, command.short_help)
        self.commands = _Commands(self.commands)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            stdout_closed()
        except UsageError as exc:
            _say_usage_error(exc)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            stdout_closed()
        except UsageError as exc:
            _say_usage_error(exc)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The list of `alloc --help`, from SUMMARIES: no command's module is loaded for it."""
        rows = [(name, SUMMARIES.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def usage_lines(ctx: Any) -> list[str]:
    """What follows an error about the shape of a command line: the usage line and where the
    help is (`See 'alloc solve --help'.`), as git writes them."""
    return [ctx.get_usage(), f"See '{ctx.command_path} --help'."]


def _say_usage_error(exc: Any) -> None:
    """typer's complaint about a command line, in alloc's form (`alloc.cli.common.bad_input`):
    `error: alloc generate: --hosts: expected a whole number of at least 1, got '1.5'`, where
    typer writes the usage line, a hint and `Error: Invalid value for '--hosts': ...`. A
    command line of the wrong shape (an unknown or missing option, an extra argument) is
    followed by the usage line and where the help is. An error shown otherwise (`alloc trace`
    alone shows its help) is left to typer."""
    if type(exc).show is not UsageError.show:
        raise exc
    ctx = exc.ctx
    command = ctx.command_path if ctx is not None else "alloc"
    usage = usage_lines(ctx) if ctx is not None else []
    if isinstance(exc, typer.BadParameter):
        param, hint = exc.param, exc.param_hint
        if param is None:
            where = hint if isinstance(hint, str) or hint is None else " / ".join(hint)
        elif param.param_type_name == "option":
            where = max(param.opts, key=len)  # --output, not -o
        else:
            where = str(param.metavar)  # an argument: INSTANCE
        if exc.message:  # a value the option does not take
            bad_input(f"{where}: {exc.message}" if where else exc.message, command)
        bad_input(f"{where}: required, but not given", command, usage)
    message = exc.format_message().rstrip(".")
    bad_input(message[:1].lower() + message[1:], command, usage)


def _from_the_environment(ctx: Any, exc: InputError) -> InputError:
    """Bad input of an option whose value came from its environment variable (none was given
    on the command line) blames the variable, as alloc.io.limits does its own:
    `the environment: ALLOC_PROGRESS_EVERY: expected a duration ... (for --progress-every)`,
    not the option the user never typed."""
    for param in ctx.command.params:
        if exc.file not in getattr(param, "opts", ()) or not param.envvar or param.name is None:
            continue
        # click's ParameterSource, as typer vendors it (private), by its name
        if getattr(ctx.get_parameter_source(param.name), "name", None) != "ENVIRONMENT":
            return exc
        names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
        variable = next((n for n in names if n in os.environ), names[0])
        return InputError("the environment", variable, f"{exc.message} (for {exc.file})")
    return exc

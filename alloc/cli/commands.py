"""Every `alloc` command in the order `alloc --help` lists them, and the group that imports a
command's module only when that command runs or a help page lists it (click's lazy loading of
subcommands): `alloc solve` loads neither the simulator's options nor the controller's, nor
does typer build their parameters."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperGroup

from alloc.cli.common import stdout_closed

# name -> "module:attribute" (a command function or a sub-app), or "" for a command defined
# in alloc.cli.app itself (registered there with @app.command()).
COMMANDS: dict[str, str] = {
    "solve": "",
    "validate": "",
    "explain": "",
    "status": "alloc.cli.live_cmd:status",
    "queue": "alloc.cli.queue_cmd:queue",
    "generate": "",
    "schema": "",
    "simulate": "alloc.cli.sim_cmd:simulate",
    "whatif": "alloc.cli.whatif_cmd:whatif",
    "export": "alloc.cli.export_cmd:export",
    "trace": "alloc.cli.trace_cmd:trace_app",
    "controller": "alloc.cli.controller_cmd:controller_app",
    "budgets": "alloc.cli.budgets_cmd:budgets_app",
}


def _load(name: str, where: str) -> Any:
    module, attribute = where.split(":")
    found = getattr(import_module(module), attribute)
    if isinstance(found, typer.Typer):  # a sub-app: its own group
        return typer.main.get_group(found)
    one = typer.Typer(rich_markup_mode=None, add_completion=False)
    one.command(name=name)(found)
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


class Group(TyperGroup):
    """alloc's top-level group (`typer.Typer(cls=Group)`). Every command runs inside it, so a
    closed stdout is answered here, once (`alloc.cli.common.stdout_closed`: exit 141, quietly;
    typer's own answer is exit 1, an internal error for alloc): while the group reads its
    options (`alloc --help | head -1`) and while a command runs."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.commands)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            stdout_closed()

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            stdout_closed()

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

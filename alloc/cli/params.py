"""The values of numeric options (numbers, whole numbers, durations; and `trace import`'s
choice), checked in alloc's words, one wording for all of them.

typer 0.29 checks an option's type and its `min`/`max` with pydantic (typer/_adapters.py,
`build_leaf_adapter`; typer/_coercion.py passes pydantic's first message on), so a bad value
read `Invalid value for '--days': Input should be greater than or equal to 0.001` or `...: Input
should be a valid integer, unable to parse string as an integer`. An option's `parser` takes
the place of that check, so each numeric option is declared here with a parser that says what
was expected and what was given, as alloc's other bad-input messages do, and refuses what no
count or fraction can be (nan, inf, and 1e400, which reads as inf), saying a finite number is
expected:

    error: alloc simulate: --days: expected a number above 0, got '0'
    error: alloc simulate: --days: expected a finite number above 0, got '1e400'

A duration option (`--time-limit 10s`) is read by `seconds` in the same words (`expected a
duration above 0, got '0'`, `expected a finite duration above 0, got 'inf'`), raised as bad
input of that option.

typer raises the parser's complaint as a usage error (exit 2), which alloc's command group says
in the form of all bad input (`alloc.cli.commands`). `min` and `max` are passed on to typer
too, which then only shows them in `--help` (`[default: 128; x>=1]`, `0<=x<=1`: numbers as a
person writes them, `as_written`, as the defaults are: `alloc.cli.commands.Command`); a bound
that excludes its value (`above`) is said in the help text. Each option is shown with a
metavar (`--hosts N`), not typer's type.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

import typer

__all__ = [
    "SOLVER_NAMES",
    "Choice",
    "Number",
    "Solver",
    "as_written",
    "choice",
    "number",
    "seconds",
    "solver_option",
    "whole",
]

E = TypeVar("E", bound=Enum)


def as_written(value: float) -> int | float:
    """A number as a person writes it: 30 for 30.0, 0.5 as is (`--help` shows defaults and
    bounds so, not as Python's repr of a float)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _shown(bound: float) -> str:
    return f"{bound:g}"


def _bounds(min: float | None = None, max: float | None = None, above: float | None = None) -> str:
    """The bounds of a value, after its noun: ` from 0 to 1`, ` above 0`, ` of at least 1`."""
    if min is not None and max is not None:
        return f" from {_shown(min)} to {_shown(max)}"
    if above is not None:
        most = f" and at most {_shown(max)}" if max is not None else ""
        return f" above {_shown(above)}{most}"
    if min is not None:
        return f" of at least {_shown(min)}"
    if max is not None:
        return f" of at most {_shown(max)}"
    return ""


def _not_finite(text: str) -> bool:
    """Whether `text` is a number without end or no number at all (inf, -inf, nan, 1e400)."""
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Number:
    """Reads a whole number (`kind` int) or a finite number (float) from the command line (or
    an option's default) within the bounds given; anything else is a bad parameter."""

    kind: type[int] | type[float]
    min: float | None = None
    max: float | None = None
    above: float | None = None  # the least value, excluded

    def wanted(self, finite: bool = False) -> str:
        """What the option takes: `a whole number of at least 1`, `a number from 0 to 1`;
        `a finite number above 0` (`finite`) for a value without end (inf, nan)."""
        noun = "a whole number" if self.kind is int else "a finite number" if finite else "a number"
        return noun + _bounds(self.min, self.max, self.above)

    def __call__(self, value: Any) -> int | float:
        found = self._read(value)
        if found is None or not self._within(found):
            endless = self.kind is float and _not_finite(str(value))
            raise typer.BadParameter(f"expected {self.wanted(endless)}, got {str(value)!r}")
        return found

    def _read(self, value: Any) -> int | float | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):  # the option's default
            found: int | float = value
        else:
            try:
                found = self.kind(str(value).strip())
            except ValueError:
                return None
        if self.kind is int:
            return found if isinstance(found, int) else None
        return float(found) if math.isfinite(found) else None

    def _within(self, found: float) -> bool:
        return (
            (self.min is None or found >= self.min)
            and (self.max is None or found <= self.max)
            and (self.above is None or found > self.above)
        )


@dataclass(frozen=True, slots=True)
class Choice:
    """Reads one of an enum's values: `expected philly or itp, got 'sia'`."""

    kind: type[Enum]

    def __call__(self, value: Any) -> Enum:
        if isinstance(value, self.kind):
            return value
        for member in self.kind:
            if str(member.value) == str(value):
                return member
        names = [str(m.value) for m in self.kind]
        listed = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        raise typer.BadParameter(f"expected {listed}, got {str(value)!r}")


SOLVER_NAMES = ("milp", "greedy")  # alloc.round.SOLVERS, named here so the CLI starts fast


@dataclass(frozen=True, slots=True)
class Solver:
    """Reads a solver's name: `expected milp or greedy, got 'gurobi'`. Every command with
    `--solver` reads it so, while the command line is parsed, so no command reaches a round
    with a name the round does not know."""

    def __call__(self, value: Any) -> str:
        if str(value) not in SOLVER_NAMES:
            raise typer.BadParameter(f"expected {' or '.join(SOLVER_NAMES)}, got {str(value)!r}")
        return str(value)


def solver_option() -> Any:
    """The `--solver` option of every command that solves a round (`solve`, `explain`,
    `queue`, `status`)."""
    return typer.Option(
        "--solver",
        parser=Solver(),
        metavar="SOLVER",
        help="milp or greedy (default: the policy's).",
    )


def whole(
    *names: str,
    help: str,
    min: int | None = None,
    max: int | None = None,
    metavar: str = "N",
    **more: Any,
) -> Any:
    """A `typer.Option` of a whole number within [min, max] (either may be absent), shown as
    `--hosts N` (typer would write `--hosts <int range>`)."""
    parse = Number(int, min, max)
    return typer.Option(*names, parser=parse, min=min, max=max, help=help, metavar=metavar, **more)


def number(
    *names: str,
    help: str,
    min: float | None = None,
    max: float | None = None,
    above: float | None = None,
    metavar: str = "NUMBER",
    **more: Any,
) -> Any:
    """A `typer.Option` of a finite number within [min, max], or above `above` (excluded: the
    help text says it), shown with `metavar` (FRACTION, DAYS...)."""
    if above is not None:
        help = f"{help.rstrip('.')} (above {_shown(above)})."
    parse = Number(float, min, max, above)
    low, high = (None if b is None else as_written(b) for b in (min, max))
    return typer.Option(*names, parser=parse, min=low, max=high, help=help, metavar=metavar, **more)


def seconds(
    option: str, text: str | None, *, min: float = 0.0, above: float | None = None
) -> float | None:
    """A duration option's value in seconds (None when not given), within its bounds, in the
    words of `Number`: `--time-limit: expected a duration above 0, got '0'`; bad input of
    `option` (an InputError) otherwise."""
    if text is None:
        return None
    from alloc.io.durations import parse_duration
    from alloc.io.errors import InputError

    bounds = _bounds(None if above is not None or not min else min, None, above)
    if _negative_duration(text):  # `-1` is out of bounds, not a misspelt duration
        raise InputError(option, "", f"expected a duration{bounds or _bounds(min)}, got {text!r}")
    if _not_finite(text):
        raise InputError(option, "", f"expected a finite duration{bounds}, got {text!r}")
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise InputError(option, "", str(exc)) from None
    if value < min or (above is not None and value <= above):
        raise InputError(option, "", f"expected a duration{bounds}, got {text!r}")
    return value


def _negative_duration(text: str) -> bool:
    """Whether `text` is a duration with a minus sign before it (`-1`, `-5m`)."""
    from alloc.io.durations import parse_duration

    body = text.strip()
    if not body.startswith("-"):
        return False
    try:
        parse_duration(body[1:])
    except ValueError:
        return False
    return True


def one_of(option: str, value: str, choices: Sequence[str]) -> str:
    """`value` if it is one of `choices`, else bad input of `option` in the one shape every
    choice is refused in: `--sort: expected one of wait, gpus, budget, got 'size'`."""
    from alloc.io.errors import InputError

    if value not in choices:
        raise InputError(option, "", f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def choice(kind: type[E], *, help: str, **more: Any) -> Any:
    """A `typer.Argument` of one of an enum's values."""
    return typer.Argument(parser=Choice(kind), help=help, **more)

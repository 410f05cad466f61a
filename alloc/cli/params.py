"""The values of numeric options (and of `trace import`'s choice), checked in alloc's words.

typer 0.29 checks an option's type and its `min`/`max` with pydantic (typer/_adapters.py,
`build_leaf_adapter`; typer/_coercion.py passes pydantic's first message on), so a bad value
read `Invalid value for '--days': Input should be greater than or equal to 0.001` or `...: Input
should be a valid integer, unable to parse string as an integer`. An option's `parser` takes
the place of that check, so each numeric option is declared here with a parser that says what
was expected and what was given, as alloc's other bad-input messages do, and refuses what no
count or fraction can be (nan, inf):

    error: alloc simulate: --days: expected a number above 0, got '0'

typer raises it as a usage error (exit 2), which alloc's command group says in the form of all
bad input (`alloc.cli.commands`). `min` and `max` are passed on to typer too, which then only
shows them in `--help` (`[default: 128; x>=1]`); a bound that excludes its value (`above`) is
said in the help text. Each option is shown with a metavar (`--hosts N`), not typer's type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

import typer

__all__ = ["Choice", "Number", "choice", "number", "whole"]

E = TypeVar("E", bound=Enum)


def _shown(bound: float) -> str:
    return f"{bound:g}"


@dataclass(frozen=True, slots=True)
class Number:
    """Reads a whole number (`kind` int) or a finite number (float) from the command line (or
    an option's default) within the bounds given; anything else is a bad parameter."""

    kind: type[int] | type[float]
    min: float | None = None
    max: float | None = None
    above: float | None = None  # the least value, excluded

    def wanted(self) -> str:
        """What the option takes: `a whole number of at least 1`, `a number from 0 to 1`."""
        noun = "a whole number" if self.kind is int else "a number"
        if self.min is not None and self.max is not None:
            return f"{noun} from {_shown(self.min)} to {_shown(self.max)}"
        if self.above is not None:
            return f"{noun} above {_shown(self.above)}" + (
                f" and at most {_shown(self.max)}" if self.max is not None else ""
            )
        if self.min is not None:
            return f"{noun} of at least {_shown(self.min)}"
        if self.max is not None:
            return f"{noun} of at most {_shown(self.max)}"
        return noun

    def __call__(self, value: Any) -> int | float:
        found = self._read(value)
        if found is None or not self._within(found):
            raise typer.BadParameter(f"expected {self.wanted()}, got {str(value)!r}")
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
    return typer.Option(*names, parser=parse, min=min, max=max, help=help, metavar=metavar, **more)


def choice(kind: type[E], *, help: str, **more: Any) -> Any:
    """A `typer.Argument` of one of an enum's values."""
    return typer.Argument(parser=Choice(kind), help=help, **more)

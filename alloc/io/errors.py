"""What a command says in one line instead of a traceback: bad input (InputError: the file, the
line, the field path and what is wrong; exit 2), and a cluster or a database that could not
be reached (Unreachable: not the user's input, not alloc's fault; exit 1)."""

from __future__ import annotations


class InputError(ValueError):
    def __init__(self, file: str, field: str, message: str, line: int | None = None) -> None:
        self.file = file
        self.field = field
        self.message = message
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        """`file:line: field: message`, each part there when given (no file: the command
        line, whose field is then an option or an argument)."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return ": ".join(part for part in (where, self.field, self.message) if part)


class Unreachable(RuntimeError):
    """A cluster or a state database that could not be reached (refused, timed out): said as
    `error: cannot reach the cluster of c.yaml: ...`, exit 1 (alloc.cli.common.guarded)."""


def field_path(loc: tuple[object, ...]) -> str:
    """('workloads', 3, 'gpus') -> 'workloads[3].gpus'; odd keys are quoted: usage['a/b']."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.replace("_", "").replace("-", "").isalnum():
            out += f".{part}" if out else part
        else:
            out += f"[{str(part)!r}]"
    return out

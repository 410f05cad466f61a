"""Bad input: one clear message naming the file, the line, the field path and what is wrong."""

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

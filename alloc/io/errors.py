"""Bad input: one clear message naming the file, the line, the field path and what is wrong."""

from __future__ import annotations

from pathlib import Path


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


def read_input(path: str | Path, encoding: str = "utf-8", kind: str = "file") -> str:
    """The text of an input file; InputError naming the file once and what is wrong with it
    (the system's own message repeats the file name: `x.csv: [Errno 21] Is a directory:
    'x.csv'`). `encoding` `utf-8-sig` drops a byte order mark; `kind` names what was expected
    (`a CSV file`)."""
    file = str(path)
    try:
        return Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise InputError(file, "", "no such file") from None
    except IsADirectoryError:
        raise InputError(file, "", f"is a folder, expected {_article(kind)}") from None
    except PermissionError:
        raise InputError(file, "", "cannot read the file: permission denied") from None
    except UnicodeDecodeError as exc:
        raw = exc.object if isinstance(exc.object, bytes) else b""
        line = raw[: exc.start].count(b"\n") + 1
        byte = raw[exc.start] if exc.start < len(raw) else 0
        raise InputError(
            file, "", f"not UTF-8 text (byte 0x{byte:02x} cannot be read; save it as UTF-8)", line
        ) from None
    except OSError as exc:
        raise InputError(file, "", f"cannot read the file: {exc.strerror or exc}") from None


def _article(kind: str) -> str:
    return kind if kind.startswith(("a ", "an ")) else f"a {kind}"

"""Text for the scripts `alloc export` writes (Slurm's and Kubernetes'): arguments quoted so
that any name stays one argument and is never run, and shown so that no name can hide a line.

`quote`: `shlex.quote` when every character prints; else bash's `$'...'` with each control
or other unprintable character written as its UTF-8 bytes (a carriage return, an escape
sequence or a right-to-left override inside a name cannot make the script look other than it
is when read with `cat`).
`comment`: the same characters escaped in a one-line comment, shortened past a limit.
"""

from __future__ import annotations

import shlex

from alloc.printable import escape_char

SHOWN = 80  # characters of a name shown in a comment
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(arg: str) -> str:
    """One bash word that is `arg` (which holds no NUL: no argument can)."""
    if arg.isprintable():
        return shlex.quote(arg)
    body = "".join(
        "\\'" if ch == "'" else _ESCAPES.get(ch) or (ch if ch.isprintable() else _bytes(ch))
        for ch in arg
    )
    return f"$'{body}'"


def _bytes(ch: str) -> str:
    """The character as its UTF-8 bytes, each `\\xHH`: what bash's `$'...'` makes of them
    is those bytes, whatever the locale (a `\\u` escape depends on it)."""
    return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))


def comment(text: str, limit: int | None = SHOWN) -> str:
    """`text` safe inside a one-line comment: control and other unprintable characters
    escaped (backslash too, so the escapes read back unambiguously), shortened past `limit`."""
    long = limit is not None and len(text) > limit
    shown = f"{text[:limit]}... ({len(text)} characters)" if long else text
    return "".join(
        _ESCAPES.get(ch) or (ch if ch.isprintable() else escape_char(ch)) for ch in shown
    )

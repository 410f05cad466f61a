"""Text that cannot forge a terminal or a report: the one rule of which characters alloc shows
as they are, used both to refuse names in the files it reads (`alloc.io.names`) and to show
the names a cluster reports, which it cannot refuse (`shown`).

A character is *displayable* when Python's `str.isprintable` says so: every letter, mark,
number, punctuation and symbol of any script, and the plain space (U+0020). Not displayable:
controls (Unicode category Cc: NUL, tab, line feed, carriage return, escape and the rest of
C0 and C1, DEL), format characters (Cf: the bidirectional overrides such as U+202E, zero-width
spaces and joiners, the byte order mark), line and paragraph separators (Zl, Zp), spaces other
than the plain one (Zs, such as U+00A0), surrogates (Cs), private-use (Co) and unassigned (Cn)
characters. Without them a name cannot colour a terminal, move its cursor, set its title,
print a hyperlink (ESC and the OSC sequences start with U+001B, BEL ends them), break a log
line, or reverse the text after it.

`shown` writes each character that is not displayable as a visible escape, as Python writes
it: `\\t`, `\\n`, `\\r`, `\\x1b`, `\\u202e`, `\\U000e0041`. A backslash stays one backslash:
the escape makes text safe to show, not a reversible encoding (JSON and CSV outputs keep the
exact name).

Imports nothing of ours, so every layer may use it."""

from __future__ import annotations

import unicodedata

__all__ = ["describe", "escape_char", "first_hidden", "shown"]

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_KINDS = {
    "Cc": "a control character",
    "Cf": "a format character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Zs": "a space other than the plain space",
    "Cs": "a surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned character",
}
# Controls have no Unicode name; these are the ones people meet.
_CONTROLS = {
    0x00: "NUL",
    0x07: "BELL",
    0x08: "BACKSPACE",
    0x09: "TAB",
    0x0A: "LINE FEED",
    0x0B: "LINE TABULATION",
    0x0C: "FORM FEED",
    0x0D: "CARRIAGE RETURN",
    0x1B: "ESCAPE",
    0x7F: "DELETE",
    0x85: "NEXT LINE",
    0x9B: "CONTROL SEQUENCE INTRODUCER",
    0x9D: "OPERATING SYSTEM COMMAND",
}


def first_hidden(text: str) -> int | None:
    """The index of the first character of `text` that is not displayable; None when every
    one is."""
    if text.isprintable():
        return None
    return next(i for i, c in enumerate(text) if not c.isprintable())


def describe(char: str) -> str:
    """What a character that is not displayable is, for a message: `a control character
    (U+001B ESCAPE)`, `a format character (U+202E RIGHT-TO-LEFT OVERRIDE)`."""
    code = ord(char)
    name = _CONTROLS.get(code) or unicodedata.name(char, "")
    kind = _KINDS.get(unicodedata.category(char), "a character that cannot be shown")
    return f"{kind} (U+{code:04X}{' ' + name if name else ''})"


def escape_char(char: str) -> str:
    """One character as Python writes it in a string: `\\t`, `\\x1b`, `\\u202e`."""
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: str) -> str:
    """`text` with every character that is not displayable written as a visible escape
    (`red\\x1b[31m` for red + ESC + `[31m`); displayable text is returned as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else escape_char(c) for c in text)

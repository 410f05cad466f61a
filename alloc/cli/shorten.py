"""How a cell is written shorter to fit a column (alloc.cli.columns): with an ellipsis at its
end (reasons, types), in its middle (ids, run labels), a duration in its largest unit
(`3 h+`), a budget path by its nodes' initials, and the ratios along a budget path by levels
left out, never a ratio without its node's name. Each takes the text and the width, and returns the
text within it; numbers are never given to them."""

from __future__ import annotations

ELLIPSIS = "…"


def shorten_end(text: str, width: int) -> str:
    """A reason or a type keeps its start: `unallocated_dis…`."""
    if len(text) <= width:
        return text
    return ELLIPSIS[:width] if width <= 1 else text[: width - 1] + ELLIPSIS


def _middle(text: str, width: int, head: int) -> str:
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head) :]


def shorten_middle(text: str, width: int) -> str:
    """An id keeps its head and its tail, the head the longer (`olmo-7b-…-run-3`): both tell
    runs apart."""
    return _middle(text, width, (width - 1) - (width - 1) // 2)


def shorten_middle_keep_tail(text: str, width: int) -> str:
    """A label or a budget path cut in the middle, the tail the longer (`computati…rge-models`):
    its first and its last part are its program and its team (or its policy)."""
    return _middle(text, width, (width - 1) // 2)


_UNITS = ("s", "min", "h", "d")


def shorten_duration(text: str, width: int) -> str:
    """A duration as `alloc.readable.duration` writes it, in its largest unit only, never
    more than it is: the units below left out, and a `+` saying there was more (`13 h 2 min`
    -> `13 h+`, `3 h 32 min` -> `3 h+`, `1 d 19 h` -> `1 d+`; rounded up, `4 h` would read
    longer than the 3 h 32 min waited). Other text as it is."""
    parts = text.split()
    if len(parts) != 4 or parts[1] not in _UNITS or parts[3] not in _UNITS:
        return text
    try:
        big, small = int(parts[0].replace(",", "")), int(parts[2])
    except ValueError:
        return text
    return f"{big:,} {parts[1]}" + ("+" if small else "")


def _initial(node: str) -> str:
    """A node of a path cut to its first letter and the number it ends in, which tells
    siblings apart: `vision` -> `v…`, `team3` -> `t…3`, `team12` -> `t…12`."""
    number = node[len(node.rstrip("0123456789")) :]
    short = node[0] + ELLIPSIS + number
    return short if len(short) < len(node) else node


def shorten_path(text: str, width: int) -> str:
    """A budget path keeps its leaf: the nodes above it are cut to their first letter (and
    the number they end in) from the top down (`v…/c…/alice`, `v…/t…3/r34`), then they are
    left out from the top (`…/t…3/r34`, `…/alice`), then what is left loses its start."""
    parts = text.split("/")
    for i in range(len(parts) - 1):
        if len("/".join(parts)) <= width:
            break
        parts[i] = _initial(parts[i])
    short = "/".join(parts)
    for i in range(1, len(parts)):
        if len(short) <= width:
            break
        short = ELLIPSIS + "/" + "/".join(parts[i:])
    return short if len(short) <= width else ELLIPSIS + short[len(short) - max(0, width - 1) :]


_RATIO_SEP = " > "


def _ratio_steps(text: str) -> list[tuple[str, str]] | None:
    """`nlp 0.01 > tulu 0.00` as [("nlp", "0.01"), ("tulu", "0.00")]; None when the text is
    not ratios along a path (`unfunded: p has a share of 0%`)."""
    steps = []
    for step in text.split(_RATIO_SEP):
        name, _, value = step.rpartition(" ")
        if not name or not (value == "inf" or value.replace(".", "", 1).isdigit()):
            return None
        steps.append((name, value))
    return steps


def _ratio_forms(steps: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The levels shown of the ratios along a path, from the most to the fewest, every ratio
    beside its node's name: all, the nodes above the leaf cut to their initials from the top
    down (`n… 0.01 > tulu 0.00`); then the levels between the top and the leaf left out, from
    the leaf up (`n… 0.01 > … > r13 0.00`); then the top too (`… > r13 0.00`)."""
    forms = [list(steps)]
    short = list(steps)
    for i in range(len(steps) - 1):
        short[i] = (_initial(short[i][0]), short[i][1])
        forms.append(list(short))
    for i in range(len(steps) - 2, 0, -1):  # the levels between the top and the leaf
        forms.append([short[0], (ELLIPSIS, ""), *short[i + 1 :]])
    if len(steps) > 1:
        forms.append([(ELLIPSIS, ""), short[-1]])
    return forms


_LEAF_LEAST = 3  # a leaf's name cut in the middle keeps at least this many characters


def _ratios_in(form: list[tuple[str, str]], width: int, cut: bool) -> str | None:
    """`form` in `width`, its leaf's name whole or (if `cut`) cut in the middle, keeping its
    end, which tells `r12` from `r13`; None if it does not fit so."""
    text = _RATIO_SEP.join(f"{name} {value}" if value else name for name, value in form)
    if len(text) <= width:
        return text
    if not cut:
        return None
    *above, (leaf, value) = form
    room = width - (len(text) - len(leaf))  # what the leaf's name may take
    if room < min(len(leaf), _LEAF_LEAST):
        return None
    return _ratios_in([*above, (shorten_middle_keep_tail(leaf, room), value)], width, cut)


def ratios_all_levels(text: str) -> int:
    """The least width at which the ratios along a path keep every level, each with its
    node's name (cut: those above the leaf to their initials, the leaf's in the middle)."""
    steps = _ratio_steps(text)
    if steps is None:
        return len(text)
    form = _ratio_forms(steps)[len(steps) - 1]
    *above, (leaf, value) = form
    return len(_RATIO_SEP.join([*(f"{n} {v}" for n, v in above), f"{leaf[:_LEAF_LEAST]} {value}"]))


def shorten_ratios(text: str, width: int) -> str:
    """The fair-share ratios along a budget path (`nlp 0.01 > tulu 0.00`) keep every ratio
    beside its node's name: names are shortened, never dropped from their ratios. The first of
    `_ratio_forms` that fits: the names above the leaf to their initials, then the leaf's cut
    in the middle (`n… 0.01 > t…u 0.00`), then the levels between the top and the leaf left
    out (`…`), then the top, the leaf's name whole or else cut. Text that is not ratios
    (`unfunded: ...`) keeps its start."""
    steps = _ratio_steps(text)
    if steps is None:
        return shorten_end(text, width)
    forms = _ratio_forms(steps)
    every = len(steps) - 1  # the first form with every name above the leaf cut
    for i, form in enumerate(forms):
        # The leaf's name is cut only where no other name can be: with every level shown,
        # and with the leaf alone.
        found = _ratios_in(form, width, cut=i == every or i == len(forms) - 1)
        if found is not None:
            return found
    return shorten_end(_RATIO_SEP.join(f"{n} {v}" if v else n for n, v in forms[-1]), width)

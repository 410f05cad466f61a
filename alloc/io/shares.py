"""Shares of a parent's time, kept exact (SPEC.md: shares of siblings sum to at most 100%).

A share is the percentage written (`35%`, `33.3`). Siblings' shares are summed in decimal
arithmetic, with no tolerance: 100.0000001% is more than 100%, and 33.3% + 33.3% + 33.4% is
exactly 100%. In the domain a share is a float, the fraction of the parent, rounded once from
that decimal, so that its shortest repr is the decimal again (for up to 15 significant digits,
any share a person writes): `exact` reads it back, the YAML writer writes it (`percent_text`),
and `alloc budgets set` sums it with the share it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

_EXAMPLE = "a percentage such as 35% or 35"
ONE = Decimal(1)


def parse_fraction(value: object) -> Decimal:
    """A percentage of the parent's share as the exact fraction: `35%` or `35` -> 0.35. A bare
    number between 0 and 1 is refused as ambiguous (0.5 would be half a percent, not half)."""
    if isinstance(value, bool):
        raise ValueError(f"expected {_EXAMPLE}, got {value!r}")
    if isinstance(value, str):
        text = value.strip().removesuffix("%").strip()
        try:
            number = Decimal(text)
        except (InvalidOperation, ValueError):
            raise ValueError(f"expected {_EXAMPLE}, got {value!r}") from None
    elif isinstance(value, int | float):
        number = Decimal(value) if isinstance(value, int) else Decimal(repr(value))
        if 0 < number < 1:
            raise ValueError(
                f"ambiguous share {value!r}: write {_plain(number.scaleb(2))}% for that "
                f"fraction of the parent, or {_plain(number)}% for that percentage"
            )
    else:
        raise ValueError(f"expected {_EXAMPLE}, got {value!r}")
    if not number.is_finite():  # inf, nan: no share of anything
        raise ValueError(f"expected a finite {_EXAMPLE.removeprefix('a ')}, got {value!r}")
    if not 0 <= number <= 100:
        raise ValueError(f"a share is between 0% and 100% of the parent's, got {value!r}")
    return number.scaleb(-2)


def parse_share(value: object) -> float:
    """`parse_fraction` as the domain's float (rounded once: its repr is the decimal)."""
    return float(parse_fraction(value))


def exact(share: float | Decimal) -> Decimal:
    """The decimal fraction a share stands for: a float's shortest repr (see above)."""
    return share if isinstance(share, Decimal) else Decimal(repr(share))


def share_of_percent(percent: float | int) -> float:
    """The domain's share of a percentage computed in code (33.333 -> 0.33333, whose repr is
    that decimal; `percent / 100` would round twice and might not be)."""
    return float(exact(float(percent)).scaleb(-2))


def over_100(shares: Iterable[float | Decimal]) -> Decimal | None:
    """The exact sum of sibling shares when it is more than 100% (1), else None."""
    total = sum((exact(s) for s in shares), Decimal(0))
    return total if total > ONE else None


def percent_text(share: float | Decimal) -> str:
    """A share as the exact percentage it stands for: 0.35 -> `35%`, 0.333 -> `33.3%`."""
    return f"{_plain(exact(share).scaleb(2))}%"


def _plain(number: Decimal) -> str:
    """A decimal without exponent or trailing zeros: 110, 100.0000001, 0.001."""
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "") else text

"""A running integral of a piecewise-constant rate, readable over a sliding window.

F(t) = the integral of the rate up to t is piecewise linear. Window sums F(t) - F(t - L) are
answered in amortised O(1) as time moves forward: the slope changes older than the window's
start are dropped as the window passes them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class RunningIntegral:
    slope: float = 0.0
    at_s: float = float("-inf")
    value: float = 0.0
    changes: deque[tuple[float, float, float]] = field(default_factory=deque)  # (t, F(t), slope)

    def advance(self, t: float) -> None:
        if t > self.at_s:
            if self.slope:
                self.value += self.slope * (t - self.at_s)
            self.at_s = t

    def change(self, t: float, delta: float) -> None:
        """The rate changes by `delta` from time `t` on (t never goes back)."""
        self.advance(t)
        self.slope += delta
        self.changes.append((t, self.value, self.slope))

    def value_at(self, t: float) -> float:
        """F(t) for t at or after the start of the last window read (earlier history is gone)."""
        while len(self.changes) > 1 and self.changes[1][0] <= t:
            self.changes.popleft()
        if not self.changes or t < self.changes[0][0]:
            return 0.0
        t0, f0, slope = self.changes[0]
        return f0 + slope * (t - t0)

    def window(self, t: float, length: float) -> float:
        """The integral over [t - length, t]."""
        self.advance(t)
        return self.value - self.value_at(t - length)

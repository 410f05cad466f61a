"""Rules the importers apply where the real traces say nothing: minimum runtimes (no trace
carries one), seeded draws and shares in whole thousandths of a percent.

Every draw is `uniform(seed, key)`: the first 8 bytes of SHA-256 over `"<seed>:<key>"`, read as
an unsigned integer and divided by 2**64. It depends on the seed and the key (a job id) only,
never on Python's `hash()` (salted per process) or on the order of the rows.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

MINUTE_S = 60.0
HOUR_S = 3600.0
DEBUG = "debug"
TRAIN = "train"
UNALLOCATED = "unallocated"


def uniform(seed: int, key: str) -> float:
    """A number in [0, 1) fixed by (seed, key): SHA-256 of "<seed>:<key>", first 8 bytes."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True, slots=True)
class MinRuntimeRule:
    """The minimum runtime (and `kind`) of an imported job; the traces carry none.

    Applied in this order, to a job with `gpus` GPUs and `runtime` seconds of work:

    1. Unallocated: if `uniform(seed, job id) < unallocated` (default 0.10, so about 10% of the
       jobs), min_runtime = 0 and kind = "unallocated" (free, preemptible occupancy).
    2. Debug: else if gpus <= `debug_max_gpus` (8) and runtime <= `debug_max_runtime_s`
       (30 minutes), min_runtime = min(`debug_min_runtime_s` (15 minutes), runtime) and
       kind = "debug".
    3. Train: else min_runtime = runtime / `train_divisor` (4) rounded up to a whole multiple of
       `train_step_s` (1 hour), clamped to [`train_floor_s` (1 h), `train_ceiling_s` (8 h)],
       and kind = "train". The floor can exceed a short job's runtime: such a job is protected
       for its whole run.

    No minimum runtime ever exceeds the lab's `max_min_runtime` (8 h by default), the argument
    `max_min_runtime_s` of `assign`: a longer one is cut to it.
    """

    unallocated: float = 0.10
    debug_max_gpus: int = 8
    debug_max_runtime_s: float = 30 * MINUTE_S
    debug_min_runtime_s: float = 15 * MINUTE_S
    train_divisor: float = 4.0
    train_step_s: float = HOUR_S
    train_floor_s: float = HOUR_S
    train_ceiling_s: float = 8 * HOUR_S
    seed: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.unallocated <= 1.0:
            raise ValueError(f"unallocated is a fraction 0..1, got {self.unallocated!r}")
        if self.debug_max_gpus < 0 or self.debug_max_runtime_s < 0 or self.debug_min_runtime_s < 0:
            raise ValueError("the debug thresholds must be zero or more")
        if self.train_divisor <= 0 or self.train_step_s <= 0:
            raise ValueError("train_divisor and train_step_s must be above zero")
        if not 0 <= self.train_floor_s <= self.train_ceiling_s:
            raise ValueError("need 0 <= train_floor_s <= train_ceiling_s")

    def assign(
        self, job_id: str, gpus: int, runtime_s: float, max_min_runtime_s: float = 8 * HOUR_S
    ) -> tuple[float, str]:
        """(min_runtime_s, kind) of one job, by the rule in the class docstring."""
        if uniform(self.seed, job_id) < self.unallocated:
            return 0.0, UNALLOCATED
        if gpus <= self.debug_max_gpus and runtime_s <= self.debug_max_runtime_s:
            return min(self.debug_min_runtime_s, runtime_s, max_min_runtime_s), DEBUG
        steps = math.ceil(runtime_s / self.train_divisor / self.train_step_s)
        clamped = min(max(steps * self.train_step_s, self.train_floor_s), self.train_ceiling_s)
        return min(clamped, max_min_runtime_s), TRAIN


def shares_percent(weights: Sequence[Fraction | int]) -> list[float]:
    """Percentages proportional to `weights`, each rounded down to 3 decimals (whole
    thousandths of a percent, computed exactly), so that their sum never exceeds 100%."""
    total = sum(Fraction(w) for w in weights)
    if total <= 0:
        raise ValueError("the weights must sum to more than zero")
    return [math.floor(Fraction(w) * 100_000 / total) / 1000 for w in weights]


def pick(weights: Sequence[Fraction | int], u: float) -> int:
    """The index i whose slice of the cumulative normalised weights holds u (0 <= u < 1)."""
    total = sum(Fraction(w) for w in weights)
    point = Fraction(u) * total
    running = Fraction(0)
    for i, w in enumerate(weights):
        running += Fraction(w)
        if point < running:
            return i
    return len(weights) - 1

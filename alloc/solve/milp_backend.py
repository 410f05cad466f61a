"""Solving an ArrayModel with an OR-Tools backend through the model builder (arrays in, arrays
out). The backend, time limit, thread count, seed and gap all come from the policy."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from ortools.linear_solver.python import model_builder_helper as mbh

from alloc.solve.arrays import ArrayModel, Csr

# Mixed-integer backends of this OR-Tools build reachable through the model builder. HiGHS is
# left out: it crashes (SIGSEGV) on a model with a solution hint in OR-Tools 9.15.
BACKENDS = ("scip", "sat")
LP_BACKEND = "glop"


@dataclass(frozen=True, slots=True)
class BackendResult:
    status: str  # optimal | feasible | infeasible | no_solution | error
    values: np.ndarray | None
    objective: float | None
    bound: float | None
    seconds: float
    detail: str = ""


def _parameters(backend: str, threads: int, seed: int, gap: float) -> str:
    """Each backend's own parameters. Neither catches Ctrl-C: SCIP and CP-SAT would by
    default take SIGINT for themselves, end the solve early as if its time limit had come
    and swallow the signal, so a simulation or a controller would carry on with a round cut
    short (a result that depends on when a key was pressed). Left to Python, the signal
    reaches the program's handler when the solve returns (within its time limit)."""
    if backend == "scip":
        return (
            f"limits/gap = {gap}\nrandomization/randomseedshift = {seed}\nmisc/catchctrlc = FALSE"
        )
    if backend == "sat":
        return (
            f"num_workers: {max(1, threads)}, random_seed: {seed}, relative_gap_limit: {gap}, "
            "catch_sigint_signal: false"
        )
    return ""


# Up to this many terms a model is filled term by term (under 10 ms); a larger one in one call
# from a scipy matrix, whose import (about 0.2 s) a small round need not pay.
TERM_BY_TERM_MAX = 4096


def fill(helper: mbh.ModelBuilderHelper, vectors: tuple[np.ndarray, ...], matrix: Csr) -> None:
    """Variables, objective and rows into an empty `helper`: the same model either way."""
    lb, ub, obj, lo, hi = vectors
    if matrix.nnz > TERM_BY_TERM_MAX:
        helper.fill_model_from_sparse_data(lb, ub, obj, lo, hi, matrix.scipy())  # type: ignore[arg-type]
        return
    # (the stubs spell numpy's array types in a way no array matches)
    integer = np.zeros(lb.size, bool)
    helper.add_var_array_with_bounds(lb, ub, integer, "")  # type: ignore[arg-type]
    helper.set_objective_coefficients(list(range(lb.size)), obj.tolist())
    cols, coefficients, ptr = matrix.indices.tolist(), matrix.data.tolist(), matrix.indptr.tolist()
    for row, (low, high) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
        ct = helper.add_linear_constraint()
        helper.set_constraint_lower_bound(ct, low)
        helper.set_constraint_upper_bound(ct, high)
        for k in range(ptr[row], ptr[row + 1]):
            helper.add_term_to_constraint(ct, cols[k], coefficients[k])


def solve(
    mdl: ArrayModel,
    backend: str,
    *,
    time_limit_s: float,
    threads: int,
    seed: int,
    gap: float,
    hint: np.ndarray | None = None,
    fixed: np.ndarray | None = None,
    relax: bool = False,
) -> BackendResult:
    """Solve `mdl`; `fixed` (a mask) pins those variables to their `hint` values; `relax` drops
    integrality (the LP relaxation, whose optimum bounds every integer solution)."""
    start = time.perf_counter()
    (lb, ub, obj, integer, lo, hi), matrix = mdl.built()
    if fixed is not None:
        assert hint is not None
        lb, ub = lb.copy(), ub.copy()
        lb[fixed] = ub[fixed] = hint[fixed]
    helper = mbh.ModelBuilderHelper()
    fill(helper, (lb, ub, obj, lo, hi), matrix)
    if not relax:
        for i in np.flatnonzero(integer).tolist():
            helper.set_var_integrality(i, True)
    helper.set_maximize(True)
    helper.set_objective_offset(mdl.offset)
    if hint is not None and not relax:
        for i, value in enumerate(hint.tolist()):
            helper.add_hint(i, value)
    solver = mbh.ModelSolverHelper(backend)
    if not solver.solver_is_supported():
        return BackendResult("error", None, None, None, 0.0, f"backend {backend} unavailable")
    solver.set_time_limit_in_seconds(max(0.01, time_limit_s))
    params = _parameters(backend, threads, seed, gap)
    if params:
        solver.set_solver_specific_parameters(params)
    solver.solve(helper)
    seconds = time.perf_counter() - start
    status = solver.status()
    if not solver.has_solution():
        name = "infeasible" if status == mbh.SolveStatus.INFEASIBLE else "no_solution"
        return BackendResult(name, None, None, None, seconds, str(status))
    objective = solver.objective_value()
    raw_bound = solver.best_objective_bound()
    bound = raw_bound if math.isfinite(raw_bound) else None
    optimal = status == mbh.SolveStatus.OPTIMAL
    return BackendResult(
        "optimal" if optimal else "feasible",
        np.asarray(solver.variable_values()),
        objective,
        bound,
        seconds,
        str(status),
    )

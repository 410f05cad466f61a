"""A mixed-integer program held as arrays: variable blocks and constraint rows in COO form.

Constraint families are added one vectorised call each (STYLE.md habit 6); `build` turns them
into the CSR matrix that OR-Tools' model builder reads in one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

INF = float("inf")


def _filled(value: float | np.ndarray, shape: int | tuple[int, ...]) -> np.ndarray:
    """A new float array of `shape` from a scalar or an array of that shape (broadcast as numpy
    does, in a fraction of `np.broadcast_to`'s time for the common scalar)."""
    if isinstance(value, (int, float)):
        return np.full(shape, float(value))
    return np.broadcast_to(np.asarray(value, float), shape).copy()


@dataclass
class ArrayModel:
    lb: list[np.ndarray] = field(default_factory=list)
    ub: list[np.ndarray] = field(default_factory=list)
    obj: list[np.ndarray] = field(default_factory=list)
    integer: list[np.ndarray] = field(default_factory=list)
    rows_lo: list[np.ndarray] = field(default_factory=list)
    rows_hi: list[np.ndarray] = field(default_factory=list)
    coo_rows: list[np.ndarray] = field(default_factory=list)
    coo_cols: list[np.ndarray] = field(default_factory=list)
    coo_vals: list[np.ndarray] = field(default_factory=list)
    families: dict[str, tuple[int, int]] = field(default_factory=dict)
    n_vars: int = 0
    n_rows: int = 0
    offset: float = 0.0
    # The vectors and the CSR matrix, built once per model (every backend call of a round
    # reads them: the LP, the neighbourhood, the whole model); reset when the model grows.
    _built: tuple[tuple[np.ndarray, ...], sp.csr_matrix] | None = None

    def variables(
        self,
        n: int,
        lb: float | np.ndarray,
        ub: float | np.ndarray,
        obj: float | np.ndarray,
        integer: bool,
    ) -> np.ndarray:
        """Add `n` variables; returns their indices."""
        self._built = None
        idx = np.arange(self.n_vars, self.n_vars + n, dtype=np.int64)
        self.lb.append(_filled(lb, n))
        self.ub.append(_filled(ub, n))
        self.obj.append(_filled(obj, n))
        self.integer.append(np.full(n, integer))
        self.n_vars += n
        return idx

    def rows(
        self, family: str, n: int, lo: float | np.ndarray, hi: float | np.ndarray
    ) -> np.ndarray:
        """Add `n` constraint rows lo <= A x <= hi of one family; returns their indices."""
        self._built = None
        idx = np.arange(self.n_rows, self.n_rows + n, dtype=np.int64)
        self.rows_lo.append(_filled(lo, n))
        self.rows_hi.append(_filled(hi, n))
        start, _ = self.families.get(family, (self.n_rows, self.n_rows))
        self.families[family] = (start, self.n_rows + n)
        self.n_rows += n
        return idx

    def terms(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray | float) -> None:
        self._built = None
        rows = np.asarray(rows, np.int64)
        cols = np.asarray(cols, np.int64)
        self.coo_rows.append(rows)
        self.coo_cols.append(cols)
        self.coo_vals.append(_filled(vals, rows.shape))

    def built(self) -> tuple[tuple[np.ndarray, ...], sp.csr_matrix]:
        """(vectors, matrix), made once until the model changes (read-only)."""
        if self._built is None:
            self._built = (self.vectors(), self.matrix())
        return self._built

    def matrix(self) -> sp.csr_matrix:
        if not self.coo_rows:
            return sp.csr_matrix((self.n_rows, self.n_vars))
        a = sp.coo_matrix(
            (
                np.concatenate(self.coo_vals),
                (np.concatenate(self.coo_rows), np.concatenate(self.coo_cols)),
            ),
            shape=(self.n_rows, self.n_vars),
        )
        return a.tocsr()

    def vectors(self) -> tuple[np.ndarray, ...]:
        def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        return (
            cat(self.lb, float),
            cat(self.ub, float),
            cat(self.obj, float),
            cat(self.integer, bool),
            cat(self.rows_lo, float),
            cat(self.rows_hi, float),
        )

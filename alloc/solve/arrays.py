"""A mixed-integer program held as arrays: variable blocks and constraint rows in COO form.

Constraint families are added one vectorised call each (STYLE.md habit 6); `matrix` turns them
into the CSR arrays that OR-Tools' model builder reads (milp_backend.fill).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

INF = float("inf")


@dataclass(frozen=True, slots=True)
class Csr:
    """A sparse matrix as CSR arrays: row i's terms are `indices[indptr[i]:indptr[i+1]]` with
    coefficients `data[...]`, columns sorted, no duplicates."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_cols: int

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def scipy(self) -> sp.csr_matrix:
        """The same matrix for scipy (which loads here, about 0.2 s the first time)."""
        import scipy.sparse as sp

        shape = (self.indptr.size - 1, self.n_cols)
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=shape)


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
    _built: tuple[tuple[np.ndarray, ...], Csr] | None = None

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

    def built(self) -> tuple[tuple[np.ndarray, ...], Csr]:
        """(vectors, matrix), made once until the model changes (read-only)."""
        if self._built is None:
            self._built = (self.vectors(), self.matrix())
        return self._built

    def matrix(self) -> Csr:
        """The constraint matrix in canonical CSR form: rows in order, columns sorted within a
        row, duplicate terms summed (what scipy's `coo_matrix(...).tocsr()` gives, made with
        numpy alone so a round that never reaches the solver need not load scipy)."""
        if not self.coo_rows:
            empty = np.zeros(0, np.int64)
            return Csr(np.zeros(self.n_rows + 1, np.int64), empty, np.zeros(0), self.n_vars)
        rows = np.concatenate(self.coo_rows)
        cols = np.concatenate(self.coo_cols)
        vals = np.concatenate(self.coo_vals)
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        first = np.ones(rows.size, bool)
        first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
        starts = np.flatnonzero(first)
        vals = np.add.reduceat(vals, starts)
        rows, cols = rows[starts], cols[starts]
        indptr = np.zeros(self.n_rows + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n_rows), out=indptr[1:])
        return Csr(indptr, cols, vals, self.n_vars)

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

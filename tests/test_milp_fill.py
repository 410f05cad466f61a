"""The MILP backend fills OR-Tools' model in one call from a scipy matrix (a large model) or term
by term (a small one, so a small round need not load scipy): both must give the same model, and
the numpy-built CSR must be scipy's canonical form (sorted columns, duplicates summed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from ortools.linear_solver.python import model_builder_helper as mbh

from alloc.io import load_instance
from alloc.solve import milp_backend
from alloc.solve.arrays import ArrayModel
from alloc.solve.context import round_context
from alloc.solve.milp_model import build_model

EXAMPLES = Path(__file__).resolve().parents[1] / "instances"


def _model_text(mdl: ArrayModel, term_by_term: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(milp_backend, "TERM_BY_TERM_MAX", 10**9 if term_by_term else -1)
    (lb, ub, obj, integer, lo, hi), matrix = mdl.built()
    helper = mbh.ModelBuilderHelper()
    milp_backend.fill(helper, (lb, ub, obj, lo, hi), matrix)
    return str(helper.export_to_lp_string())


def _tiny() -> ArrayModel:
    """Terms given out of order, one twice (summed), one row empty, one zero coefficient."""
    m = ArrayModel()
    x = m.variables(4, 0.0, np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, -2.0, 0.5, 0.0]), True)
    r = m.rows("cap", 3, np.array([-np.inf, 1.0, 0.0]), np.array([5.0, np.inf, 0.0]))
    m.terms(np.array([r[0], r[0], r[2], r[0]]), np.array([x[3], x[1], x[0], x[1]]), 2.0)
    m.terms(np.array([r[2]]), np.array([x[2]]), 0.0)
    return m


def test_csr_is_scipys_canonical_form() -> None:
    m = _tiny()
    ours = m.matrix()
    theirs = sp.coo_matrix(
        (np.concatenate(m.coo_vals), (np.concatenate(m.coo_rows), np.concatenate(m.coo_cols))),
        shape=(m.n_rows, m.n_vars),
    ).tocsr()
    theirs.sum_duplicates()
    assert ours.indptr.tolist() == theirs.indptr.tolist() == [0, 2, 2, 4]
    assert ours.indices.tolist() == theirs.indices.tolist() == [1, 3, 0, 2]
    assert ours.data.tolist() == theirs.data.tolist() == [4.0, 2.0, 2.0, 0.0]
    assert (ours.scipy() != theirs).nnz == 0


def test_empty_model_has_an_empty_matrix() -> None:
    m = ArrayModel()
    m.variables(2, 0.0, 1.0, 1.0, False)
    m.rows("none", 2, 0.0, 1.0)
    assert m.matrix().nnz == 0
    assert m.matrix().indptr.tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "source",
    ["examples/unfunded.yaml", "examples/topology-block.yaml", "lab-1024.yaml", "tiny"],
)
def test_both_fills_give_the_same_model(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if source == "tiny":
        mdl = _tiny()
    else:
        mdl = build_model(round_context(load_instance(EXAMPLES / source))).model
    assert mdl.matrix().nnz > 0
    one_call = _model_text(mdl, term_by_term=False, monkeypatch=monkeypatch)
    by_term = _model_text(mdl, term_by_term=True, monkeypatch=monkeypatch)
    assert one_call == by_term

"""The two-host lab the controller's tests run on (tests/test_controller_*.py): `sim2`, two
8-GPU hosts, half each to nlp and vision, and its trace of three jobs."""

from __future__ import annotations

from pathlib import Path

LAB = """\
now: 2026-11-30T00:00:00Z
cluster:
  name: sim2
  hosts:
    - {name: h1, gpus: 8, gpu_type: h100, block: b1, rack: r1}
    - {name: h2, gpus: 8, gpu_type: h100, block: b1, rack: r1}
budgets:
  name: lab
  children: [{name: nlp, share: 50%}, {name: vision, share: 50%}]
"""
# nlp's a and b (10 h of work each, protected 1 h) start at once; vision's c (1 h, protected
# 30 min) arrives at 30 min and waits: nlp holds everything, and its work is protected.
TRACE = """\
id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology
a,nlp,8,0,36000,3600,true,0,
b,nlp,8,0,36000,3600,true,0,
c,vision,8,1800,3600,1800,true,0,
"""


def write_lab(folder: Path, trace: str = TRACE) -> None:
    """lab.yaml and trace.csv in `folder`, as a controller config's `sim:` names them."""
    (folder / "lab.yaml").write_text(LAB)
    (folder / "trace.csv").write_text(trace)

"""``python -m attnpy bench``: attnpy vs the tutorial's NumPy code vs PyTorch.

One run prints, side by side, the median time and GFLOP/s of

* ``attnpy.attention`` (the fused C kernel),
* the tutorial's NumPy ``scaled_dot_product_attention`` (re-written in
  :mod:`attnpy.bench.tutorial` with the tutorial's formulas: matmul,
  ``/ sqrt(d_k)``, ``np.where(mask == 0, -1e9, s)`` with the float
  ``np.tril`` mask for causal, stable softmax, matmul),
* PyTorch's ``torch.nn.functional.scaled_dot_product_attention`` (only when
  torch can be imported; never a dependency of attnpy),

next to the machine's own ``np.matmul`` rate measured in the same run, then
the parts of :mod:`attnpy.bench.parts` (a tiny per-call case, the extra
peak memory of a long causal call in a fresh subprocess, 1-vs-2-thread
scaling, MultiHeadAttention against the same steps by hand and torch), and
a PASS/FAIL "targets" section.

Before anything is timed, attnpy's output is compared with the tutorial's
(the correctness guard): a fast but wrong kernel fails the run (exit code 1).

The modules: config (shapes, modes), tutorial (the baseline and the
guard), timing (interleaved medians), env (what is compared), cases (the
measurements), parts (the registry of parts after the main table), mha,
targets, report (printing), cli (options and the run).

Run ``python -m attnpy bench --help`` for the options; benchmarks/README.md
explains the columns.
"""
from .cli import main

__all__ = ["main"]

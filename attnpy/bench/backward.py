"""The ``backward`` part of ``python -m attnpy bench``: attention forward +
backward, attnpy vs torch autograd vs the NumPy backward a tutorial reader
writes by hand.

For each shape, medians of interleaved samples of

- attnpy: ``attention(..., return_lse=True)`` + ``attention_backward``;
- torch: ``scaled_dot_product_attention`` + ``.backward()`` (autograd);
- numpy (float32 L=1024 only): scores, softmax, weights @ V, then dV, dP,
  dS, dQ, dK with the full L x S matrices (NumPy's BLAS threads);
- attnpy's backward alone against its forward alone.

attnpy and torch get the same thread count. The last line measures the
extra peak memory (RSS, in a fresh process) of a (1, 1, 65536, 64) float32
causal backward beyond its inputs and outputs.
"""
import json
import subprocess
import sys

import numpy as np

import attnpy

from . import bits16
from .report import _p
from .timing import Contender, _estimate, time_interleaved

SHAPES = [  # (shape, dtype, causal)
    ((1, 12, 1024, 64), np.float32, False),
    ((1, 12, 2048, 64), np.float32, True),
    ((1, 12, 1024, 64), np.float64, False),
]


def numpy_fwd_bwd(Q, K, V, dout, causal):
    """The hand-written NumPy forward + backward (full L x S matrices)."""
    scale = 1.0 / np.sqrt(Q.shape[-1])
    s = (Q @ np.swapaxes(K, -1, -2)) * scale
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.tri(L, S, dtype=bool), s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    out = w @ V
    dV = np.swapaxes(w, -1, -2) @ dout
    dP = dout @ np.swapaxes(V, -1, -2)
    dS = w * (dP - np.sum(dP * w, axis=-1, keepdims=True))
    dQ = dS @ K * scale
    dK = np.swapaxes(dS, -1, -2) @ Q * scale
    return out, dQ, dK, dV


def attnpy_fwd_bwd(Q, K, V, dout, causal):
    out, lse = attnpy.attention(Q, K, V, causal=causal, return_lse=True)
    return (out,) + attnpy.attention_backward(dout, Q, K, V, out, lse,
                                              causal=causal)


def torch_fwd_bwd(tq, tk, tv, tdout, causal):
    import torch
    # autograd on, whatever mode the caller is in (the bench's Env runs
    # torch in inference mode)
    with torch.inference_mode(False), torch.enable_grad():
        for t in (tq, tk, tv):
            t.grad = None
        out = torch.nn.functional.scaled_dot_product_attention(
            tq, tk, tv, is_causal=causal)
        out.backward(tdout)
    return out


def contenders(shape, dtype, causal, torch, with_numpy):
    rng = np.random.default_rng(0)
    Q, K, V, dout = (rng.standard_normal(shape).astype(dtype)
                     for _ in range(4))
    out, lse = attnpy.attention(Q, K, V, causal=causal, return_lse=True)
    got = attnpy_fwd_bwd(Q, K, V, dout, causal)
    cs = [Contender("attnpy", lambda: attnpy_fwd_bwd(Q, K, V, dout, causal)),
          Contender("fwd", lambda: attnpy.attention(Q, K, V, causal=causal,
                                                    return_lse=True)),
          Contender("bwd", lambda: attnpy.attention_backward(
              dout, Q, K, V, out, lse, causal=causal))]
    err = 0.0
    if torch is not None:
        with torch.inference_mode(False):   # tensors autograd may record
            tq, tk, tv = (torch.tensor(x, requires_grad=True)
                          for x in (Q, K, V))
            tdout = torch.tensor(dout)
        torch_fwd_bwd(tq, tk, tv, tdout, causal)
        for g, t in zip(got[1:], (tq, tk, tv)):
            ref = t.grad.numpy()
            err = max(err, float(np.abs(g - ref).max() / np.abs(ref).max()))
        cs.append(Contender("torch", lambda: torch_fwd_bwd(
            tq, tk, tv, tdout, causal)))
    if with_numpy:
        cs.append(Contender("numpy", lambda: numpy_fwd_bwd(Q, K, V, dout,
                                                           causal)))
    return cs, err


_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np, attnpy
attnpy.set_num_threads(int(sys.argv[2]))
shape = (1, 1, 65536, 64)
rng = np.random.default_rng(0)
Q, K, V, dout = (rng.standard_normal(shape, dtype=np.float32)
                 for _ in range(4))
out, lse = attnpy.attention(Q, K, V, causal=True, return_lse=True)
def status(key):   # kB lines of /proc/self/status
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                      # reset the peak RSS (VmHWM) to now
before = status("VmRSS:")
grads = attnpy.attention_backward(dout, Q, K, V, out, lse, causal=True)
res = sum(g.nbytes for g in grads)
print(json.dumps({"extra": status("VmHWM:") - before - res}))
"""


def memory_65536(root, threads):
    p = subprocess.run([sys.executable, "-c", _CHILD, root, str(threads)],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench_backward(env, cfg, repeat, shapes=SHAPES, memory=True, shapes16=None):
    """Every shape of SHAPES, then the memory of the long causal backward,
    then the 16-bit rows of shapes16 (default bits16.BACKWARD16)."""
    _p("")
    _p("attention forward + backward, %d threads, medians of interleaved samples (ms)"
       % env.threads)
    _p("  %-30s %9s %9s %9s %13s %13s %8s %17s" % (
        "shape, dtype", "attnpy", "torch", "numpy", "torch/attnpy", "numpy/attnpy",
        "bwd/fwd", "rel err vs torch"))
    res = []
    for shape, dtype, causal in shapes:
        with_numpy = dtype == np.float32 and not causal
        cs, err = contenders(shape, dtype, causal, env.torch, with_numpy)
        t = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg, repeat)
        med = {k: v["median_s"] * 1e3 for k, v in t.items()}
        a, tt, nn = med["attnpy"], med.get("torch"), med.get("numpy")
        r = {"shape": list(shape), "dtype": np.dtype(dtype).name, "causal": causal,
             "results": t, "torch_vs_attnpy": tt / a if tt else None,
             "numpy_vs_attnpy": nn / a if nn else None,
             "bwd_vs_fwd": med["bwd"] / med["fwd"], "max_rel_err_vs_torch": err}
        res.append(r)
        _p("  %-30s %9.1f %9s %9s %13s %13s %8.2f %17.1e" % (
            "%s %s%s" % (tuple(shape), np.dtype(dtype).name, " causal" if causal else ""),
            a, "%.1f" % tt if tt else "-", "%.1f" % nn if nn else "-",
            "%.2f" % (tt / a) if tt else "-", "%.2f" % (nn / a) if nn else "-",
            r["bwd_vs_fwd"], err))
    out = {"shapes": res}
    if memory:
        m = out["memory"] = memory_65536(env.root, env.threads)
        _p("  (1, 1, 65536, 64) float32 causal backward: extra peak memory "
           + ("%.1f MiB beyond inputs and outputs (RSS)" % (m["extra"] / 2 ** 20)
              if "extra" in m else "error: " + m["error"]))
    shapes16 = bits16.BACKWARD16 if shapes16 is None else shapes16
    out["rows16"] = bits16.run_rows(
        env, cfg, repeat, "forward + backward in 16 bits beside attnpy float32 and torch",
        [lambda s=s, c=c, d=d: bits16.backward_row(env, cfg, repeat, s, c, d)
         for s, c in shapes16 for d in bits16.DTYPES16])
    out["targets"] = bits16.targets16(out["rows16"])
    return out

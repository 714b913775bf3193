"""Forward + backward of attention: attnpy vs torch autograd vs NumPy.

    python benchmarks/bench_backward.py [--threads N] [--budget SECONDS]
                                        [--quick]

For each shape, medians of interleaved samples (attnpy's bench harness) of

- attnpy: ``attention(..., return_lse=True)`` + ``attention_backward``;
- torch: ``scaled_dot_product_attention`` + ``.backward()`` (autograd);
- numpy (float32 L=1024 only): the backward a tutorial reader writes by
  hand (scores, softmax, weights @ V, then dV, dP, dS, dQ, dK with the full
  L x S matrices; NumPy's BLAS uses its own threads);
- attnpy's backward alone against its forward alone.

attnpy and torch get the same thread count. The last line measures the
extra peak memory (RSS, in a fresh process) of a (1, 1, 65536, 64) float32
causal backward beyond its inputs and outputs.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__":
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import attnpy  # noqa: E402
try:  # the harness is moving to attnpy/bench/
    from attnpy.bench._harness import Contender, time_interleaved  # noqa
except ImportError:
    from attnpy._bench import Contender, time_interleaved  # noqa: E402

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
    for t in (tq, tk, tv):
        t.grad = None
    out = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, is_causal=causal)
    out.backward(tdout)
    return out


def contenders(shape, dtype, causal, with_torch, with_numpy):
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
    if with_torch:
        import torch
        tq, tk, tv = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
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


def memory_65536(threads):
    p = subprocess.run([sys.executable, "-c", _CHILD, ROOT, str(threads)],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _setup(argv):
    """Arguments; the same thread count for attnpy and torch."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=attnpy.get_num_threads())
    ap.add_argument("--budget", type=float, default=8.0,
                    help="seconds of sampling per shape (default 8)")
    ap.add_argument("--quick", action="store_true",
                    help="smaller budget, no 65,536-token run")
    args = ap.parse_args(argv)
    attnpy.set_num_threads(args.threads)
    try:
        import torch
    except ImportError:
        return args, False
    torch.set_num_threads(args.threads)
    return args, True


def main(argv=None):
    args, with_torch = _setup(argv)
    cfg = dict(budget=2.0 if args.quick else args.budget, min_samples=5,
               max_samples=41, min_sample_s=0.05, settle_s=0.12)
    print(f"attention forward + backward, {args.threads} threads, medians of "
          f"interleaved samples (ms); ratios side by side")
    print(f"{'shape, dtype':<32}{'attnpy':>9}{'torch':>9}{'numpy':>9}"
          f"{'torch/attnpy':>14}{'numpy/attnpy':>14}{'bwd/fwd':>9}"
          f"{'rel err vs torch':>18}")
    for shape, dtype, causal in SHAPES:
        with_numpy = dtype == np.float32 and not causal
        cs, err = contenders(shape, dtype, causal, with_torch, with_numpy)
        t = time_interleaved(cs, {c.name: 0.3 for c in cs}, cfg)
        med = {k: v["median_s"] * 1e3 for k, v in t.items()}
        a, tt, nn = med["attnpy"], med.get("torch"), med.get("numpy")
        name = (f"{shape} {np.dtype(dtype).name}"
                f"{' causal' if causal else ''}")
        print(f"{name:<32}{a:>9.1f}{(f'{tt:.1f}' if tt else '-'):>9}"
              f"{(f'{nn:.1f}' if nn else '-'):>9}"
              f"{(f'{tt / a:.2f}' if tt else '-'):>14}"
              f"{(f'{nn / a:.2f}' if nn else '-'):>14}"
              f"{med['bwd'] / med['fwd']:>9.2f}{err:>18.1e}")
    if not args.quick:
        m = memory_65536(args.threads)
        print("(1, 1, 65536, 64) float32 causal backward: extra peak memory "
              + (f"{m['extra'] / 2**20:.1f} MiB "
                 "beyond inputs and outputs (RSS)"
                 if "extra" in m else f"error: {m['error']}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

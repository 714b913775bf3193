"""16-bit rows of ``python -m attnpy bench``: float16 and bfloat16 decode,
forward and backward, each beside torch's SDPA in the same dtype and
beside attnpy in float32 on the same values.

A row makes its inputs in float32, rounds them once to the 16-bit dtype,
and gives attnpy float32 the rounded values widened back (so all three
contenders compute on the same numbers). The 16-bit output is checked
against attnpy float32's before anything is timed: it must agree within
a few units in the last place of the 16-bit dtype. A 16-bit call attnpy
refuses (a build without 16-bit kernels) prints as refused, and its
targets FAIL with the reason. Samples are taken in blocks
(timing.time_blocked) since torch is among the contenders.

The targets: decode 16-bit >= 1.8x attnpy float32, >= 5x torch in the
same dtype and >= 80% of the streaming read of the same (16-bit) K and V
bytes by attnpy's threads (decode.stream_reader); forward 16-bit >= attnpy float32 and >= 1.5x torch in the
same dtype, and bfloat16 >= 1.3x attnpy float32 with the opt-in "amx"
set (AMX tiles; every other set computes 16-bit calls by the float32
rule, so bfloat16 there is float32's speed plus the bytes it saves);
backward 16-bit >= attnpy float32.
"""
import numpy as np

import attnpy

from .report import _p
from .timing import Contender, _estimate, time_blocked

DECODE16 = [((1, 32, 1, 128), 4096), ((1, 8, 1, 128), 32768)]
FORWARD16 = [((1, 12, 1024, 64), False)]
BACKWARD16 = [((1, 12, 1024, 64), False)]
DTYPES16 = ("float16", "bfloat16")
TARGET = {"decode_vs_f32": 1.8, "decode_vs_torch": 5.0, "decode_of_stream": 0.8,
          "forward_vs_f32": 1.0,
          "forward_vs_torch": 1.5, "forward_bf16_vs_f32": 1.3, "backward_vs_f32": 1.0}
ULPS = 8     # guard: |16-bit - float32| <= ULPS * eps(dtype) * max(1, max|float32|)


def np_dtype(name):
    """The NumPy dtype of "float16" / "bfloat16" (ml_dtypes), or None."""
    if name == "float16":
        return np.dtype(np.float16)
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def amx_in_use():
    """True when attnpy runs the opt-in "amx" set (bfloat16 by tiles)."""
    return attnpy.get_isa() == "amx"


def _eps(name):
    return 2.0 ** -10 if name == "float16" else 2.0 ** -7


def _to_torch(env, a, name):
    """a (a float32 array holding 16-bit values) as a torch tensor of that dtype."""
    t = env.torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    return t.to(env.torch.float16 if name == "float16" else env.torch.bfloat16)


def _inputs(shapes, name, seed):
    """Random float32 arrays rounded to the 16-bit dtype: (16-bit, float32) lists."""
    rng = np.random.default_rng(seed)
    dt = np_dtype(name)
    a16 = [rng.standard_normal(s, dtype=np.float32).astype(dt) for s in shapes]
    return a16, [x.astype(np.float32) for x in a16]


def _guard(got, ref, name):
    got = np.asarray(got, dtype=np.float32)
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    tol = ULPS * _eps(name) * max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
    return {"ok": bool(err <= tol), "max_abs_err": err, "tol": tol,
            "why": "" if err <= tol else "max |%s - float32| = %.3g > %.3g" % (name, err, tol)}


def _try16(fn):
    """(result, None), or (None, why) when attnpy refuses the 16-bit call."""
    try:
        return fn(), None
    except (TypeError, ValueError, NotImplementedError) as exc:
        return None, "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:160])


def _time(cs, cfg, repeat):
    for c in cs:
        c.fn()
    st = time_blocked(cs, {c.name: _estimate(c) for c in cs}, cfg, repeat)
    return st, {k: v["median_s"] for k, v in st.items()}


def _row(env, cfg, repeat, kind, name, desc, calls16, call32, call_torch, check,
         stream=None):
    """One row: guard the 16-bit call, then time it beside float32 and torch.

    calls16: a function doing the 16-bit call; call32 the float32 one;
    call_torch (or None) torch's; check(out16, out32) -> guard dict;
    stream: (a function that makes the streaming-read contender of the
    16-bit operands, their bytes), or None."""
    row = {"kind": kind, "dtype": name, "case": desc}
    if np_dtype(name) is None:
        row["refused"] = "ml_dtypes is not installed (pip install ml_dtypes)"
        return row
    got, why = _try16(calls16)
    first = got[0] if isinstance(got, tuple) else got
    if not why and np.asarray(first).dtype != np_dtype(name):
        why = "it returns %s, not %s (no 16-bit path)" % (np.asarray(first).dtype, name)
    if why:
        row["refused"] = why
        return row
    row["guard"] = check(got, call32())
    if not row["guard"]["ok"]:
        return row
    cs = [Contender(name, calls16), Contender("float32", call32)]
    if call_torch is not None:
        cs.append(Contender("torch " + name, call_torch))
    reader = stream[0]() if stream is not None else None
    if reader is not None:
        cs.append(reader)
    row["results"], t = _time(cs, cfg, repeat)
    row["ms"] = {k: v * 1e3 for k, v in t.items()}
    row["vs_f32"] = t["float32"] / t[name]
    row["vs_torch"] = t["torch " + name] / t[name] if call_torch is not None else None
    if stream is not None:
        row["of_stream"] = t["stream"] / t[name] if "stream" in t else None
        row["stream_gbs"] = stream[1] / t["stream"] / 1e9 if "stream" in t else None
    return row


def decode_row(env, cfg, repeat, shape, S, name, seed=0):
    B, H, L, E = shape
    (q, k, v), (q32, k32, v32) = _inputs([shape, (B, H, S, E), (B, H, S, E)], name, seed)
    tt = None
    if env.torch is not None:
        tq, tk, tv = (_to_torch(env, x, name) for x in (q32, k32, v32))
        tt = lambda: env.F.scaled_dot_product_attention(tq, tk, tv)  # noqa: E731
    from .decode import stream_reader
    return _row(env, cfg, repeat, "decode", name, "(%d,%d,%d,%d) S=%d" % (*shape, S),
                lambda: attnpy.attention(q, k, v), lambda: attnpy.attention(q32, k32, v32),
                tt, lambda o, r: _guard(o, r, name),
                stream=(lambda: stream_reader([k, v]), k.nbytes + v.nbytes))


def forward_row(env, cfg, repeat, shape, causal, name, seed=1):
    (q, k, v), (q32, k32, v32) = _inputs([shape] * 3, name, seed)
    tt = None
    if env.torch is not None:
        tq, tk, tv = (_to_torch(env, x, name) for x in (q32, k32, v32))
        tt = lambda: env.F.scaled_dot_product_attention(  # noqa: E731
            tq, tk, tv, is_causal=causal)
    return _row(env, cfg, repeat, "forward", name,
                "(%d,%d,%d,%d)%s" % (*shape, " causal" if causal else ""),
                lambda: attnpy.attention(q, k, v, causal=causal),
                lambda: attnpy.attention(q32, k32, v32, causal=causal),
                tt, lambda o, r: _guard(o, r, name))


def _fwd_bwd(q, k, v, d, causal):
    out, lse = attnpy.attention(q, k, v, causal=causal, return_lse=True)
    return attnpy.attention_backward(d, q, k, v, out, lse, causal=causal)


def _torch_fwd_bwd(env, arrays, name, causal):
    torch = env.torch
    with torch.inference_mode(False):
        tq, tk, tv = (_to_torch(env, x, name).requires_grad_(True) for x in arrays[:3])
        td = _to_torch(env, arrays[3], name)

    def run():
        with torch.inference_mode(False), torch.enable_grad():
            for t in (tq, tk, tv):
                t.grad = None
            env.F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).backward(td)
    return run


def backward_row(env, cfg, repeat, shape, causal, name, seed=2):
    a16, a32 = _inputs([shape] * 4, name, seed)

    def check(g16, g32):
        gs = [_guard(a, b, name) for a, b in zip(g16, g32)]
        bad = [g for g in gs if not g["ok"]]
        return bad[0] if bad else dict(gs[0], max_abs_err=max(g["max_abs_err"] for g in gs))
    tt = _torch_fwd_bwd(env, a32, name, causal) if env.torch is not None else None
    return _row(env, cfg, repeat, "backward", name,
                "(%d,%d,%d,%d)%s fwd+bwd" % (*shape, " causal" if causal else ""),
                lambda: _fwd_bwd(*a16, causal), lambda: _fwd_bwd(*a32, causal), tt, check)


def print_row(r):
    head = "  %-8s %-30s" % (r["dtype"], r["case"])
    if "refused" in r:
        _p(head + " attnpy refuses the 16-bit call: " + r["refused"])
    elif not r["guard"]["ok"]:
        _p(head + " WRONG RESULT, not timed: " + r["guard"]["why"])
    else:
        m = r["ms"]
        tor = ("torch %s %9.3f ms (%5.2fx)" % (r["dtype"], m["torch " + r["dtype"]], r["vs_torch"])
               if r["vs_torch"] is not None else "(no torch)")
        st = ""
        if "of_stream" in r:
            st = (" | stream %6.1f GB/s: at %3.0f%%" % (r["stream_gbs"], 100 * r["of_stream"])
                  if r["of_stream"] else " | stream: not in this build")
        _p("%s %9.3f ms | float32 %9.3f ms (%5.2fx) | %s%s | max err %.1e"
           % (head, m[r["dtype"]], m["float32"], r["vs_f32"], tor, st,
              r["guard"]["max_abs_err"]))


def run_rows(env, cfg, repeat, title, makers):
    """Prints a header and each row made by the callables in makers."""
    _p("")
    _p(title + ", %d threads; ratios: how many times faster the 16-bit call is "
       "(medians of samples in blocks)" % env.threads)
    rows = []
    for make in makers:
        rows.append(make())
        print_row(rows[-1])
    return rows


def targets16(rows, amx=None):
    """[{target, status, measured, required}] of the 16-bit rows."""
    amx = amx_in_use() if amx is None else amx
    res = []

    def add(name, status, measured, required, yardstick):
        res.append({"target": name, "status": status, "measured": measured,
                    "required": required, "yardstick": yardstick})

    for r in rows:
        kind, name = r["kind"], r["dtype"]
        base = "%s %s %s" % (kind, r["case"], name)
        # (what, row key, need, required, yardstick, shown as a percentage)
        checks = [("vs attnpy float32", "vs_f32", TARGET[kind + "_vs_f32"], None, None, False)]
        if kind in ("decode", "forward"):
            checks.append(("vs torch " + name, "vs_torch", TARGET[kind + "_vs_torch"], None,
                           "torch", False))
        if kind == "decode":
            need = TARGET["decode_of_stream"]
            checks.append(("vs the streaming read", "of_stream", need,
                           ">= %.0f%% of the streaming read" % (100 * need), None, True))
        if kind == "forward" and name == "bfloat16" and amx:
            checks.append(("vs attnpy float32 (amx set)", "vs_f32",
                           TARGET["forward_bf16_vs_f32"], None, None, False))
        for what, key, need, req, yard, pct in checks:
            req = req or ">= %gx" % need
            tname = "%s %s" % (base, what)
            if "refused" in r:
                add(tname, "FAIL", "attnpy refuses it: " + r["refused"], req, yard)
            elif not r["guard"]["ok"]:
                add(tname, "FAIL", "wrong result: " + r["guard"]["why"], req, yard)
            elif r.get(key) is None:
                add(tname, "N/A", "torch not run" if key == "vs_torch" else
                    "no attnpy._core.read_bytes in this build", req, yard)
            else:
                add(tname, "PASS" if r[key] >= need else "FAIL",
                    "%.0f%%" % (100 * r[key]) if pct else "%.2fx" % r[key], req, yard)
    return res

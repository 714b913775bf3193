"""Measure 16-bit attention errors: attnpy and torch's SDPA against float64.

    python tools/measure_16bit_errors.py [--dict]

For every case of tests/attention/test_accuracy16.py (the same inputs:
shapes, seeds, masks), in float16 and bfloat16: the max and mean |error|
of attnpy.attention (attention_backward for the gradient cases) and of
torch.nn.functional.scaled_dot_product_attention in the same dtype,
against attnpy.reference in float64 on the same 16-bit inputs, and the
error of that float64 answer rounded once to the dtype (no 16-bit result
does better). --dict also prints the TORCH_ERR constants for the test.
Run from the repository root after building in place.
"""
import importlib.util
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _test_module():
    path = os.path.join(ROOT, "tests", "attention", "test_accuracy16.py")
    spec = importlib.util.spec_from_file_location("_accuracy16_cases", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


T = _test_module()


def _torch_kw(kw, Lq, S, tdt):
    """torch's SDPA arguments for attnpy's kw (None: torch cannot express it)."""
    import torch
    if "alibi_slopes" in kw or "softcap" in kw:
        return None
    out = {}
    if kw.get("window") is not None:
        i, j = np.arange(Lq)[:, None], np.arange(S)[None, :]
        out["attn_mask"] = torch.from_numpy((j <= i) & (j >= i - kw["window"][0]))
    elif kw.get("causal"):
        out["is_causal"] = True
    if kw.get("mask") is not None:
        out["attn_mask"] = torch.from_numpy(kw["mask"])
    if kw.get("bias") is not None:
        out["attn_mask"] = torch.from_numpy(kw["bias"].astype(np.float32)).to(tdt)
    return out


def _tensor(a, tdt, grad=False):
    import torch
    t = torch.from_numpy(np.asarray(a).astype(np.float32)).to(tdt)
    return t.requires_grad_(True) if grad else t


def _attnpy(fn):
    """fn()'s result, or None when attnpy refuses the 16-bit call."""
    try:
        return fn()
    except (TypeError, ValueError, NotImplementedError) as exc:
        return "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:70])


def _row(case, name, grad, a, t, want, rows=None):
    w = want if rows is None else want[..., rows, :]
    if isinstance(a, str):
        ae, note = None, a
    else:
        ae = T.errors(a, want, rows)
        note = "" if np.asarray(a).dtype == T.np_dtype(name) else \
            "attnpy returned %s" % np.asarray(a).dtype
    return {"case": case, "dtype": name, "grad": grad, "attnpy": ae, "note": note,
            "torch": None if t is None else T.errors(t, want, rows),
            "floor": T.rounding_floor(w, name)}


def measure(name):
    """[{case, dtype, grad, attnpy, torch, floor, note}] of one dtype."""
    import torch
    import attnpy
    tdt = torch.float16 if name == "float16" else torch.bfloat16
    F = torch.nn.functional.scaled_dot_product_attention
    res = []
    for case in T.CASES:
        Q, K, V, _, kw = T.inputs(case, name)
        want = T.reference_out(Q, K, V, kw)
        a = _attnpy(lambda: attnpy.attention(Q, K, V, **kw))
        tk = _torch_kw(kw, Q.shape[2], K.shape[2], tdt)
        t = None
        if tk is not None:
            with torch.no_grad():
                t = F(*(_tensor(x, tdt) for x in (Q, K, V)), **tk).float().numpy()
        res.append(_row(case, name, None, a, t, want, T.kept_rows(kw)))
    for case in T.GRAD_CASES:
        Q, K, V, dout, kw = T.inputs(case, name)
        wants = T.reference_grads(Q, K, V, dout, kw)

        def fwd_bwd():
            out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
            return attnpy.attention_backward(dout, Q, K, V, out, lse, **kw)
        got = _attnpy(fwd_bwd)
        tq, tk_, tv = (_tensor(x, tdt, grad=True) for x in (Q, K, V))
        F(tq, tk_, tv, **_torch_kw(kw, Q.shape[2], K.shape[2], tdt)).backward(
            _tensor(dout, tdt))
        for i, (g, w) in enumerate(zip(("dq", "dk", "dv"), wants)):
            a = got if isinstance(got, str) else got[i]
            t = (tq, tk_, tv)[i].grad.float().numpy()
            res.append(_row(case, name, g, a, t, w))
    return res


def _fmt(e):
    return "%9.3e %9.3e" % e if e is not None else "%19s" % "-"


def main(argv):
    import attnpy
    import torch
    torch.set_num_threads(attnpy.get_num_threads())
    print("16-bit attention errors against float64 on the same 16-bit inputs")
    print("attnpy %s (%s), torch %s, shapes (B,H,L,E) = (%d,%d,%d,%d), long: L=%d S=%d"
          % (attnpy.__version__, os.path.dirname(attnpy.__file__), torch.__version__,
             T.B, T.H, T.L, T.E, T.LONG["L"], T.LONG["S"]))
    print("%-22s %-8s %19s %19s %19s" % ("case", "dtype", "attnpy max / mean",
                                          "torch max / mean", "rounded once"))
    consts = {}
    for name in T.DTYPES:
        for r in measure(name):
            label = r["case"] + ("" if r["grad"] is None else " " + r["grad"])
            print("%-22s %-8s %s %s %s %s" % (label, name, _fmt(r["attnpy"]), _fmt(r["torch"]),
                                              _fmt(r["floor"]), r["note"]))
            if r["torch"] is not None:
                key = (r["case"], name) + (() if r["grad"] is None else (r["grad"],))
                consts[key] = r["torch"]
    if "--dict" in argv:
        print("TORCH_ERR = {")
        for k, v in consts.items():
            print("    %r: (%.6e, %.6e)," % (k, v[0], v[1]))
        print("}")


if __name__ == "__main__":
    main(sys.argv[1:])

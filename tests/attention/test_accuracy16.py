"""Accuracy of 16-bit attention (float16, bfloat16) through every entry point.

Each result is compared with a float64 computation on the SAME 16-bit
inputs (the inputs widened exactly), and its error must be no worse than
that of PyTorch's scaled_dot_product_attention in the same dtype on the
same inputs. Torch's errors were measured once by
tools/measure_16bit_errors.py on exactly the inputs made here (same
shapes, same seeds); they are the TORCH_ERR constants below, so the fast
suite needs no torch. The test marked oracle (CI's oracle step)
re-measures torch side by side.

A result can do no better than the float64 answer rounded once to its
dtype; where torch's error is below that (it can be, by luck, on a few
elements), the bound is that rounding error plus a float32-sized slack
(a float32 accumulator may land on the other side of a rounding tie).
Variants torch's SDPA cannot express (ALiBi, softcap) are held to the
plain case's figures.
"""
import importlib

import numpy as np
import pytest

import attnpy
import attnpy.reference as ref

DTYPES = ("float16", "bfloat16")
B, H, L, E = 1, 4, 96, 64
LONG = dict(L=8, S=4096)               # long sums: one row against many keys
WINDOW = (24, 0)
SLOPES = np.array([0.5, 0.25, 0.125, 0.0625])
SOFTCAP = 5.0
POLICIES = ("zero", "uniform", "nan")
GRADS = ("dq", "dk", "dv")

# The cases: attention keyword arguments; "mask" / "bias" mean random ones
# made by inputs(). A case whose torch figure is another case's names it.
CASES = {
    "plain": {},
    "long": {},
    "causal": {"causal": True},
    "mask": {"mask": True},
    "bias": {"bias": True},
    "window": {"causal": True, "window": WINDOW},
    "alibi": {"alibi_slopes": SLOPES},
    "softcap": {"softcap": SOFTCAP},
    "fully_masked": {"mask": "rows"},
}
TORCH_PROXY = {"alibi": "plain", "softcap": "plain"}
GRAD_CASES = {"grad": {}, "grad causal": {"causal": True}}

# Torch's SDPA errors, measured by tools/measure_16bit_errors.py (torch
# 2.13 CPU): {(case, dtype): (max |err|, mean |err|)}, outputs against the
# float64 computation; gradients per (case, dtype, grad).
TORCH_ERR = {
    ('plain', 'float16'): (2.827133e-04, 3.418279e-05),
    ('long', 'float16'): (3.603919e-05, 5.814881e-06),
    ('causal', 'float16'): (1.106177e-03, 5.102921e-05),
    ('mask', 'float16'): (4.840516e-04, 3.925117e-05),
    ('bias', 'float16'): (9.982226e-04, 6.549379e-05),
    ('window', 'float16'): (8.864233e-04, 6.225565e-05),
    ('fully_masked', 'float16'): (3.186508e-04, 3.936091e-05),
    ('grad', 'float16', 'dq'): (4.667435e-04, 3.387649e-05),
    ('grad', 'float16', 'dk'): (6.749513e-04, 4.029769e-05),
    ('grad', 'float16', 'dv'): (4.398990e-04, 4.299890e-05),
    ('grad causal', 'float16', 'dq'): (9.906539e-04, 5.000608e-05),
    ('grad causal', 'float16', 'dk'): (1.681745e-03, 4.985211e-05),
    ('grad causal', 'float16', 'dv'): (2.042350e-03, 5.738951e-05),
    ('plain', 'bfloat16'): (2.300476e-03, 2.603161e-04),
    ('long', 'bfloat16'): (2.281380e-04, 4.460024e-05),
    ('causal', 'bfloat16'): (7.357943e-03, 3.885280e-04),
    ('mask', 'bfloat16'): (3.690686e-03, 3.052787e-04),
    ('bias', 'bfloat16'): (5.158812e-03, 5.229127e-04),
    ('window', 'bfloat16'): (7.900808e-03, 4.869249e-04),
    ('fully_masked', 'bfloat16'): (3.676387e-03, 3.109117e-04),
    ('grad', 'bfloat16', 'dq'): (3.879193e-03, 2.709465e-04),
    ('grad', 'bfloat16', 'dk'): (5.817805e-03, 3.237423e-04),
    ('grad', 'bfloat16', 'dv'): (6.824673e-03, 3.399913e-04),
    ('grad causal', 'bfloat16', 'dq'): (7.230767e-03, 3.922051e-04),
    ('grad causal', 'bfloat16', 'dk'): (1.226488e-02, 3.909339e-04),
    ('grad causal', 'bfloat16', 'dv'): (2.530029e-02, 4.598528e-04),
}


def np_dtype(name):
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes  # the test extra has it
    return np.dtype(ml_dtypes.bfloat16)


def inputs(case, name, seed=0):
    """(Q, K, V, dout) in the 16-bit dtype and the attention keywords of case.

    mask: bool, True = attend; "rows": rows 3 and 50 fully masked."""
    dt = np_dtype(name)
    rng = np.random.default_rng([seed, sorted(CASES).index(case) if case in CASES else 99,
                                 dt.itemsize, int(name == "bfloat16")])
    Lq, S = (LONG["L"], LONG["S"]) if case == "long" else (L, L)
    Q, K, V, dout = (rng.standard_normal(s).astype(dt) for s in
                     [(B, H, Lq, E), (B, H, S, E), (B, H, S, E), (B, H, Lq, E)])
    kw = dict(CASES.get(case, GRAD_CASES.get(case, {})))
    if kw.get("mask") is not None:
        mask = rng.random((B, 1, Lq, S)) < 0.7
        if kw["mask"] == "rows":
            mask[:, :, [3, 50]] = False
        kw["mask"] = mask
    if kw.get("bias"):
        kw["bias"] = (2 * rng.standard_normal((1, H, Lq, S))).astype(dt)
    if "alibi_slopes" in kw:
        kw["alibi_slopes"] = kw["alibi_slopes"].astype(dt)
    return Q, K, V, dout, kw


def wide(kw):
    """kw with its arrays widened to float64 (bool masks unchanged)."""
    return {k: (v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype != bool else v)
            for k, v in kw.items()}


def f64(*arrays):
    return [np.asarray(a).astype(np.float64) for a in arrays]


def reference_out(Q, K, V, kw, policy="zero"):
    return ref.attention(*f64(Q, K, V), fully_masked=policy, **wide(kw))


def reference_grads(Q, K, V, dout, kw):
    q, k, v, d = f64(Q, K, V, dout)
    out, lse = ref.attention(q, k, v, return_lse=True, **wide(kw))
    return ref.attention_backward(d, q, k, v, out, lse, **wide(kw))[:3]


def errors(got, want, rows=None):
    """(max, mean) |got - want| over the finite entries of want (rows: a
    boolean selection of the query axis)."""
    got = np.asarray(got).astype(np.float64)
    if rows is not None:
        got, want = got[..., rows, :], want[..., rows, :]
    ok = np.isfinite(want)
    e = np.abs(got[ok] - want[ok])
    return float(e.max()), float(e.mean())


def rounding_floor(want, name):
    """(max, mean) error of want rounded once to the dtype, plus slack."""
    ok = np.isfinite(want)
    w = want[ok]
    e = np.abs(w.astype(np_dtype(name)).astype(np.float64) - w)
    slack = 2.0 ** -20 * float(np.abs(w).max())
    return float(e.max()) + slack, float(e.mean()) * 1.02 + slack


def bound(key, want, name):
    """(max, mean) allowed: torch's error, or the rounding floor if larger."""
    t = TORCH_ERR[key]
    f = rounding_floor(want, name)
    return max(t[0], f[0]), max(t[1], f[1])


def check(got, want, key, name, rows=None, what=""):
    assert np.asarray(got).dtype == np_dtype(name), (what, np.asarray(got).dtype)
    w = want if rows is None else want[..., rows, :]
    err = errors(got, want, rows)
    lim = bound(key, w, name)
    assert err[0] <= lim[0] and err[1] <= lim[1], (what, key, err, lim)


def torch_key(case, name):
    return (TORCH_PROXY.get(case, case), name)


def kept_rows(kw):
    """The query rows with at least one visible key (all, unless "rows")."""
    m = kw.get("mask")
    if m is None:
        return None
    return m.any(axis=-1).all(axis=(0, 1))


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_attention(case, name):
    Q, K, V, _, kw = inputs(case, name)
    want = reference_out(Q, K, V, kw)
    check(attnpy.attention(Q, K, V, **kw), want, torch_key(case, name), name,
          rows=kept_rows(kw), what="attention")


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("case", ["plain", "mask", "causal"])
def test_scaled_dot_product_attention(case, name):
    """The output as attention's; the weights within their own rounding."""
    Q, K, V, _, kw = inputs(case, name)
    out, w = attnpy.scaled_dot_product_attention(Q, K, V, **kw)
    check(out, reference_out(Q, K, V, kw), torch_key(case, name), name, what="sdpa out")
    want_w = ref.scaled_dot_product_attention(*f64(Q, K, V), **wide(kw))[1]
    assert np.asarray(w).dtype == np_dtype(name)
    err = errors(w, want_w)
    lim = rounding_floor(want_w, name)
    assert err[0] <= lim[0] and err[1] <= lim[1], ("sdpa weights", err, lim)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("case", ["plain", "causal", "window"])
def test_explain(case, name):
    Q, K, V, _, kw = inputs(case, name)
    Q, K, V = Q[0, 0], K[0, 0], V[0, 0]     # explain: one head, (L, E)
    want = reference_out(Q, K, V, kw)
    check(attnpy.explain(Q, K, V, **kw).output, want, torch_key(case, name), name,
          what="explain")


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("policy", POLICIES)
def test_fully_masked_policies(policy, name):
    """Rows with a visible key: torch's bound; fully masked rows: exactly
    what the policy says (zero, NaN, or the mean of V within rounding)."""
    Q, K, V, _, kw = inputs("fully_masked", name)
    got = attnpy.attention(Q, K, V, fully_masked=policy, **kw)
    want = reference_out(Q, K, V, kw, policy)
    rows = kept_rows(kw)
    check(got, want, ("fully_masked", name), name, rows=rows, what=policy)
    dead = np.asarray(got)[..., ~rows, :].astype(np.float64)
    if policy == "zero":
        assert np.all(dead == 0)
    elif policy == "nan":
        assert np.all(np.isnan(dead))
    else:
        w = want[..., ~rows, :]
        err = errors(dead, w)
        lim = rounding_floor(w, name)
        assert err[0] <= lim[0] and err[1] <= lim[1], (err, lim)
    with pytest.raises(ValueError):
        attnpy.attention(Q, K, V, fully_masked="raise", **kw)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_attention_backward(case, name):
    """dQ, dK, dV in each input's dtype, each within torch's error."""
    Q, K, V, dout, kw = inputs(case, name)
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    assert np.asarray(lse).dtype == np.float32
    got = attnpy.attention_backward(dout, Q, K, V, out, lse, **kw)
    for g, w, gname in zip(got, reference_grads(Q, K, V, dout, kw), GRADS):
        check(g, w, (case, name, gname), name, what=gname)


@pytest.mark.parametrize("name", DTYPES)
def test_kv_cache_decode(name):
    """Token by token from a 16-bit KVCache: the causal case's bound."""
    Q, K, V, _, kw = inputs("causal", name)
    cache = attnpy.KVCache(B, H, max_len=L, head_dim=E, dtype=np_dtype(name))
    assert cache.dtype == np_dtype(name)
    rows = []
    for i in range(L):
        Kc, Vc = cache.append(K[:, :, i:i + 1], V[:, :, i:i + 1])
        assert Kc.dtype == np_dtype(name)
        rows.append(attnpy.attention(Q[:, :, i:i + 1], Kc, Vc, causal="bottom_right"))
    check(np.concatenate(rows, axis=2), reference_out(Q, K, V, kw), ("causal", name), name,
          what="KVCache decode")


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("case", ["plain", "causal", "long"])
def test_dask(case, name):
    """attnpy.dask with query and key chunks (partial results merged):
    the same bound as one call."""
    import dask.array as da  # the test extra has it
    import attnpy.dask as adask
    Q, K, V, _, kw = inputs(case, name)
    qc = Q.shape[2] // 2 if Q.shape[2] > 8 else Q.shape[2]
    dq, dk, dv = (da.from_array(Q, chunks=(1, 2, qc, E)),
                  da.from_array(K, chunks=(1, 2, K.shape[2] // 4, E)),
                  da.from_array(V, chunks=(1, 2, V.shape[2] // 4, E)))
    got = adask.attention(dq, dk, dv, **kw).compute(scheduler="sync")
    check(got, reference_out(Q, K, V, kw), torch_key(case, name), name, what="dask")


@pytest.mark.oracle
@pytest.mark.parametrize("name", DTYPES)
def test_torch_side_by_side(name):
    """Re-measure torch on the same inputs (the tool's code): attnpy is no
    worse than torch today, and TORCH_ERR still holds torch's figures."""
    import torch  # noqa: F401 (the oracle extra has it; the tool uses it)
    tool = importlib.import_module("tools.measure_16bit_errors")
    for row in tool.measure(name):
        if row["torch"] is None:
            continue
        key = (row["case"], name) if row["grad"] is None else (row["case"], name, row["grad"])
        assert np.allclose(TORCH_ERR[key], row["torch"], rtol=0.05, atol=0), (key, row)
        t, a, f = row["torch"], row["attnpy"], row["floor"]
        assert a[0] <= max(t[0], f[0]) and a[1] <= max(t[1], f[1]), row

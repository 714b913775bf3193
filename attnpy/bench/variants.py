"""The ``variants`` part of ``python -m attnpy bench``: the attention
variants (sliding window, grouped-query heads, ALiBi, soft-capping),
forward, medians of interleaved samples.

- window: a causal sliding window of W = 256 keys over L = S = 8192,
  against a causal call of 2W = 512 tokens, per query (the target:
  a query of the window costs at most 2x a query of the 512-token call,
  whose queries see 256 keys on average: the window must skip the blocks
  it excludes); the full causal 8192 call for scale;
- gqa, alibi, softcap: attnpy with the keyword against torch's SDPA given
  the equivalent (enable_gqa=True; an explicit (H, L, S) float bias for
  ALiBi and the causal mask; an explicit score function for soft-capping,
  which torch's SDPA lacks), and against attnpy given the same explicit
  bias / repeated heads. Each row checks attnpy against torch first.
"""
import numpy as np

import attnpy

from .report import _p
from .timing import Contender, _estimate, time_interleaved

WINDOW = dict(H=4, L=8192, W=256, E=64)
SHAPE = (1, 16, 2048, 64)          # B, Hq, L = S, E (float32, causal)
GROUP = 4                          # GQA: Hq / Hkv
SOFTCAP = 30.0


def _alibi(H):
    """The ALiBi paper's slopes for H heads (a power of two): 2^(-8h/H)."""
    return 2.0 ** (-8.0 * np.arange(1, H + 1) / H)


def _explicit_bias(H, L, slopes):
    """ALiBi and the causal mask as one (H, L, L) float bias."""
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    b = -slopes[:, None, None] * np.abs(i - j)
    return np.where(j <= i, b, -np.inf).astype(np.float32)


def window_row(cfg, repeat):
    """Per-query cost of the sliding window vs a 512-token causal call."""
    H, L, W, E = WINDOW["H"], WINDOW["L"], WINDOW["W"], WINDOW["E"]
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((1, H, L, E), dtype=np.float32)
               for _ in range(3))
    q2, k2, v2 = (x[:, :, :2 * W] for x in (Q, K, V))
    q2, k2, v2 = (np.ascontiguousarray(x) for x in (q2, k2, v2))
    kw = dict(causal=True, window=(W - 1, 0))
    # correctness: the last rows against the same rows given an explicit
    # window mask (the keys the window keeps, and only those)
    rows = slice(L - 64, L)
    got = attnpy.attention(Q, K, V, **kw)[:, :, rows]
    keep = np.arange(L)[None, :] >= np.arange(L - 64, L)[:, None] - (W - 1)
    keep &= np.arange(L)[None, :] <= np.arange(L - 64, L)[:, None]
    want = attnpy.attention(Q[:, :, rows], K, V, mask=keep)
    err = float(np.abs(got - want).max())
    cs = [Contender("window", lambda: attnpy.attention(Q, K, V, **kw)),
          Contender("causal512", lambda: attnpy.attention(q2, k2, v2,
                                                          causal=True)),
          Contender("causal8192", lambda: attnpy.attention(Q, K, V,
                                                           causal=True))]
    t = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg, repeat)
    per_q = {k: v["median_s"] / (L if k != "causal512" else 2 * W)
             for k, v in t.items()}
    ratio = per_q["window"] / per_q["causal512"]
    _p("  window %d over L=S=%d (1,%d,%d,%d) float32 causal: %.1f ms; "
       "causal %d: %.2f ms; causal %d: %.1f ms"
       % (W, L, H, L, E, t["window"]["median_s"] * 1e3, 2 * W,
          t["causal512"]["median_s"] * 1e3, L,
          t["causal8192"]["median_s"] * 1e3))
    _p("    per query: window %.2f us, causal %d %.2f us -> %.2fx (target "
       "<= 2x); full causal %d / window %.1fx; max err vs mask %.1e"
       % (per_q["window"] * 1e6, 2 * W, per_q["causal512"] * 1e6, ratio, L,
          t["causal8192"]["median_s"] / t["window"]["median_s"], err))
    return {"shape": [1, H, L, E], "window": W, "results": t,
            "per_query_s": per_q, "window_vs_causal512_per_query": ratio,
            "max_err_vs_mask": err}


def _torch_softcap(torch, tq, tk, tv, cap):
    """torch: the explicit score function (SDPA has no soft-cap)."""
    s = tq @ tk.transpose(-1, -2) * (tq.shape[-1] ** -0.5)
    s = cap * torch.tanh(s / cap)
    L = s.shape[-1]
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    return torch.softmax(s.masked_fill(~causal, -float("inf")), -1) @ tv


def variant_cases(torch, F, shape=SHAPE):
    """{row: (attnpy fn, {contender: fn}, torch fn or None)} for gqa, alibi,
    softcap, on float32 inputs of `shape`, causal."""
    B, H, L, E = shape
    rng = np.random.default_rng(1)
    Q = rng.standard_normal(shape, dtype=np.float32)
    K, V = (rng.standard_normal((B, H // GROUP, L, E), dtype=np.float32)
            for _ in range(2))
    Kf, Vf = (np.ascontiguousarray(np.repeat(x, GROUP, axis=1))
              for x in (K, V))
    slopes = _alibi(H).astype(np.float32)
    bias = _explicit_bias(H, L, slopes)
    rows = {
        "gqa": (lambda: attnpy.attention(Q, K, V, causal=True,
                                         enable_gqa=True),
                {"attnpy repeated K/V": lambda: attnpy.attention(
                    Q, Kf, Vf, causal=True)}),
        "alibi": (lambda: attnpy.attention(Q, Kf, Vf, causal=True,
                                           alibi_slopes=slopes),
                  {"attnpy explicit bias": lambda: attnpy.attention(
                      Q, Kf, Vf, bias=bias)}),
        "softcap": (lambda: attnpy.attention(Q, Kf, Vf, causal=True,
                                             softcap=SOFTCAP), {}),
    }
    tor = {}
    if torch is not None:
        tq, tk, tv, tkf, tvf = (torch.from_numpy(x)
                                for x in (Q, K, V, Kf, Vf))
        tb = torch.from_numpy(bias)
        tor = {"gqa": lambda: F.scaled_dot_product_attention(
                   tq, tk, tv, is_causal=True, enable_gqa=True),
               "alibi": lambda: F.scaled_dot_product_attention(
                   tq, tkf, tvf, attn_mask=tb),
               "softcap": lambda: _torch_softcap(torch, tq, tkf, tvf,
                                                 SOFTCAP)}
    return {k: (a, others, tor.get(k)) for k, (a, others) in rows.items()}


def bench_variants(env, cfg, repeat, shape=SHAPE, window=True):
    _p("")
    _p("attention variants, %d threads, float32, medians of interleaved "
       "samples" % env.threads)
    out = {}
    if window:
        out["window"] = window_row(cfg, repeat)
    res = {}
    for name, (fn, others, tfn) in variant_cases(env.torch, env.F,
                                                  shape).items():
        cs = [Contender("attnpy", fn)]
        cs += [Contender(k, f) for k, f in others.items()]
        err = None
        if tfn is not None:
            ref = np.asarray(tfn())
            err = float(np.abs(fn() - ref).max() / np.abs(ref).max())
            cs.append(Contender("torch", tfn))
        t = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg,
                             repeat)
        a = t["attnpy"]["median_s"]
        res[name] = {"results": t, "max_rel_err_vs_torch": err,
                     "vs_attnpy": {k: v["median_s"] / a for k, v in t.items()}}
        _p("  %-8s %s causal: attnpy %.2f ms; " % (name, tuple(shape), a * 1e3)
           + "; ".join("%s %.2f ms (%.2fx)" % (k, v["median_s"] * 1e3,
                                                v["median_s"] / a)
                       for k, v in t.items() if k != "attnpy")
           + ("; rel err vs torch %.1e" % err if err is not None else ""))
    out["rows"] = res
    return out

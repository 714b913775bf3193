"""The bits battery: a fixed set of calls of attnpy's public functions
(and of every activation of the C core's list, through attnpy._core, the
call its public function makes), each result reduced to a SHA-256 digest
of its bytes.

Every result of attnpy's own kernels is the same bits on every
instruction set, operating system and thread count (docs/guide/bits.md).
tools/make_bit_digests.py runs this battery once on the "portable" set
with one thread and stores the digests in tests/data/bits_digests.json;
tests/attention/test_bits_battery.py recomputes them on every set this
machine runs, at 1 to 4 threads, and tools/test_wheel.sh on AArch64
(NEON) under qemu. A deliberate change of the numbers: rerun the script,
and its diff names the cases that changed.

Inputs come from NumPy's PCG64 bit stream through ``Generator.random``
(integer arithmetic: the same numbers on every platform), with full
mantissas, so that a multiply-then-add where a fused multiply-add
belongs, or another summation order, changes the digests. NaNs are
canonicalised before hashing: the hardware's NaN sign and payload differ
between x86 and ARM, NumPy cannot tell them apart, and the promise is
about numbers.

Not in the battery: the matrix products attnpy leaves to NumPy's BLAS
(MultiHeadAttention's and TransformerEncoderLayer's projections,
feed_forward), whose bits are the BLAS library's.
"""
import hashlib

import numpy as np

import attnpy

try:  # bfloat16 (a test dependency; the wheel test under qemu has it too)
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - the battery then says so
    BF16 = None

F64, F32, F16 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16)
DTYPES = {"f64": F64, "f32": F32, "f16": F16, "bf16": BF16}


def rand(seed, shape, dtype, scale=1.0):
    """Uniform in [-scale, scale), full mantissas, from the seed alone."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == F64:
        x = rng.random(shape) * 2 - 1
    else:
        x = (rng.random(shape, dtype=np.float32) * np.float32(2)
             - np.float32(1))
    return (x * scale).astype(dt)


def digest(*arrays):
    """SHA-256 of the arrays' dtypes, shapes and bytes, NaNs made one."""
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"None")
            continue
        a = np.ascontiguousarray(a)
        if a.dtype.kind in "fV" and a.size:
            a = a.copy()
            a[np.isnan(a)] = np.nan
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


# ---------------------------------------------------------------------------
# the cases: name -> (function of no argument returning arrays, amx_own)
# amx_own: the opt-in "amx" set has its own bits there (AMX tiles: the
# scores of bfloat16 Q and K with E a multiple of 32, and P V of bfloat16
# V with Ev a multiple of 16, both at most 256); every other case is
# amx's too
# ---------------------------------------------------------------------------
CASES = {}


def case(name, amx_own=False):
    def put(fn):
        assert name not in CASES, name
        CASES[name] = (fn, amx_own)
        return fn
    return put


def _qkv(seed, lead, L, S, E, Ev, dt, kv_lead=None, scale=1.5):
    kv_lead = lead if kv_lead is None else kv_lead
    return (rand(seed, lead + (L, E), dt, scale),
            rand(seed + 1, kv_lead + (S, E), dt, scale),
            rand(seed + 2, kv_lead + (S, Ev), dt))


# attention forward: shapes x dtypes x options
_SHAPES = [  # (lead, L, S, E, Ev)
    ((2, 3), 7, 13, 16, 16), ((1, 2), 1, 257, 64, 64), ((1,), 101, 101, 80, 80),
    ((2,), 13, 7, 3, 5), ((1,), 5, 3, 1, 2), ((1, 1), 4, 3000, 32, 32),
    ((3,), 64, 200, 257, 17), ((1, 2), 130, 130, 64, 64)]
_OPTIONS = {
    "plain": {}, "causal": {"causal": True},
    "bottom_right": {"causal": "bottom_right"},
    "window": {"window": (5, 2)}, "causal_window": {"causal": True,
                                                   "window": (9, 0)},
    "softcap": {"softcap": 3.0}, "scale": {"scale": 0.37}}


def _attention_case(si, opt, dtn):
    lead, L, S, E, Ev = _SHAPES[si]
    dt = DTYPES[dtn]
    kw = _OPTIONS[opt]
    if opt in ("window", "causal_window") and L * S > 50000:
        return
    amx = dtn == "bf16" and ((E % 32 == 0 and E <= 256)
                             or (Ev % 16 == 0 and Ev <= 256))

    @case(f"attention/{opt}/{dtn}/{lead}x{L}x{S}x{E}x{Ev}", amx)
    def _():
        Q, K, V = _qkv(10 * si, lead, L, S, E, Ev, dt)
        out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
        return out, lse


for _si in range(len(_SHAPES)):
    for _opt in _OPTIONS:
        for _dtn in ("f64", "f32", "f16", "bf16"):
            if _dtn in ("f16", "bf16") and _opt not in ("plain", "causal"):
                continue
            _attention_case(_si, _opt, _dtn)


def _masks_case(dtn):
    dt = DTYPES[dtn]
    amx = dtn == "bf16"

    @case(f"sdpa/mask_bias_alibi/{dtn}", amx)
    def _():
        Q, K, V = _qkv(300, (2, 4), 9, 33, 32, 24, dt)
        keep = rand(301, (2, 1, 9, 33), F64) > -0.4
        keep[..., 3, :] = False  # a fully masked row
        bias = rand(302, (9, 33), dt, 2.0)
        slopes = np.linspace(0.05, 0.6, 4)
        out = []
        for policy in ("zero", "uniform", "nan"):
            o, w = attnpy.scaled_dot_product_attention(
                Q, K, V, keep, bias=bias, alibi_slopes=slopes,
                fully_masked=policy)
            out += [o, w]
        return tuple(out)

    @case(f"sdpa/gqa_strided/{dtn}", amx)
    def _():
        Q = rand(310, (1, 6, 20, 32), dt)
        K = rand(311, (1, 2, 32, 20), dt).swapaxes(-1, -2)  # transposed
        V = rand(312, (1, 2, 40, 16), dt)[:, :, ::2]         # strided
        o, w = attnpy.scaled_dot_product_attention(Q, K, V, enable_gqa=True,
                                                   causal=True)
        return o, w


for _dtn in ("f64", "f32", "f16", "bf16"):
    _masks_case(_dtn)


@case("explain/f64")
def _():
    X = rand(320, (5, 4), F64)
    t = attnpy.explain(X, X, X, causal=True)
    return t.scores, t.weights, t.output


def _backward_case(dtn, opt):
    dt = DTYPES[dtn]
    kw = {"plain": {}, "causal": {"causal": True},
          "softcap_alibi": {"softcap": 4.0,
                            "alibi_slopes": np.array([0.1, 0.3])},
          "bias": {"bias": None}}[opt]
    amx = dtn == "bf16"

    @case(f"attention_backward/{opt}/{dtn}", amx)
    def _():
        Q, K, V = _qkv(400, (2, 2), 37, 45, 32, 24, dt)
        kw2 = dict(kw)
        if "bias" in kw2:
            kw2["bias"] = rand(404, (37, 45), dt)
            kw2["bias_grad"] = True
        fwd = {k: v for k, v in kw2.items() if k != "bias_grad"}
        out, lse = attnpy.attention(Q, K, V, return_lse=True, **fwd)
        dout = rand(405, out.shape, dt)
        grads = attnpy.attention_backward(dout, Q, K, V, out, lse, **kw2)
        return (out, lse) + tuple(grads)


for _dtn in ("f64", "f32", "f16", "bf16"):
    for _opt in ("plain", "causal", "softcap_alibi", "bias"):
        _backward_case(_dtn, _opt)


@case("decode/kv_cache_equals_full/f32")
def _():
    Q, K, V = _qkv(420, (1, 2), 40, 40, 32, 32, F32)
    full = attnpy.attention(Q, K, V, causal=True)
    rows = [attnpy.attention(Q[..., t:t + 1, :], K[..., :t + 1, :],
                             V[..., :t + 1, :], causal="bottom_right")
            for t in range(40)]
    assert np.array_equal(np.concatenate(rows, axis=-2), full)
    return full


def _kvcache_case(dtn):
    # decoding from a 16-bit (or float) cache, one token at a time, with
    # grouped-query heads: the cache's views are read in place
    @case(f"decode/kvcache_gqa/{dtn}", dtn == "bf16")
    def _():
        dt = DTYPES[dtn]
        cache = attnpy.KVCache(1, 2, max_len=64, head_dim=32, dtype=dt)
        K, V = cache.append(rand(440, (1, 2, 20, 32), dt),
                            rand(441, (1, 2, 20, 32), dt))
        outs = []
        for t in range(3):
            q = rand(442 + t, (1, 6, 1, 32), dt, 1.5)
            outs.append(attnpy.attention(q, K, V, enable_gqa=True))
            K, V = cache.append(rand(450 + t, (1, 2, 1, 32), dt),
                                rand(460 + t, (1, 2, 1, 32), dt))
        return tuple(outs)


for _dtn in ("f64", "f32", "f16", "bf16"):
    _kvcache_case(_dtn)


@case("combine_heads/f32")
def _():
    x = rand(470, (2, 4, 9, 8), F32)
    return (attnpy.combine_heads(x),
            attnpy.combine_heads(x.transpose(0, 1, 3, 2)[..., ::2, :]))


def _merge_case(dtn):
    @case(f"merge_attention/{dtn}")
    def _():
        dt = DTYPES[dtn]
        Q, K, V = _qkv(430, (2,), 6, 50, 16, 16, dt)
        parts = [attnpy.attention(Q, K[:, a:b], V[:, a:b], return_lse=True)
                 for a, b in ((0, 17), (17, 30), (30, 50))]
        return attnpy.merge_attention([p[0] for p in parts],
                                      [p[1] for p in parts])


for _dtn in ("f64", "f32", "f16", "bf16"):
    _merge_case(_dtn)


def _rows_cases(dtn):
    dt = DTYPES[dtn]
    n16 = dtn in ("f16", "bf16")

    @case(f"softmax/{dtn}")
    def _():
        x = rand(500, (7, 33), dt, 20.0)
        x[2, 5] = -np.inf
        y = attnpy.softmax(x)
        yt = attnpy.softmax(rand(501, (40, 3), dt, 5.0), axis=0)
        return y, yt, attnpy.softmax_backward(rand(502, (7, 33), dt), y)

    if not n16:
        @case(f"softmax_jacobian/{dtn}")
        def _():
            return attnpy.softmax_jacobian(attnpy.softmax(rand(503, (3, 9),
                                                               dt, 4.0)))

    @case(f"layer_norm/{dtn}")
    def _():
        x = rand(510, (5, 3, 77), dt, 3.0)
        w, b = rand(511, (77,), dt), rand(512, (77,), dt)
        dy = rand(513, x.shape, dt)
        out = [attnpy.layer_norm(x, weight=w, bias=b),
               attnpy.layer_norm(x, 1e-5, eps_in_sqrt=True)]
        out += list(attnpy.layer_norm_backward(dy, x, weight=w))
        out += list(attnpy.layer_norm_backward(dy, x, eps_in_sqrt=True))
        return tuple(out)

    @case(f"rms_norm/{dtn}")
    def _():
        x = rand(520, (6, 129), dt, 3.0)
        w = rand(521, (129,), dt)
        dy = rand(522, x.shape, dt)
        return (attnpy.rms_norm(x, weight=w),) + tuple(
            attnpy.rms_norm_backward(dy, x, weight=w))

    @case(f"activations/{dtn}")
    def _():
        x = rand(530, (4, 301), dt, 6.0)
        dy = rand(531, x.shape, dt)
        out = []
        for ap in ("none", "tanh"):
            out += [attnpy.gelu(x, approximate=ap),
                    attnpy.gelu_backward(dy, x, approximate=ap)]
        g, u = rand(532, (4, 301), dt, 8.0), rand(533, (4, 301), dt)
        out += [attnpy.silu(g), attnpy.swiglu(g, u)]
        out += list(attnpy.swiglu_backward(dy, g, u))
        return tuple(out)

    @case(f"rotary_embedding/{dtn}")
    def _():
        x = rand(540, (2, 3, 11, 64), dt)
        return (attnpy.rotary_embedding(x, offset=5),
                attnpy.rotary_embedding(x, offset=100000, base=500000.0,
                                        interleaved=True))


for _dtn in ("f64", "f32", "f16", "bf16"):
    _rows_cases(_dtn)


def _act_case(act, dtn):
    # every activation of the core's list (csrc/core/layer/acts.h), as
    # its public function calls it: a new one is here without a line
    @case(f"bias_act/{act}/{dtn}")
    def _():
        dt = DTYPES[dtn]
        x = rand(534, (3, 257), dt, 6.0)
        x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
        dy = rand(535, x.shape, dt)
        return (attnpy._core.bias_act(x, activation=act),
                attnpy._core.bias_act_backward(dy, x, activation=act)[0])


for _act in attnpy._core.activations():
    for _dtn in ("f64", "f32", "f16", "bf16"):
        _act_case(_act, _dtn)


def _posenc_case(dtn):
    @case(f"positional_encoding/{dtn}")
    def _():
        dt = DTYPES[dtn]
        pe = attnpy.positional_encoding(50, 63, dtype=dt)
        x = rand(550, (2, 9, 64), dt)
        attnpy.add_positional_encoding(x, offset=2 ** 31)
        y = rand(551, (2, 9, 64), dt)
        attnpy.add_positional_encoding(y, offset=3, base=2.0)
        return pe, x, y


for _dtn in ("f64", "f32"):
    _posenc_case(_dtn)


@case("quantized_matmul/q4_1_q8_0")
def _():
    rng = np.random.default_rng(560)
    x = rand(561, (3, 96), F32)
    out = []
    for q, nbytes in (("q4_1", 20), ("q8_0", 34)):
        d = (rand(562, (23, 3), F32, 0.02)).astype(np.float16)
        blocks = rng.integers(0, 256, (23, 3, nbytes), dtype=np.uint8)
        blocks[:, :, :2] = d.view(np.uint8).reshape(23, 3, 2)
        if q == "q4_1":
            m = rand(563, (23, 3), F32, 0.02).astype(np.float16)
            blocks[:, :, 2:4] = m.view(np.uint8).reshape(23, 3, 2)
        out.append(attnpy.quantized_matmul(x, blocks.reshape(23, -1), q))
    return tuple(out)


def run(names=None):
    """{name: digest} of the battery's cases (all, or those named)."""
    todo = CASES if names is None else {n: CASES[n] for n in names}
    return {name: digest(*_as_tuple(fn())) for name, (fn, _) in todo.items()}


def _as_tuple(r):
    return r if isinstance(r, tuple) else (r,)

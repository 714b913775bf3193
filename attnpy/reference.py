"""attnpy.reference -- a plain NumPy twin of every public attnpy function.

This module is the oracle of attnpy's tests and a page to read beside the C
core (csrc/core/). Every function here computes the same thing as the
attnpy function of the same name, in the most direct NumPy there is: no
tiling, no fusion, no cleverness. It is slow and it builds every L x S
matrix; that is the point.

Shape legend (the same as csrc/core/attn.h)::

    ...  leading ("batch") dimensions, broadcast by NumPy's rules
    L    query positions            S    key/value positions
    E    features of a query/key    Ev   features of a value

The attention rule every entry point shares, for query row i and key j::

    allowed(i, j) = (mask[i, j] != 0) and causal(i, j)
    s(i, j)       = scale * (Q_i . K_j) + bias[i, j]   if allowed(i, j)
                  = -inf                               otherwise
    weights[i, :] = exp(s(i, :) - max_j s(i, j)) / sum_j exp(s(i, j) - max)
    out[i, :]     = sum over j with weights[i, j] != 0 of weights[i, j] * V_j

(A key with weight 0 -- masked, or its exp underflowed -- contributes
nothing, not even the NaN of 0 * inf: garbage in the value rows of padding
never reaches a query that cannot see them.)

A row whose every s(i, j) is -inf is FULLY MASKED (S == 0 included). Its
exp(s - max) would be exp(-inf + inf) = NaN, so it gets the policy chosen by
``fully_masked`` instead ("zero", "uniform", "nan" or "raise").

dtypes: float32 and float64 are computed in that precision. Everything else
is converted first: float16 -> float32, bool and integers -> float64,
long double -> float64. Complex, object, string, bytes, datetime, timedelta
and void arrays raise TypeError.

The second half of the module holds the tutorials' own code, written out
again as ``tutorial_*`` functions (same formulas, e.g. the ``-1e9`` fill of
masked scores), so the tests can show that attnpy gives the tutorials'
numbers.
"""
import math

import numpy as np

__all__ = [
    "softmax", "softmax_backward", "softmax_jacobian",
    "scaled_dot_product_attention", "attention", "attention_backward",
    "create_causal_mask", "causal_mask", "padding_mask",
    "positional_encoding", "add_positional_encoding",
    "rotary_embedding", "merge_attention",
    "split_heads", "combine_heads", "MultiHeadAttention",
    "compute_dtype",
    "layer_norm", "layer_norm_backward", "gelu", "gelu_backward",
    "feed_forward", "feed_forward_backward", "transformer_encoder_layer",
    "tutorial_softmax", "tutorial_scaled_dot_product_attention",
    "tutorial_create_causal_mask", "tutorial_positional_encoding",
    "tutorial_split_heads", "tutorial_combine_heads",
    "tutorial_multi_head_attention", "tutorial_init_weights",
    "tutorial_layer_norm", "tutorial_feed_forward",
    "tutorial_encoder_layer",
]

FULLY_MASKED_POLICIES = ("zero", "uniform", "nan", "raise")


# ---------------------------------------------------------------------------
# dtype rules
# ---------------------------------------------------------------------------

def _check_real(name, dtype):
    """TypeError unless `dtype` is bool, an integer or a real float."""
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} has dtype {dtype}; attnpy needs real numbers "
                        "(bool, integer or float)")


def compute_dtype(*arrays):
    """The dtype attnpy computes in for these inputs.

    np.result_type of the inputs, then mapped:
    float32 -> float32, float64 -> float64, float16 -> float32,
    bool / int / uint -> float64, long double -> float64.
    Complex, object, str, bytes, datetime, timedelta, void -> TypeError.

    >>> compute_dtype(np.zeros(2, np.float16), np.zeros(2, np.int8))
    dtype('float32')
    >>> compute_dtype(np.zeros(2, np.float32), np.zeros(2, np.int64))
    dtype('float64')
    """
    for a in arrays:
        _check_real("input", np.asarray(a).dtype)
    dt = np.result_type(*arrays)
    if dt == np.float32 or dt == np.float16:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _as_compute(a, dtype):
    """`a` as an array of the compute dtype (a copy only when needed)."""
    return np.asarray(a).astype(dtype, copy=False)


def _quiet():
    """NaN and inf propagate silently (NumPy would warn, not fail)."""
    return np.errstate(invalid="ignore", divide="ignore", over="ignore")


def _store(result, out, func, argname):
    """Return `result`, or copy it into the caller's `out` and return `out`.

    `out` must have exactly the result's shape and dtype; any strides.
    """
    if out is None:
        return result
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{func}: {argname} must be a numpy array")
    if out.shape != result.shape:
        raise ValueError(f"{func}: {argname} has shape {out.shape} but the "
                         f"result has shape {result.shape}")
    if out.dtype != result.dtype:
        raise TypeError(f"{func}: {argname} has dtype {out.dtype} but the "
                        f"result has dtype {result.dtype}")
    out[...] = result
    return out


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------

def softmax(x, axis=-1, *, out=None):
    """softmax(x)_j = exp(x_j - max(x)) / sum_k exp(x_k - max(x)) along `axis`.

    Exactly NumPy's arithmetic, NaN and inf included: a row holding a NaN
    or a +inf, or a row that is all -inf, comes out all NaN.
    float16 -> float32, bool/int -> float64. `out` may be `x` (in place).

    >>> softmax(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    """
    x = np.asarray(x)
    dtype = compute_dtype(x)
    x = _as_compute(x, dtype)
    if x.ndim == 0:
        raise ValueError("softmax: x must have at least one dimension")
    if x.shape[axis] == 0:                     # nothing to normalise
        return _store(x.copy(), out, "softmax", "out")
    # -inf - (-inf) and inf - inf are NaN, as in NumPy; do not warn about it.
    with _quiet():
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        result = e / np.sum(e, axis=axis, keepdims=True)
    return _store(result, out, "softmax", "out")


def _same_shape(dy, y, func):
    if dy.shape != y.shape:
        raise ValueError(f"{func}: dy and y must have the same shape "
                         f"(dy.shape={dy.shape}, y.shape={y.shape})")


def softmax_backward(dy, y, axis=-1, *, out=None):
    """dx = y * (dy - sum(dy * y, axis)): the gradient through y = softmax(x).

    The sum in float64, then rounded to the compute dtype; ``dy - sum``
    before the product with y.

    >>> y = softmax(np.array([0.0, np.log(3.0)]))
    >>> softmax_backward(np.array([1.0, 0.0]), y)   # d y_0 / d x
    array([ 0.1875, -0.1875])
    """
    dy, y = np.asarray(dy), np.asarray(y)
    _same_shape(dy, y, "softmax_backward")
    dtype = compute_dtype(dy, y)
    dy, y = _as_compute(dy, dtype), _as_compute(y, dtype)
    with _quiet():
        s = np.sum(dy.astype(np.float64) * y, axis=axis, keepdims=True)
        result = y * (dy - s.astype(dtype))
    return _store(result, out, "softmax_backward", "out")


def softmax_jacobian(y, axis=-1):
    """J[..., i, j] = y_i * ([i == j] - y_j) = diag(y) - y y^T per slice.

    The slices along `axis` become the last two dims: shape ``y.shape``
    without `axis`, then (n, n).

    >>> softmax_jacobian(np.array([0.25, 0.75]))
    array([[ 0.1875, -0.1875],
           [-0.1875,  0.1875]])
    """
    y = np.asarray(y)
    y = _as_compute(y, compute_dtype(y))
    y = np.moveaxis(y, axis, -1)
    eye = np.eye(y.shape[-1], dtype=y.dtype)
    with _quiet():
        return y[..., :, None] * (eye - y[..., None, :])


# ---------------------------------------------------------------------------
# masks
# ---------------------------------------------------------------------------

def create_causal_mask(seq_len):
    """The tutorial's causal mask: np.tril(np.ones((seq_len, seq_len))).

    float64, 1.0 where query i may see key j (j <= i), else 0.0.

    >>> create_causal_mask(3)
    array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]])
    """
    return np.tril(np.ones((seq_len, seq_len)))


def causal_mask(L, S=None, *, align="top_left"):
    """Boolean (L, S) mask, True where query i may see key j.

    align="top_left":      j <= i              (np.tril(np.ones((L, S))))
    align="bottom_right":  j <= i + S - L      (the last query sees every key,
                                                as in KV-cache decoding)

    >>> causal_mask(2, 3, align="bottom_right").astype(int)
    array([[1, 1, 0],
           [1, 1, 1]])
    """
    if S is None:
        S = L
    i = np.arange(L)[:, None]          # query index, a column
    j = np.arange(S)[None, :]          # key index, a row
    if align == "top_left":
        return j <= i
    if align == "bottom_right":
        return j <= i + (S - L)
    raise ValueError(f"causal_mask: align must be 'top_left' or "
                     f"'bottom_right', not {align!r}")


def padding_mask(lengths, S):
    """Boolean (B, 1, 1, S) mask, True where key j < lengths[b].

    Broadcasts against (B, H, L, S) scores: item b may attend to its first
    lengths[b] keys only.

    >>> padding_mask([1, 3], 3)[:, 0, 0, :]
    array([[ True, False, False],
           [ True,  True,  True]])
    """
    lengths = np.asarray(lengths)
    if lengths.size and (lengths.min() < 0 or lengths.max() > S):
        raise ValueError(f"padding_mask: lengths must be between 0 and "
                         f"S={S}, got {lengths.tolist()}")
    j = np.arange(S)
    keep = j[None, :] < lengths.reshape(-1)[:, None]      # (B, S)
    return keep[:, None, None, :]


def _causal_mode(causal):
    """None, "top_left" or "bottom_right" from a causal argument."""
    if isinstance(causal, (bool, np.bool_)) or causal is None:
        return "top_left" if causal else None         # True means top_left
    if not isinstance(causal, str):
        raise TypeError("causal must be False, True, 'top_left' or "
                        f"'bottom_right', not {causal!r}")
    if causal not in ("top_left", "bottom_right"):
        raise ValueError("causal must be False, True, 'top_left' or "
                         f"'bottom_right', not {causal!r}")
    return causal


def _positions(L, S, causal, pos_shift=0):
    """(i', j): the key position of each query row, a column (L, 1), and
    the key positions, a row (1, S). i' = i + pos_shift, plus S - L when
    causal="bottom_right"."""
    shift = pos_shift + (S - L if _causal_mode(causal) == "bottom_right"
                         else 0)
    return np.arange(L)[:, None] + shift, np.arange(S)[None, :]


def _allowed(L, S, mask, causal, window=None, pos_shift=0):
    """Boolean array broadcastable to (..., L, S): may query i see key j?

    mask != 0, causal (j <= i'), and the window i' - left <= j <= i' + right
    (a None side is unbounded)."""
    allowed = np.ones((L, S), dtype=bool)
    if mask is not None:
        allowed = allowed & (mask != 0)
    ip, j = _positions(L, S, causal, pos_shift)
    if _causal_mode(causal) is not None:
        allowed = allowed & (j <= ip)
    if window is not None:
        left, right = window
        if left is not None:
            allowed = allowed & (j >= ip - left)
        if right is not None:
            allowed = allowed & (j <= ip + right)
    return allowed


def _check_variants(func, window, alibi_slopes, softcap):
    """The variant arguments, checked: (window, slopes array or None,
    softcap or None)."""
    if window is not None:
        if not isinstance(window, (tuple, list)) or len(window) != 2:
            raise TypeError(f"{func}: window must be None or a pair (left, "
                            f"right), not {window!r}")
        for w in window:
            if w is not None and (isinstance(w, (bool, np.bool_)) or
                                  not isinstance(w, (int, np.integer))
                                  or w < 0):
                raise ValueError(f"{func}: window sides must be None or "
                                 f"integers >= 0, not {window!r}")
        window = tuple(None if w is None else int(w) for w in window)
    if alibi_slopes is not None:
        alibi_slopes = np.asarray(alibi_slopes)
        _check_real("alibi_slopes", alibi_slopes.dtype)
        if alibi_slopes.ndim < 1:
            raise ValueError(f"{func}: alibi_slopes must have a head axis "
                             "(H,) or (B, H)")
    if softcap is not None:
        softcap = float(softcap)
        if not (math.isfinite(softcap) and softcap > 0):
            raise ValueError(f"{func}: softcap must be a finite number > 0, "
                             f"not {softcap}")
    return window, alibi_slopes, softcap


def _gqa_repeat(func, Q, K, V):
    """enable_gqa: K and V with each of their Hkv heads repeated for the
    Hq // Hkv query heads that read it (query head h reads K/V head
    h // (Hq // Hkv)), so that plain broadcasting applies."""
    if Q.ndim < 3 or K.ndim < 3 or V.ndim < 3:
        raise ValueError(f"{func}: enable_gqa needs a head axis: Q (..., Hq, "
                         "L, E), K and V (..., Hkv, S, E)")
    Hq, Hkv = Q.shape[-3], K.shape[-3]
    if V.shape[-3] != Hkv:
        raise ValueError(f"{func}: K has {Hkv} heads but V has "
                         f"{V.shape[-3]}")
    if Hkv == 0 or Hq % Hkv:
        raise ValueError(f"{func}: enable_gqa: Q's {Hq} heads are not a "
                         f"multiple of K's {Hkv}")
    g = Hq // Hkv
    return np.repeat(K, g, axis=-3), np.repeat(V, g, axis=-3), g


# ---------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------

def _leading(a):
    """The leading (batch) dims of an array used as (..., rows, cols)."""
    return a.shape[:-2] if a.ndim >= 2 else ()


def _weighted_sum(weights, V):
    """out[..., i, :] = sum over j with weights[i, j] != 0 of
    weights[i, j] * V[j, :]: zero weights contribute nothing, even where V
    holds inf or NaN (where NumPy's matmul would give 0 * inf = NaN)."""
    finite = np.isfinite(V)
    output = np.matmul(weights, np.where(finite, V, 0))
    if not finite.all():
        # add the non-finite entries, only where their weight is nonzero
        w = weights[..., :, :, None]                  # (..., L, S, 1)
        v = V[..., None, :, :]                        # (..., 1, S, Ev)
        used = (w != 0) & ~np.isfinite(v)
        output = output + np.where(used, w * v, 0).sum(axis=-2)
    return output


def scaled_dot_product_attention(Q, K, V, mask=None, *, bias=None,
                                 causal=False, scale=None,
                                 fully_masked="zero", out=None,
                                 weights_out=None, enable_gqa=False,
                                 window=None, alibi_slopes=None,
                                 softcap=None, _pos_shift=0):
    """(output, weights) of scaled dot-product attention.

        weights = softmax(scale * Q K^T + bias, masked to -inf)   (..., L, S)
        output  = weights V                                       (..., L, Ev)

    Q (..., L, E), K (..., S, E), V (..., S, Ev); mask and bias broadcast
    to (..., L, S) and may add leading dims. scale defaults to 1/sqrt(E)
    (1.0 when E == 0). Fully masked rows follow `fully_masked`.

    The variants (DESIGN.md, "Decoding and variants"), with query row i at
    key position i' = i (+ S - L when causal="bottom_right"):

        enable_gqa    K, V (..., Hkv, S, E) serve Q (..., Hq, L, E): query
                      head h reads K/V head h // (Hq // Hkv)
        softcap       s = softcap * tanh(s / softcap), before the bias
        alibi_slopes  (..., H): s = s - slope * |i' - j|, after the bias
        window        (left, right): only keys i' - left <= j <= i' + right
                      (None = unbounded on that side)

    >>> Q = K = V = np.eye(2)
    >>> out, w = scaled_dot_product_attention(Q, K, V, causal=True)
    >>> w
    array([[1.        , 0.        ],
           [0.33023845, 0.66976155]])
    >>> scaled_dot_product_attention(Q, K, V, window=(0, 0))[1]
    array([[1., 0.],
           [0., 1.]])
    """
    func = "scaled_dot_product_attention"
    output, weights = _attention(Q, K, V, mask, bias, causal, scale,
                                 fully_masked, func,
                                 (enable_gqa, window, alibi_slopes, softcap,
                                  _pos_shift))
    output = _store(output, out, func, "out")
    weights = _store(weights, weights_out, func, "weights_out")
    return output, weights


def attention(Q, K, V, *, mask=None, bias=None, causal=False, scale=None,
              fully_masked="zero", out=None, return_lse=False,
              enable_gqa=False, window=None, alibi_slopes=None, softcap=None,
              _pos_shift=0):
    """The output of scaled_dot_product_attention, without the weights.

    (attnpy's version is fused and never builds the L x S matrix; the
    numbers are the same.) With return_lse, also (..., L) log-sum-exp of
    each row's scores: log(sum_j exp(s_ij)), -inf for a fully masked row
    whatever the policy. The variants are those of
    scaled_dot_product_attention.

    >>> Q = K = V = np.eye(3)[None]                # one head: (H, L, E)
    >>> attention(Q, K, V, softcap=0.5, alibi_slopes=[1.0])[0].round(3)
    array([[0.75 , 0.183, 0.067],
           [0.164, 0.672, 0.164],
           [0.067, 0.183, 0.75 ]])
    """
    var = (enable_gqa, window, alibi_slopes, softcap, _pos_shift)
    output, _ = _attention(Q, K, V, mask, bias, causal, scale, fully_masked,
                           "attention", var)
    output = _store(output, out, "attention", "out")
    if not return_lse:
        return output
    _, _, _, s, fully, _, _, _ = _scores(Q, K, V, mask, bias, causal, scale,
                                         "zero", "attention", var)
    with _quiet():
        m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
        m = np.where(fully[..., None], 0, m)
        lse = (m + np.log(np.sum(np.exp(s - m), axis=-1, keepdims=True)))
    return output, lse[..., 0].astype(output.dtype, copy=False)


def _attention(Q, K, V, mask, bias, causal, scale, fully_masked, func,
               var=(False, None, None, None, 0)):
    """The work of both entry points; `func` names the caller in errors."""
    Q, K, V, s, fully, batch, _, _ = _scores(Q, K, V, mask, bias, causal,
                                             scale, fully_masked, func, var)
    dtype, S, Ev = s.dtype, s.shape[-1], V.shape[-1]

    # 5. softmax of each row; fully masked rows come out NaN here and are
    #    replaced in step 6.
    V_b = np.broadcast_to(V, batch + (S, Ev))
    with _quiet():
        m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
        e = np.exp(s - m)
        weights = e / np.sum(e, axis=-1, keepdims=True)
        output = _weighted_sum(weights, V_b)
    return _policy(output, weights, fully, fully_masked, V_b, S, dtype)


def _inputs(Q, K, V, mask, bias, func, enable_gqa):
    """Step 1: Q, K, V (K, V repeated per query head under enable_gqa),
    mask and bias in the compute dtype, checked."""
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    dtype = compute_dtype(Q, K, V)
    Q, K, V = (_as_compute(a, dtype) for a in (Q, K, V))
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        raise ValueError(f"{func}: Q, K and V need at least 2 dimensions")
    if enable_gqa:
        K, V, _ = _gqa_repeat(func, Q, K, V)
    if K.shape[-1] != Q.shape[-1]:
        raise ValueError(f"{func}: K has {K.shape[-1]} features but Q has "
                         f"{Q.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"{func}: K has {K.shape[-2]} positions but V "
                         f"has {V.shape[-2]}")
    if mask is not None:
        mask = np.asarray(mask)
        _check_real("mask", mask.dtype)
        # a keep-mask has no negative entries: -inf there means an additive
        # mask, which belongs in bias
        if mask.dtype.kind in "if" and np.any(mask < 0):
            raise ValueError(f"{func}: mask holds negative values; an "
                             f"additive mask (0 = attend, -inf = blocked) "
                             f"goes in bias=")
    if bias is not None:
        bias = np.asarray(bias)
        _check_real("bias", bias.dtype)
        bias = _as_compute(bias, dtype)
    return Q, K, V, mask, bias, dtype


def _scores(Q, K, V, mask, bias, causal, scale, fully_masked, func,
            var=(False, None, None, None, 0)):
    """Steps 1-4 of attention: (Q, K, V in the compute dtype, the masked
    scores s (batch + (L, S)), the fully masked rows, batch, scale, the
    soft-capped scaled scores or None)."""
    if fully_masked not in FULLY_MASKED_POLICIES:
        raise ValueError(f"{func}: fully_masked must be one of "
                         f"{FULLY_MASKED_POLICIES}, not {fully_masked!r}")
    enable_gqa, window, slopes, softcap, pos_shift = var
    window, slopes, softcap = _check_variants(func, window, slopes, softcap)

    # 1. dtypes: compute in the mapped result type of Q, K, V.
    Q, K, V, mask, bias, dtype = _inputs(Q, K, V, mask, bias, func,
                                         enable_gqa)
    L, E = Q.shape[-2:]
    S = V.shape[-2]
    if slopes is not None:                  # (..., H) -> (..., H, 1, 1)
        slopes = _as_compute(slopes, dtype)[..., None, None]

    # 2. the broadcast batch shape "..." of everything.
    batch = np.broadcast_shapes(
        _leading(Q), _leading(K), _leading(V),
        _leading(mask) if mask is not None else (),
        _leading(bias) if bias is not None else (),
        _leading(slopes) if slopes is not None else ())

    if scale is None:
        scale = 1.0 / math.sqrt(E) if E > 0 else 1.0
    scale = dtype.type(scale)              # float32 stays float32

    # 3. scores s = scale * Q K^T, soft-capped, + bias, - ALiBi distance
    #    penalty, then -inf where not allowed.
    capped = None
    with _quiet():
        s = scale * np.matmul(Q, np.swapaxes(K, -1, -2))
        if softcap is not None:
            cap = dtype.type(softcap)
            s = capped = (cap * np.tanh(s / cap)).astype(dtype)
        if bias is not None:
            s = s + bias
        if slopes is not None:
            ip, j = _positions(L, S, causal, pos_shift)
            s = s - slopes * np.abs(ip - j).astype(dtype)
    allowed = _allowed(L, S, mask, causal, window, pos_shift)
    s = np.where(allowed, s, -np.inf).astype(dtype, copy=False)
    s = np.broadcast_to(s, batch + (L, S))

    # 4. fully masked rows: every score is -inf (S == 0 included).
    fully = np.all(s == -np.inf, axis=-1)                  # (..., L)

    if fully_masked == "raise" and fully.any():
        *index, i = np.argwhere(fully)[0]            # the first, in C order
        where = f" of batch index {tuple(int(n) for n in index)}" if index \
            else ""
        raise ValueError(f"{func}: query row {i}{where} may attend to no key "
                         "(fully_masked='raise')")
    return Q, K, V, s, fully, batch, scale, capped


def _policy(output, weights, fully, fully_masked, V_b, S, dtype):
    """6. the fully_masked policy on the rows that saw no key."""
    if fully.any():
        row = fully[..., None]                             # (..., L, 1)
        if fully_masked == "zero":
            weights = np.where(row, 0.0, weights)
            output = np.where(row, 0.0, output)
        elif fully_masked == "nan":
            weights = np.where(row, np.nan, weights)
            output = np.where(row, np.nan, output)
        elif fully_masked == "uniform":
            if S > 0:
                weights = np.where(row, 1.0 / S, weights)
                with _quiet():
                    mean_v = np.mean(V_b, axis=-2, keepdims=True)  # (..,1,Ev)
                output = np.where(row, mean_v, output)
            else:
                output = np.where(row, 0.0, output)
        weights = weights.astype(dtype, copy=False)
        output = output.astype(dtype, copy=False)

    return np.ascontiguousarray(output), np.ascontiguousarray(weights)


def _sum_to_shape(g, shape):
    """g summed over the dims broadcasting added to reach it from shape."""
    extra = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(extra))) if extra > 0 else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return (g.sum(axis=axes, keepdims=True) if axes else g).reshape(shape)


def attention_backward(dout, Q, K, V, out, lse, *, mask=None, bias=None,
                       causal=False, scale=None, fully_masked="zero",
                       bias_grad=False, dq=None, dk=None, dv=None,
                       enable_gqa=False, window=None, alibi_slopes=None,
                       softcap=None, _pos_shift=0):
    """Gradients of attention() with respect to Q, K, V (and bias).

    With s the masked scores and out, lse from the forward pass:

        P  = exp(s - lse)            (0 where s = -inf)       (..., L, S)
        dV = P^T dout
        dS = P * (dout V^T - D),     D = rowsum(dout * out)   (0 where P = 0)
        dQ = scale dS' K,   dK = scale dS'^T Q,   dbias = dS

    where dS' = dS, or dS * (1 - (c / softcap)^2) with c the soft-capped
    scaled score when softcap is given (d tanh = 1 - tanh^2). Rows with
    lse = -inf saw no key: "zero" adds nothing, "uniform" adds dout / S to
    every dV row, "nan" makes dQ's and dbias's row and all of dK and dV of
    that batch item NaN. Broadcast inputs get their gradients summed over
    the broadcast dims; with enable_gqa, dK and dV are summed over the
    query heads of each K/V head.
    """
    func = "attention_backward"
    Q0, K0, V0, bias0 = Q, K, V, bias
    Q, K, V, s, _, batch, scale, capped = _scores(
        Q, K, V, mask, bias, causal, scale, "zero", func,
        (enable_gqa, window, alibi_slopes, softcap, _pos_shift))
    dtype, S = s.dtype, s.shape[-1]
    dout, out, lse = (_as_compute(a, dtype) for a in (dout, out, lse))
    fully = lse == -np.inf                                 # (..., L)
    if fully_masked == "raise" and fully.any():
        *index, i = np.argwhere(fully)[0]
        raise ValueError(f"{func}: query row {i} of batch index "
                         f"{tuple(int(n) for n in index)} may attend to no "
                         "key (fully_masked='raise')")
    V_b = np.broadcast_to(V, batch + V.shape[-2:])
    with _quiet():
        P = np.where(s == -np.inf, 0, np.exp(s - np.where(
            fully, 0, lse)[..., None])).astype(dtype)
        D = np.sum(dout.astype(np.float64) * out, axis=-1).astype(dtype)
        dP = np.matmul(dout, np.swapaxes(V_b, -1, -2))
        dS = np.where(P == 0, 0, P * (dP - D[..., None])).astype(dtype)
        dV = _weighted_sum(np.swapaxes(P, -1, -2), dout)
        if fully_masked == "uniform" and S > 0:
            dV = dV + np.sum(np.where(fully[..., None], dout, 0), axis=-2,
                             keepdims=True) / S
        dSc = dS                    # the gradient of the capped scores
        if capped is not None:
            t = capped / dtype.type(float(softcap))       # tanh(s / softcap)
            dSc = (dS * (1 - t * t)).astype(dtype)
        dQ = scale * _weighted_sum(dSc,
                                   np.broadcast_to(K, batch + K.shape[-2:]))
        dK = scale * _weighted_sum(np.swapaxes(dSc, -1, -2),
                                   np.broadcast_to(Q, batch + Q.shape[-2:]))
    if fully_masked == "nan" and fully.any():
        nan_b = fully.any(axis=-1)[..., None, None]         # (..., 1, 1)
        dQ = np.where(fully[..., None], np.nan, dQ)
        dS = np.where(fully[..., None], np.nan, dS)
        dK, dV = np.where(nan_b, np.nan, dK), np.where(nan_b, np.nan, dV)
    dQ = _sum_to_shape(dQ.astype(dtype), np.shape(Q0))
    dK = _sum_to_shape(dK.astype(dtype), K.shape)          # K as repeated
    dV = _sum_to_shape(dV.astype(dtype), V.shape)
    if enable_gqa:              # each K/V head: the sum over its group
        g = K.shape[-3] // np.shape(K0)[-3]         # query heads per group
        dK, dV = (d.reshape(np.shape(x)[:-2] + (g,) + d.shape[-2:])
                  .sum(axis=-3) for d, x in ((dK, K0), (dV, V0)))
    grads = [_store(g.reshape(np.shape(x)), d, func, n)
             for g, x, d, n in ((dQ, Q0, dq, "dq"), (dK, K0, dk, "dk"),
                                (dV, V0, dv, "dv"))]
    if bias_grad:
        grads.append(_sum_to_shape(dS, np.shape(bias0)))
    return tuple(grads)


# ---------------------------------------------------------------------------
# positional encoding
# ---------------------------------------------------------------------------

def _pe_table(positions, d_model, base):
    """Sinusoidal encodings of the given positions, float64 (T, d_model).

        w_i          = exp(2i * -(log(base) / d_model))
        PE(p, 2i)    = sin(p * w_i)
        PE(p, 2i+1)  = cos(p * w_i)

    With an odd d_model the last column is a sine; the cosine columns use
    the first d_model // 2 frequencies.
    """
    position = np.asarray(positions, dtype=np.float64)[:, np.newaxis]
    if d_model == 0:
        return np.zeros((len(position), 0))
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(float(base)) / d_model))
    pe = np.zeros((len(position), d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term[: d_model // 2])
    return pe


def positional_encoding(max_len, d_model, *, base=10000.0, dtype=np.float64,
                        out=None):
    """(max_len, d_model) sinusoidal positional encodings.

    The tutorial's formula, computed in float64 and then cast to `dtype`.

    >>> positional_encoding(2, 4).round(4)
    array([[0.    , 1.    , 0.    , 1.    ],
           [0.8415, 0.5403, 0.01  , 1.    ]])
    """
    pe = _pe_table(np.arange(max_len), d_model, base).astype(dtype)
    return _store(pe, out, "positional_encoding", "out")


def add_positional_encoding(x, *, offset=0, base=10000.0):
    """x[..., t, :] += PE(t + offset) in place; returns x.

    x is (..., T, D), float32 or float64. The sum is formed in float64 and
    stored in x's dtype.
    """
    if not isinstance(x, np.ndarray) or x.dtype not in (np.float32,
                                                        np.float64):
        raise TypeError("add_positional_encoding: x must be a float32 or "
                        "float64 numpy array")
    if x.ndim < 2:
        raise ValueError("add_positional_encoding: x must be (..., T, D)")
    T, D = x.shape[-2:]
    pe = _pe_table(offset + np.arange(T), D, base)
    x[...] = x.astype(np.float64) + pe
    return x


# ---------------------------------------------------------------------------
# decoding: rotary positions, merging partial attention
# ---------------------------------------------------------------------------

def rotary_embedding(x, *, offset=0, base=10000.0, interleaved=False,
                     out=None):
    """Rotary position embedding (RoPE) of x, shape (..., T, E), E even.

    Feature pair i of position t is turned by the angle
    ``theta = (offset + t) * base**(-2i/E)``::

        (a, b) -> (a cos(theta) - b sin(theta), b cos(theta) + a sin(theta))

    The pairs are (x[..., i], x[..., i + E/2]) ("rotate half": GPT-NeoX,
    Llama) or, with ``interleaved=True``, (x[..., 2i], x[..., 2i+1])
    (GPT-J). Computed in float64 and rounded once to the compute dtype.

    >>> rotary_embedding(np.array([[1.0, 0.0], [1.0, 0.0]])).round(4)
    array([[1.    , 0.    ],
           [0.5403, 0.8415]])
    """
    x = np.asarray(x)
    dtype = compute_dtype(x)
    if x.ndim < 2:
        raise ValueError(f"rotary_embedding: x must be (..., T, E), got "
                         f"shape {x.shape}")
    T, E = x.shape[-2:]
    if E % 2:
        raise ValueError(f"rotary_embedding: x has {E} features (an odd "
                         f"number); RoPE turns pairs (x.shape={x.shape})")
    half = E // 2
    freq = float(base) ** (-np.arange(0, E, 2, dtype=np.float64) / E)
    theta = (offset + np.arange(T, dtype=np.float64))[:, None] * freq
    cos, sin = np.cos(theta), np.sin(theta)               # (T, E/2)
    x64 = x.astype(np.float64)
    pairs = (np.s_[..., 0::2], np.s_[..., 1::2]) if interleaved else \
        (np.s_[..., :half], np.s_[..., half:])
    a, b = x64[pairs[0]], x64[pairs[1]]
    y = np.empty(x.shape, np.float64)
    with _quiet():
        y[pairs[0]] = a * cos - b * sin
        y[pairs[1]] = b * cos + a * sin
    return _store(y.astype(dtype), out, "rotary_embedding", "out")


def merge_attention(outs, lses):
    """Merge partial attention results computed over disjoint key sets.

    ``outs[k]`` (..., L, Ev) is attention over the k-th set of keys and
    ``lses[k]`` (..., L) the log-sum-exp of the scores it saw (-inf where a
    row saw no key). Then, in float64, rounded to the compute dtype::

        lse = log(sum_k exp(lses[k]))
        out = sum_k exp(lses[k] - lse) * outs[k]

    is attention over all the keys. A partial of weight 0 contributes
    nothing (not even a NaN); a row whose every lse is -inf gets out 0 and
    lse -inf (fully_masked="zero"). Returns (out, lse).

    >>> out, lse = merge_attention([np.ones((1, 2)), np.zeros((1, 2))],
    ...                            [np.zeros(1), np.zeros(1)])
    >>> out, lse.round(4)
    (array([[0.5, 0.5]]), array([0.6931]))
    """
    outs = [np.asarray(o) for o in outs]
    lses = [np.asarray(x) for x in lses]
    if len(outs) != len(lses) or not outs:
        raise ValueError(f"merge_attention: need as many lses as outs, at "
                         f"least one (got {len(outs)} outs, {len(lses)} lses)")
    dtype = compute_dtype(*outs, *lses)
    o = np.stack(np.broadcast_arrays(*(a.astype(np.float64) for a in outs)))
    l = np.stack(np.broadcast_arrays(*(a.astype(np.float64) for a in lses)))
    with _quiet():                                        # l: (K, ..., L)
        M = np.max(l, axis=0)                             # NaN propagates
        Msafe = np.where(M == -np.inf, 0.0, M)
        e = np.exp(l - Msafe)
        total = np.sum(e, axis=0)
        lse = Msafe + np.log(total)                       # -inf: no key
        w = (e / total)[..., None]                        # (K, ..., L, 1)
        out = np.sum(np.where(w != 0, w * o, 0.0), axis=0)
    out = np.where((M == -np.inf)[..., None], 0.0, out)
    lse = np.broadcast_to(lse, out.shape[:-1])
    return out.astype(dtype), lse.astype(dtype)


# ---------------------------------------------------------------------------
# heads
# ---------------------------------------------------------------------------

def split_heads(x, num_heads):
    """(..., T, H*dk) -> (..., H, T, dk): head h gets columns h*dk:(h+1)*dk.

    >>> split_heads(np.arange(4).reshape(1, 4), 2)
    array([[[0, 1]],
    <BLANKLINE>
           [[2, 3]]])
    """
    x = np.asarray(x)
    *lead, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"split_heads: {D} features do not split into "
                         f"{num_heads} heads")
    dk = D // num_heads
    x = x.reshape(*lead, T, num_heads, dk)       # (..., T, H, dk)
    return np.swapaxes(x, -3, -2)                # (..., H, T, dk)


def combine_heads(x, *, out=None):
    """(..., H, T, dk) -> (..., T, H*dk), the inverse of split_heads."""
    x = np.asarray(x)
    *lead, H, T, dk = x.shape
    x = np.swapaxes(x, -3, -2)                   # (..., T, H, dk)
    # a fresh C-contiguous copy, in native byte order
    result = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("="))
    result = result.reshape(*lead, T, H * dk)
    return _store(result, out, "combine_heads", "out")


# ---------------------------------------------------------------------------
# multi-head attention
# ---------------------------------------------------------------------------

def _sum_to(g, shape):
    """g summed over the leading and size-1 dims broadcast to reach it."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True)


def _outer_sum(x, g):
    """sum over every leading dim and row of x^T g."""
    return np.matmul(x.reshape(-1, x.shape[-1]).T,
                     g.reshape(-1, g.shape[-1]))


class MultiHeadAttention:
    """Multi-head self/cross attention with the tutorial's weights.

    W_q, W_k, W_v, W_o are (d_model, d_model), drawn in that order as
    standard normals times sqrt(2 / d_model):

    * seed=None: from NumPy's global state (np.random.randn), so
      ``np.random.seed(0); MultiHeadAttention(8, 2)`` has the tutorial's
      weights;
    * seed=int: from np.random.default_rng(seed).standard_normal.
    """

    def __init__(self, d_model, num_heads, *, seed=None, dtype=np.float64):
        if d_model % num_heads != 0:
            raise ValueError("MultiHeadAttention: d_model must be divisible "
                             "by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.dtype = np.dtype(dtype)
        std = np.sqrt(2.0 / d_model)
        if seed is None:
            draw = lambda: np.random.randn(d_model, d_model)      # noqa: E731
        else:
            rng = np.random.default_rng(seed)
            draw = lambda: rng.standard_normal((d_model, d_model))  # noqa
        self.W_q = (draw() * std).astype(self.dtype)
        self.W_k = (draw() * std).astype(self.dtype)
        self.W_v = (draw() * std).astype(self.dtype)
        self.W_o = (draw() * std).astype(self.dtype)

    def split_heads(self, x):
        """(batch, seq, d_model) -> (batch, heads, seq, d_k)."""
        return split_heads(x, self.num_heads)

    def combine_heads(self, x):
        """(batch, heads, seq, d_k) -> (batch, seq, d_model)."""
        return combine_heads(x)

    def __call__(self, query, key=None, value=None, *, mask=None,
                 causal=False, need_weights=False):
        """Attention of `query` over `key`/`value` (default: query itself).

        Returns the output (batch, L, d_model), and the weights
        (batch, heads, L, S) too when need_weights is true.
        """
        key = query if key is None else key
        value = key if value is None else value
        Q = self.split_heads(np.matmul(query, self.W_q))
        K = self.split_heads(np.matmul(key, self.W_k))
        V = self.split_heads(np.matmul(value, self.W_v))
        heads, weights = scaled_dot_product_attention(
            Q, K, V, mask, causal=causal)
        output = np.matmul(self.combine_heads(heads), self.W_o)
        # everything backward needs, kept (this is the reference: memory
        # is no concern)
        self._saved = dict(
            xs=(query, key, value), QKV=(Q, K, V), P=weights, heads=heads,
            self_attn=key is query and value is query,
            W=(self.W_q, self.W_k, self.W_v, self.W_o))
        return (output, weights) if need_weights else output

    def backward(self, d_output):
        """Gradients of the last call: dX (self-attention) or (d_query,
        d_key, d_value); sets self.grads {"W_q", "W_k", "W_v", "W_o"}.

        The chain rule over the saved weights P (fully masked rows are 0)::

            dW_o = C^T dy         dO = split(dy W_o^T)
            dV = P^T dO           dP = dO V^T
            dS = softmax_backward(dP, P)
            dQ = scale dS K       dK = scale dS^T Q
            dW_q = x_q^T combine(dQ)      dx_q = combine(dQ) W_q^T  (k, v alike)
        """
        sv = getattr(self, "_saved", None)
        if sv is None:
            raise RuntimeError("MultiHeadAttention.backward: no forward call "
                               "to differentiate")
        (Q, K, V), P = sv["QKV"], sv["P"]
        W_q, W_k, W_v, W_o = sv["W"]
        dy = np.asarray(d_output)
        C = self.combine_heads(sv["heads"])
        grads = {"W_o": _outer_sum(C, dy)}
        dO = self.split_heads(np.matmul(dy, W_o.T))
        scale = 1.0 / math.sqrt(self.d_k)
        dS = softmax_backward(np.matmul(dO, np.swapaxes(V, -1, -2)), P)
        dQKV = (scale * np.matmul(dS, K),
                scale * np.matmul(np.swapaxes(dS, -1, -2), Q),
                np.matmul(np.swapaxes(P, -1, -2), dO))
        dxs = []
        for name, x, w, g, X in zip(("W_q", "W_k", "W_v"), sv["xs"],
                                    (W_q, W_k, W_v), dQKV, (Q, K, V)):
            g = self.combine_heads(_sum_to(g, X.shape))
            grads[name] = _outer_sum(np.asarray(x), g)
            dxs.append(np.matmul(g, w.T))
        self.grads = {n: grads[n].astype(self.dtype)
                      for n in ("W_q", "W_k", "W_v", "W_o")}
        return sum(dxs) if sv["self_attn"] else tuple(dxs)

    def forward(self, X, mask=None, *, causal=False):
        """Self-attention as in the tutorial: returns (output, weights)."""
        return self(X, mask=mask, causal=causal, need_weights=True)


# ---------------------------------------------------------------------------
# the transformer layer's pieces: layer norm, gelu, feed-forward network,
# their gradients, and the encoder layer
# ---------------------------------------------------------------------------

ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


def _erf(x):
    """erf element-wise (NumPy has none; math.erf is exact to ~1 ulp)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def layer_norm(x, eps=1e-6, *, weight=None, bias=None, eps_in_sqrt=False,
               out=None):
    """Layer normalisation over the last axis.

        mean = mean(x),  var = mean((x - mean)^2)     (per row)
        y    = (x - mean) / (sqrt(var) + eps)          the tutorial
             = (x - mean) / sqrt(var + eps)            eps_in_sqrt=True
        y    = y * weight + bias                       when given

    Computed in float64 (the compute dtype's result), then rounded.

    >>> layer_norm(np.array([1.0, 2.0, 3.0]), eps=0.0).round(4)
    array([-1.2247,  0.    ,  1.2247])
    """
    dtype = compute_dtype(*(a for a in (x, weight, bias) if a is not None))
    x64 = np.asarray(x, dtype=np.float64)
    n = x64.shape[-1]
    with _quiet():                     # NaN/inf rows; n == 0: empty anyway
        mean = x64.sum(axis=-1, keepdims=True) / n
        var = ((x64 - mean) ** 2).sum(axis=-1, keepdims=True) / n
        if eps_in_sqrt:
            y = (x64 - mean) / np.sqrt(var + eps)
        else:
            y = (x64 - mean) / (np.sqrt(var) + eps)
    if weight is not None:
        y = y * np.asarray(weight, dtype=np.float64)
    if bias is not None:
        y = y + np.asarray(bias, dtype=np.float64)
    return _store(y.astype(dtype), out, "layer_norm", "out")


def layer_norm_backward(dy, x, eps=1e-6, *, weight=None, eps_in_sqrt=False):
    """Gradients of layer_norm: (dx, dweight, dbias).

    Step by step through the forward pass (float64): y = xhat * w + b,
    xhat = c * r with c = x - mean and r = 1 / (std + eps) (or
    1 / sqrt(var + eps)); dweight and dbias sum over every row. Where
    std == 0 the tutorial form's d(std) is taken as 0 (as PyTorch does).
    """
    dtype = compute_dtype(*(a for a in (dy, x, weight) if a is not None))
    x64 = np.asarray(x, dtype=np.float64)
    dy64 = np.asarray(dy, dtype=np.float64)
    n = x64.shape[-1]
    w = 1.0 if weight is None else np.asarray(weight, dtype=np.float64)
    with _quiet():                     # NaN/inf rows; n == 0: empty anyway
        c = x64 - x64.sum(axis=-1, keepdims=True) / n
        var = (c * c).sum(axis=-1, keepdims=True) / n
        std = np.sqrt(var)
        r = 1.0 / np.sqrt(var + eps) if eps_in_sqrt else 1.0 / (std + eps)
        xhat = c * r
        dxhat = dy64 * w
        dc = dxhat * r                                 # through xhat = c * r
        dr = (dxhat * c).sum(axis=-1, keepdims=True)   # ... and through r
        if eps_in_sqrt:                            # r = (var + eps)^-1/2
            dvar = dr * -0.5 * r ** 3
        else:                                      # r = 1 / (std + eps)
            dstd = dr * -(r * r)
            dvar = np.where(std > 0, dstd / (2 * std), 0.0)
        dc = dc + dvar * 2 * c / n                     # var = mean(c^2)
        dx = dc - dc.sum(axis=-1, keepdims=True) / n   # c = x - mean(x)
    lead = tuple(range(x64.ndim - 1))
    dweight = (dy64 * xhat).sum(axis=lead)
    dbias = dy64.sum(axis=lead)
    return dx.astype(dtype), dweight.astype(dtype), dbias.astype(dtype)


def _gelu64(h, approximate):
    if approximate == "tanh":
        inner = np.sqrt(2.0 / np.pi) * (h + 0.044715 * h ** 3)
        return 0.5 * h * (1.0 + np.tanh(inner))
    return 0.5 * h * (1.0 + _erf(h / np.sqrt(2.0)))


def _dgelu64(h, approximate):
    if approximate == "tanh":
        k = np.sqrt(2.0 / np.pi)
        t = np.tanh(k * (h + 0.044715 * h ** 3))
        return (0.5 * (1.0 + t)
                + 0.5 * h * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * h * h))
    return (0.5 * (1.0 + _erf(h / np.sqrt(2.0)))
            + h * np.exp(-0.5 * h * h) / np.sqrt(2.0 * np.pi))


def _check_approximate(approximate, func):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"{func}: approximate must be 'none' or 'tanh', "
                         f"got {approximate!r}")


def gelu(x, *, approximate="none", out=None):
    """GELU: x * Phi(x) = x (1 + erf(x / sqrt 2)) / 2 ("none", BERT), or
    x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2 ("tanh", GPT-2).

    >>> gelu(np.array([-1.0, 0.0, 1.0])).round(4)
    array([-0.1587,  0.    ,  0.8413])
    """
    _check_approximate(approximate, "gelu")
    dtype = compute_dtype(x)
    with _quiet():                     # gelu(-inf) = -inf * 0 = NaN
        y = _gelu64(np.asarray(x, dtype=np.float64), approximate)
    return _store(y.astype(dtype), out, "gelu", "out")


def gelu_backward(dy, x, *, approximate="none"):
    """d gelu(x) / dx times dy."""
    _check_approximate(approximate, "gelu_backward")
    dtype = compute_dtype(dy, x)
    with _quiet():
        d = _dgelu64(np.asarray(x, dtype=np.float64), approximate)
        return (np.asarray(dy, dtype=np.float64) * d).astype(dtype)


def _act64(h, activation):
    if activation == "relu":
        return np.maximum(0.0, h)
    return _gelu64(h, "tanh" if activation == "gelu_tanh" else "none")


def _dact64(h, activation):
    if activation == "relu":
        return (h > 0).astype(np.float64)
    return _dgelu64(h, "tanh" if activation == "gelu_tanh" else "none")


def _ffn_check(activation, func):
    if activation not in ACTIVATIONS:
        raise ValueError(f"{func}: activation must be 'relu', 'gelu' or "
                         f"'gelu_tanh', got {activation!r}")


def feed_forward(x, W1, b1, W2, b2, *, activation="relu"):
    """Position-wise feed-forward network: act(x W1 + b1) W2 + b2 (float64,
    rounded to the compute dtype). b1, b2 may be None (no bias)."""
    _ffn_check(activation, "feed_forward")
    ops = [a for a in (x, W1, b1, W2, b2) if a is not None]
    dtype = compute_dtype(*ops)
    f = lambda a: 0.0 if a is None else np.asarray(a, np.float64)  # noqa
    hidden = _act64(f(x) @ f(W1) + f(b1), activation)
    return (hidden @ f(W2) + f(b2)).astype(dtype)


def feed_forward_backward(dy, x, W1, b1, W2, b2, *, activation="relu"):
    """Gradients of feed_forward: (dx, dW1, db1, dW2, db2) (float64,
    rounded; db1/db2 are None when b1/b2 are)."""
    _ffn_check(activation, "feed_forward_backward")
    ops = [a for a in (dy, x, W1, b1, W2, b2) if a is not None]
    dtype = compute_dtype(*ops)
    f = lambda a: 0.0 if a is None else np.asarray(a, np.float64)  # noqa
    x2 = f(x).reshape(-1, np.shape(x)[-1])
    dy2 = f(dy).reshape(-1, np.shape(dy)[-1])
    pre = x2 @ f(W1) + f(b1)
    hidden = _act64(pre, activation)
    dpre = (dy2 @ f(W2).T) * _dact64(pre, activation)
    dx = (dpre @ f(W1).T).reshape(np.shape(x))
    grads = (dx, x2.T @ dpre, None if b1 is None else dpre.sum(axis=0),
             hidden.T @ dy2, None if b2 is None else dy2.sum(axis=0))
    return tuple(None if g is None else g.astype(dtype) for g in grads)


def transformer_encoder_layer(x, p, num_heads, mask=None, *, causal=False,
                              activation="relu", norm_first=False,
                              layer_norm_eps=1e-6, eps_in_sqrt=False):
    """One transformer encoder layer in float64, from a dict of parameters
    p: W_q, W_k, W_v, W_o (d, d; (in, out)), optional b_q, b_k, b_v, b_o;
    W1, b1, W2, b2; norm1_weight, norm1_bias, norm2_weight, norm2_bias.

        post-norm (default, the tutorial):  x = LN1(x + SA(x))
                                            x = LN2(x + FF(x))
        norm_first (pre-norm):              x = x + SA(LN1(x))
                                            x = x + FF(LN2(x))

    SA: multi-head self-attention (mask/causal as in attention, fully
    masked rows give 0); FF: feed_forward.
    """
    g = lambda k: None if p.get(k) is None else np.asarray(p[k], np.float64)  # noqa

    def ln(z, i):
        return layer_norm(z, layer_norm_eps, weight=g(f"norm{i}_weight"),
                          bias=g(f"norm{i}_bias"), eps_in_sqrt=eps_in_sqrt)

    def sa(z):
        proj = {}
        for k in "qkvo":
            b = g(f"b_{k}")
            proj[k] = (lambda t, W=g(f"W_{k}"), b=b:
                       t @ W if b is None else t @ W + b)
        Q, K, V = (split_heads(proj[k](z), num_heads) for k in "qkv")
        heads = attention(Q, K, V, mask=mask, causal=causal)
        return proj["o"](combine_heads(heads))

    def ff(z):
        return feed_forward(z, g("W1"), g("b1"), g("W2"), g("b2"),
                            activation=activation)

    x = np.asarray(x, dtype=np.float64)
    if norm_first:
        x = x + sa(ln(x, 1))
        return x + ff(ln(x, 2))
    x = ln(x + sa(x), 1)
    return ln(x + ff(x), 2)


# ---------------------------------------------------------------------------
# The tutorials' own code (seeds/002_*), written out again.
# These keep the tutorial's formulas exactly -- including the -1e9 fill of
# masked scores -- so tests can compare attnpy with what a reader of the
# tutorial would compute.
# ---------------------------------------------------------------------------

def tutorial_softmax(x, axis=-1):
    """The tutorial's numerically stable softmax."""
    exp_x = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exp_x / np.sum(exp_x, axis=axis, keepdims=True)


def tutorial_scaled_dot_product_attention(Q, K, V, mask=None):
    """The tutorial's attention: scores / sqrt(d_k), masked scores := -1e9.

    A row that may see no key therefore gets uniform weights (every score
    is -1e9), which is attnpy's fully_masked="uniform".
    """
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    attention_weights = tutorial_softmax(scores, axis=-1)
    output = np.matmul(attention_weights, V)
    return output, attention_weights


def tutorial_create_causal_mask(seq_len):
    """The tutorial's lower-triangular 0/1 mask."""
    return np.tril(np.ones((seq_len, seq_len)))


def tutorial_positional_encoding(max_len, d_model):
    """The tutorial's sinusoidal encoding (even d_model only, as written)."""
    position = np.arange(max_len)[:, np.newaxis]
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(10000.0) / d_model))
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe


def tutorial_split_heads(x, num_heads):
    """The tutorial's split: (batch, seq, d_model) -> (batch, heads, seq,
    d_k)."""
    batch_size, seq_len, d_model = x.shape
    x = x.reshape(batch_size, seq_len, num_heads, d_model // num_heads)
    return x.transpose(0, 2, 1, 3)


def tutorial_combine_heads(x):
    """The tutorial's combine: (batch, heads, seq, d_k) -> (batch, seq,
    d_model)."""
    batch_size, num_heads, seq_len, d_k = x.shape
    x = x.transpose(0, 2, 1, 3)
    return x.reshape(batch_size, seq_len, num_heads * d_k)


def tutorial_init_weights(d_model):
    """The tutorial's MultiHeadAttention.__init__ draws, from np.random's
    global state: W_q, W_k, W_v, W_o = randn(d, d) * sqrt(2 / d), in order."""
    return tuple(np.random.randn(d_model, d_model) * np.sqrt(2.0 / d_model)
                 for _ in range(4))


def tutorial_multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    """The tutorial's MultiHeadAttention.forward: returns (output, weights)."""
    Q = tutorial_split_heads(np.matmul(X, W_q), num_heads)
    K = tutorial_split_heads(np.matmul(X, W_k), num_heads)
    V = tutorial_split_heads(np.matmul(X, W_v), num_heads)
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    attention_weights = tutorial_softmax(scores, axis=-1)
    attention_output = np.matmul(attention_weights, V)
    combined = tutorial_combine_heads(attention_output)
    return np.matmul(combined, W_o), attention_weights


def tutorial_layer_norm(x, eps=1e-6):
    """The tutorial's layer normalisation (no gain/bias)."""
    mean = np.mean(x, axis=-1, keepdims=True)
    std = np.std(x, axis=-1, keepdims=True)
    return (x - mean) / (std + eps)


def tutorial_feed_forward(x, W1, b1, W2, b2):
    """The tutorial's position-wise feed-forward network (ReLU)."""
    hidden = np.maximum(0, np.matmul(x, W1) + b1)
    return np.matmul(hidden, W2) + b2


def tutorial_encoder_layer(x, mha, W1, b1, W2, b2, mask=None):
    """The tutorial's TransformerEncoderLayer.forward.

    `mha(x, mask)` is any function returning (attention output, weights),
    e.g. a MultiHeadAttention's forward.
    """
    attn_output, _ = mha(x, mask)
    x = tutorial_layer_norm(x + attn_output)
    ff_output = tutorial_feed_forward(x, W1, b1, W2, b2)
    return tutorial_layer_norm(x + ff_output)

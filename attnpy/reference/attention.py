"""Twins of the attention family: masks, attention, its backward pass,
merging partial results."""
import math

import numpy as np

from ._common import (FULLY_MASKED_POLICIES, _as_compute, _check_real, _quiet,
                      _store, compute_dtype, is_16bit, result_dtype)
from .elementwise import (softmax)


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

    ::

        align="top_left":      j <= i          (np.tril(np.ones((L, S))))
        align="bottom_right":  j <= i + S - L  (the last query sees every
                                                key, as in KV-cache decoding)

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

    ::

        weights = softmax(scale * Q K^T + bias, masked to -inf)   (..., L, S)
        output  = weights V                                       (..., L, Ev)

    Q (..., L, E), K (..., S, E), V (..., S, Ev); mask and bias broadcast
    to (..., L, S) and may add leading dims. scale defaults to 1/sqrt(E)
    (1.0 when E == 0). Fully masked rows follow `fully_masked`.

    The variants (sliding window, ALiBi, soft-capping), with query row i at
    key position i' = i (+ S - L when causal="bottom_right")::

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
    mask and bias in the compute dtype, checked. bfloat16 computes as
    float16 does, like attnpy's (in float32, or float64 beside float64)."""
    Q, K, V, mask, bias = (_bf16_wide(a) for a in (Q, K, V, mask, bias))
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
        # a keep-mask has no negative entries (-inf there means an
        # additive mask), and a float one holds 0 and 1 only (anything else
        # is a weight): both belong in bias
        if mask.dtype.kind in "if" and np.any(mask < 0):
            raise ValueError(f"{func}: mask holds negative values; an "
                             f"additive mask (0 = attend, -inf = blocked) "
                             f"goes in bias=")
        if mask.dtype.kind == "f" and not np.all((mask == 0) | (mask == 1)):
            raise ValueError(f"{func}: mask holds values other than 0 and "
                             f"1; weights or an additive mask go in bias=")
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
    query heads of each K/V head. Each gradient has its input's dtype when
    that is a float type, as attnpy's: float16 or bfloat16 in, the same
    out (computed in float32, or float64 with a float64 input, rounded
    once).
    """
    func = "attention_backward"
    Q0, K0, V0, bias0 = Q, K, V, bias
    Q, K, V, bias, dout, out = (_bf16_wide(a)
                                for a in (Q, K, V, bias, dout, out))
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
    grads = [_store(_grad_like(g.reshape(np.shape(x)), x), d, func, n)
             for g, x, d, n in ((dQ, Q0, dq, "dq"), (dK, K0, dk, "dk"),
                                (dV, V0, dv, "dv"))]
    if bias_grad:
        grads.append(_grad_like(_sum_to_shape(dS, np.shape(bias0)), bias0))
    return tuple(grads)


def _bf16_wide(a):
    """A 16-bit array as float32 (exact), so that bfloat16 computes as
    float16 does (in float32, or float64 with a float64 input); else `a`."""
    if a is None:
        return a
    a = np.asarray(a)
    return a.astype(np.float32) if is_16bit(a.dtype) else a


def _grad_like(g, x):
    """attnpy's rule for gradients: g in input x's dtype when that is a
    float type (16-bit included: 16 bits in, 16 bits out, rounded once),
    else in the compute dtype."""
    dt = np.asarray(x).dtype
    if dt.kind == "f" or is_16bit(dt):
        return g.astype(dt, copy=False)
    return g



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
    # lse in the compute dtype; out keeps the outs' 16-bit dtype
    dtype = np.dtype(np.float64 if result_dtype(*outs, *lses) == np.float64
                     else np.float32)
    odt = result_dtype(*outs) if dtype == np.float32 else dtype
    o = np.stack(np.broadcast_arrays(*(a.astype(np.float64) for a in outs)))
    l = np.stack(np.broadcast_arrays(*(a.astype(np.float64) for a in lses)))
    # the leading dims of outs and lses broadcast against each other: pad
    # the shorter after the K axis (stacking put K first in both)
    pad = l.ndim + 1 - o.ndim
    o = o.reshape(o.shape[:1] + (1,) * pad + o.shape[1:])
    l = l.reshape(l.shape[:1] + (1,) * -pad + l.shape[1:])
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
    return out.astype(odt), lse.astype(dtype)

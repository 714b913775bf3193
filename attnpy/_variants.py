"""The attention variants' plumbing shared by attention,
scaled_dot_product_attention, attention_backward and explain.

The public functions hand their variant keywords over as one tuple,
``variants`` = (window, alibi_slopes, softcap, ...), in the order the C
binding reads them (csrc/python/variants.c); it goes to the binding as it
is, which checks every entry (only alibi_slopes' head axis is touched
here, under enable_gqa). The private pos_shift goes alongside it.
enable_gqa is done here with views:
Q (..., Hq, L, E) is seen as (..., Hkv, g, L, E) and K, V (..., Hkv, S, E)
as (..., Hkv, 1, S, E), g = Hq // Hkv, so that query head h = kv * g + r
reads K/V head kv = h // g (PyTorch's convention) through the binding's
ordinary broadcasting: nothing is copied, and attention_backward's sums
over broadcast dims give dK, dV summed over each group.
"""
import re

import numpy as np

from . import _core
from ._validate import flag as _flag

def _split_head(a, axis, Hkv, g, Hq, fname, name):
    """a with its head axis `axis` (negative) of length Hq or 1 seen as two
    axes (Hkv, g) or (1, 1); a is returned as is when it has no head axis."""
    if a is None:
        return None
    a = _core.as_array16(a, fname, name)
    if a.ndim < -axis:
        return a
    n = a.shape[axis]
    if n not in (Hq, 1):
        raise ValueError(f"{fname}: {name} has {n} heads (axis {axis}) but "
                         f"Q has {Hq} (enable_gqa=True) ({name}.shape="
                         f"{a.shape})")
    return _split(a, axis, (Hkv, g) if n == Hq and n != 1 else (1, 1))


def _split(a, axis, two):
    """A view of `a` whose axis `axis` (negative) is split into two axes."""
    shape = a.shape[:a.ndim + axis] + tuple(two) + a.shape[a.ndim + axis + 1:]
    return np.reshape(a, shape, copy=False)   # a split never needs a copy


def _merge(a, axis):
    """`a` (a new C-contiguous result) with axes axis-1 and axis merged."""
    k = a.ndim + axis
    return a.reshape(a.shape[:k - 1] + (a.shape[k - 1] * a.shape[k],)
                     + a.shape[k + 1:])


class Gqa:
    """The views of one enable_gqa call, and how to undo them."""

    def __init__(self, fname, Q, K, V):
        Q = _core.as_array16(Q, fname, "Q")
        K = _core.as_array16(K, fname, "K")
        V = _core.as_array16(V, fname, "V")
        if Q.ndim < 3 or K.ndim < 3 or V.ndim < 3:
            raise ValueError(
                f"{fname}: enable_gqa=True needs a head axis: Q (..., Hq, L, "
                f"E), K and V (..., Hkv, S, E), got Q.shape={Q.shape}, "
                f"K.shape={K.shape}, V.shape={V.shape}")
        Hq, Hkv = Q.shape[-3], K.shape[-3]
        if V.shape[-3] != Hkv:
            raise ValueError(f"{fname}: K has {Hkv} heads but V has "
                             f"{V.shape[-3]} (K.shape={K.shape}, "
                             f"V.shape={V.shape})")
        if Hkv == 0 or Hq % Hkv:
            raise ValueError(f"{fname}: enable_gqa=True needs Q's heads to be "
                             f"a multiple of K's, got Hq={Hq}, Hkv={Hkv} "
                             f"(Q.shape={Q.shape}, K.shape={K.shape})")
        self.fname, self.Hq, self.Hkv, self.g = fname, Hq, Hkv, Hq // Hkv
        self.Q0, self.K0, self.V0 = Q, K, V
        self.Q = _split(Q, -3, (Hkv, self.g))
        self.K = K[..., None, :, :]
        self.V = V[..., None, :, :]

    def heads(self, a, name, axis=-3):
        """A mask / bias (head axis -3) or slopes (axis -1) of Hq heads."""
        return _split_head(a, axis, self.Hkv, self.g, self.Hq, self.fname,
                           name)

    def dest(self, a, axis=-3):
        """A caller's out= array of Hq heads as a (..., Hkv, g, ...) view."""
        if isinstance(a, np.ndarray) and a.ndim >= -axis and \
                a.shape[axis] == self.Hq:
            return _split(a, axis, (self.Hkv, self.g))
        return a          # None, or wrong: the binding says what is wrong

    def in_caller_terms(self, exc, operands=()):
        """The binding's ValueError or MemoryError exc told in the
        caller's shapes and batch indices (the binding saw the (..., Hkv,
        g, ...) views): exc itself, or a new one. operands: (name, the
        caller's operand, the view passed) of the call's other split
        operands. Used in an except clause, so a call that succeeds pays
        nothing for it."""
        seen = (("Q", self.Q0, self.Q), ("K", self.K0, self.K),
                ("V", self.V0, self.V)) + tuple(operands)
        msg = self.caller_message(str(exc), seen)
        return exc if msg == str(exc) else type(exc)(msg)

    def repeats_named(self, exc, K, V):
        """exc of a call on K and V repeated to Q's heads (explain's),
        naming the caller's K and V."""
        msg = str(exc)
        for name, rep, own in (("K", K, self.K0), ("V", V, self.V0)):
            msg = msg.replace(f"{name}.shape={rep.shape}",
                              f"{name}.shape={own.shape}")
        return type(exc)(msg)

    def caller_message(self, msg, seen):
        """msg with the views' shapes and batch indices as the caller's:
        one pass over each kind of place a shape or an index is named."""
        views = {(n, v.shape): np.shape(a) for n, a, v in seen
                 if isinstance(v, np.ndarray) and v is not a}

        def tup(text):
            return tuple(int(x) for x in text.split(",") if x.strip())

        def named(m):      # "K.shape=(...)", "out has shape (...)"
            user = views.get((m.group(1), tup(m.group(3))))
            return m.group(0) if user is None else \
                f"{m.group(1)}{m.group(2)}{user}"

        msg = re.sub(r"(?<![\w.])(\w+)(\.shape=| has shape )\(([\d, ]*)\)",
                     named, msg)

        def wanted(m):     # a result's shape: the head axes as one
            t, lse = tup(m.group(2)), "lse" in m.group(1)
            k = len(t) + (-2 if lse else -3)
            if k < 1:
                return m.group(0)
            return f"{m.group(1)} {t[:k - 1] + (t[k - 1] * t[k],) + t[k + 1:]}"

        msg = re.sub(r"(the result has shape|\b(?:dout|out|lse) must have "
                     r"shape|\bthe (?:output|weights|scores|lse) of shape|"
                     r"\bd(?:Q|K|V|bias) of shape) \(([\d, ]*)\)", wanted, msg)

        def index(m):      # (..., kv, r) -> (..., kv * g + r)
            t = tup(m.group(1))
            if len(t) < 2:
                return m.group(0)
            return f"batch index {t[:-2] + (t[-2] * self.g + t[-1],)}"

        return re.sub(r"batch index \(([\d, ]*)\)", index, msg)

    def result(self, a, user=None, axis=-3):
        """A result of the split call with the caller's head axis."""
        return user if user is not None else _merge(a, axis)


#: alibi_slopes' place in a variants tuple: the one entry that is an array
#: with a head axis, split under enable_gqa like a mask's
_ALIBI = 1


def _gqa_variants(v, variants):
    """variants with alibi_slopes' head axis split for the Gqa views v."""
    if variants is None or len(variants) <= _ALIBI or \
            variants[_ALIBI] is None:
        return variants
    slopes = v.heads(variants[_ALIBI], "alibi_slopes", -1)
    return variants[:_ALIBI] + (slopes,) + variants[_ALIBI + 1:]


def sdpa(Q, K, V, mask, bias, causal, scale, fully_masked, out, weights_out,
         fname, enable_gqa, variants, pos_shift=None, *,
         return_weights=False, return_lse=False):
    """_core.sdpa with the variants: out, (out, weights) or (out, lse).

    variants: the public variant keywords as one tuple (window,
    alibi_slopes, softcap, ...), or None; passed on untouched (but for
    alibi_slopes' head axis under enable_gqa): the binding checks them.
    pos_shift: attnpy.dask's private shift of the query positions, or
    None (0)."""
    enable_gqa = _flag(enable_gqa, fname, "enable_gqa")
    if not enable_gqa:
        # keywords written out (no **dict), and the optional operands only
        # when given: each keyword costs ~25 ns, a tenth of a tiny call
        if mask is bias is out is weights_out is scale is pos_shift is None:
            return _core.sdpa(Q, K, V, causal=causal,
                              fully_masked=fully_masked, fname=fname,
                              variants=variants,
                              return_weights=return_weights,
                              return_lse=return_lse)
        return _core.sdpa(Q, K, V, mask=mask, bias=bias, out=out,
                          weights_out=weights_out, causal=causal,
                          scale=scale, fully_masked=fully_masked,
                          fname=fname, variants=variants,
                          pos_shift=pos_shift,
                          return_weights=return_weights,
                          return_lse=return_lse)
    v = Gqa(fname, Q, K, V)
    mask_v, bias_v = v.heads(mask, "mask"), v.heads(bias, "bias")
    out_v, w_v = v.dest(out), v.dest(weights_out)
    try:
        r = _core.sdpa(v.Q, v.K, v.V, mask=mask_v, bias=bias_v, out=out_v,
                       weights_out=w_v, causal=causal, scale=scale,
                       fully_masked=fully_masked, fname=fname,
                       variants=_gqa_variants(v, variants),
                       pos_shift=pos_shift, return_weights=return_weights,
                       return_lse=return_lse)
    except (ValueError, MemoryError) as e:
        raise v.in_caller_terms(e, (
            ("mask", mask, mask_v), ("bias", bias, bias_v),
            ("out", out, out_v), ("weights_out", weights_out, w_v))) from None
    if return_weights:
        return v.result(r[0], out), v.result(r[1], weights_out)
    if return_lse:
        return v.result(r[0], out), v.result(r[1], None, -2)
    return v.result(r, out)


def sdpa_bwd(dout, Q, K, V, out, lse, mask, bias, causal, scale,
             fully_masked, bias_grad, enable_gqa, variants, pos_shift=None):
    """(dQ, dK, dV, dbias or None, Q, K, V, bias): the per-batch-item
    gradients of _core.sdpa_bwd and the operands they belong to (views under
    enable_gqa), ready to be summed to those operands' shapes. variants
    and pos_shift: sdpa's."""
    fname = "attention_backward"
    enable_gqa = _flag(enable_gqa, "attention_backward", "enable_gqa")
    kw = dict(causal=causal, scale=scale, fully_masked=fully_masked,
              bias_grad=bias_grad, fname=fname, pos_shift=pos_shift)
    if not enable_gqa:
        return _core.sdpa_bwd(Q, K, V, mask=mask, bias=bias, dout=dout,
                              out=out, lse=lse, variants=variants,
                              **kw), (Q, K, V, bias)
    v = Gqa(fname, Q, K, V)
    split = tuple((n, a, v.heads(a, n, ax)) for n, a, ax in (
        ("mask", mask, -3), ("bias", bias, -3), ("dout", dout, -3),
        ("out", out, -3), ("lse", lse, -2)))
    mask_v, bias_v, dout, out, lse = (t[2] for t in split)
    try:
        grads = _core.sdpa_bwd(v.Q, v.K, v.V, mask=mask_v, bias=bias_v,
                               dout=dout, out=out, lse=lse,
                               variants=_gqa_variants(v, variants), **kw)
    except (ValueError, MemoryError) as e:
        raise v.in_caller_terms(e, split) from None
    return grads, (v.Q, v.K, v.V, bias_v)

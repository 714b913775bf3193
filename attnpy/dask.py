"""attnpy.dask: attention over Dask arrays, block by block, lazily.

``import attnpy`` never imports this module (nor dask); ``import
attnpy.dask`` needs the optional extra: ``pip install "attnpy[dask]"``.

How the work is cut:

- leading (batch/head) chunks map block to block;
- query chunks (along L) are independent;
- key/value chunks (along S) are computed as partial attention with its
  log-sum-exp (``attnpy.attention(..., return_lse=True)``) and combined
  by :func:`attnpy.merge_attention` in a tree, in a fixed order, so the
  keys and values of one sequence never have to fit in one worker;
- every block is computed at its place in the sequence (the kernel's
  position shift): causal limits, windows and ALiBi see global positions,
  inside the kernel (no mask array is built), and (query chunk, key
  chunk) pairs that no row can see (in the future, outside the window)
  are never computed.

The same code runs on the threaded scheduler, on ``dask.distributed``
with worker processes, and on any cluster ``dask.distributed`` reaches.
"""
from __future__ import annotations

from typing import Any
import math

import numpy as np

try:
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("attnpy.dask needs dask: pip install 'attnpy[dask]'"
                      ) from exc

import attnpy
from attnpy import _variants
from attnpy._validate import ACCEPTED16, is_16bit, is_bfloat16, keep_mask, \
    result_dtype
from attnpy._types import ArrayLike, Causal, FullyMasked, Window

__all__ = ["attention"]

_FM = ("zero", "uniform", "nan", "raise")


def attention(Q: Any, K: Any, V: Any, *, mask: Any = None, bias: Any = None,
              causal: Causal = False, scale: float | None = None,
              fully_masked: FullyMasked = "zero", enable_gqa: bool = False,
              window: Window = None, alibi_slopes: ArrayLike | None = None,
              softcap: float | None = None, return_lse: bool = False,
              split_every: int = 8) -> Any:
    """:func:`attnpy.attention` on Dask arrays, lazily.

    Parameters
    ----------
    Q, K, V : dask.array.Array or array_like
        (..., L, E), (..., S, E), (..., S, Ev); leading dims broadcast as in
        :func:`attnpy.attention`. NumPy inputs are wrapped as one chunk.
        The chunks of Q set the batch and query blocks, those of K the key
        blocks (V, mask and bias are rechunked to match; E and Ev are
        single chunks).
    mask, bias, causal, scale, fully_masked :
        As in :func:`attnpy.attention`; mask and bias may be Dask or NumPy
        arrays broadcastable to (..., L, S).
    enable_gqa : bool
        Grouped-query attention as in :func:`attnpy.attention`: Q
        (..., Hq, L, E), K/V (..., Hkv, S, E) with Hq a multiple of Hkv;
        query head h reads K/V head h // (Hq // Hkv). Done by viewing the
        heads as (Hkv, Hq // Hkv) groups: K and V are never repeated.
    window, alibi_slopes, softcap :
        As in :func:`attnpy.attention`. Every block is computed at its
        place in the whole sequence (positions, not local indices), and
        (query, key) block pairs outside every row's window are never
        computed. alibi_slopes is a NumPy array (the slopes of the
        leading dims, e.g. (H,) or (B, H)).
    return_lse : bool
        Also return the log-sum-exp (..., L) as a second Dask array.
    split_every : int
        Fan-in of the tree that merges key blocks (>= 2).

    Returns
    -------
    dask.array.Array, shape (..., L, Ev) (and the lse if asked)

    Examples
    --------
    >>> import numpy as np, dask.array as da, attnpy, attnpy.dask
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = (rng.standard_normal((2, 64, 16)) for _ in range(3))
    >>> Kd, Vd = da.from_array(K, chunks=(1, 16, 16)), da.from_array(V, chunks=(1, 16, 16))
    >>> out = attnpy.dask.attention(da.from_array(Q, chunks=(1, 32, 16)), Kd, Vd,
    ...                             causal=True)
    >>> out.chunks
    ((1, 1), (32, 32), (16,))
    >>> bool(np.allclose(out.compute(), attnpy.attention(Q, K, V, causal=True)))
    True
    """
    fname = "attnpy.dask.attention"
    if fully_masked not in _FM:
        raise ValueError(f"{fname}: fully_masked must be 'zero', 'uniform', "
                         f"'nan' or 'raise', got {fully_masked!r}")
    if int(split_every) < 2:
        raise ValueError(f"{fname}: split_every must be >= 2, got {split_every}")
    if alibi_slopes is not None:
        alibi_slopes = np.asarray(alibi_slopes)
        if alibi_slopes.dtype.kind not in "biuf" and \
                not is_bfloat16(alibi_slopes.dtype):
            raise TypeError(f"{fname}: alibi_slopes must be an array of real "
                            f"numbers, got dtype {alibi_slopes.dtype}")
    if enable_gqa:
        Q, K, V, mask, bias, heads = _gqa_views(fname, Q, K, V, mask, bias)
        if alibi_slopes is not None and alibi_slopes.ndim >= 1:
            hkv, g = Q.shape[-4], Q.shape[-3]
            if alibi_slopes.shape[-1] not in (1, hkv * g):
                raise ValueError(f"{fname}: alibi_slopes has {alibi_slopes.shape[-1]} "
                                 f"heads; with enable_gqa it needs 1 or the query "
                                 f"heads' {hkv * g}")
            two = (hkv, g) if alibi_slopes.shape[-1] > 1 else (1, 1)
            alibi_slopes = alibi_slopes.reshape(alibi_slopes.shape[:-1] + two)
    plan = _Plan(fname, Q, K, V, mask, bias, causal, scale)
    plan.variants(window, alibi_slopes, softcap)
    out, lse = plan.build(fully_masked, int(split_every))
    if enable_gqa:   # (..., Hkv, g, L, *) back to (..., Hq, L, *)
        out = out.reshape(out.shape[:-4] + (heads,) + out.shape[-2:])
        lse = lse.reshape(lse.shape[:-3] + (heads,) + lse.shape[-1:])
    return (out, lse) if return_lse else out


def _gqa_views(fname, Q, K, V, mask, bias):
    """Q (..., Hq, L, E) as (..., Hkv, g, L, E); K, V (..., Hkv, S, *) as
    (..., Hkv, 1, S, *); a mask/bias with a head axis likewise. Returns
    the views and Hq."""
    Q, K, V = (_as_dask(x, n, fname) for x, n in ((Q, "Q"), (K, "K"), (V, "V")))
    for x, n in ((Q, "Q"), (K, "K"), (V, "V")):
        if x.ndim < 3:
            raise ValueError(f"{fname}: enable_gqa needs a head axis: {n} must "
                             f"have at least 3 dimensions, got shape {x.shape}")
    hq, hkv = Q.shape[-3], K.shape[-3]
    if V.shape[-3] != hkv:
        raise ValueError(f"{fname}: K has {hkv} heads but V has {V.shape[-3]} "
                         f"(enable_gqa)")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"{fname}: enable_gqa needs the query heads ({hq}) to be "
                         f"a multiple of the key/value heads ({hkv})")
    g = hq // hkv
    Q = Q.reshape(Q.shape[:-3] + (hkv, g) + Q.shape[-2:])
    K, V = K[..., None, :, :], V[..., None, :, :]

    def split(m, name):
        m = _as_dask(m, name, fname)
        if m is None or m.ndim < 3:
            return m
        h = m.shape[-3]
        if h == 1:
            return m[..., None, :, :]
        if h != hq:
            raise ValueError(f"{fname}: {name} has {h} heads; with enable_gqa it "
                             f"needs 1 or the query heads' {hq}")
        return m.reshape(m.shape[:-3] + (hkv, g) + m.shape[-2:])
    return Q, K, V, split(mask, "mask"), split(bias, "bias"), hq


def _as_dask(x, name, fname):
    if x is None or isinstance(x, da.Array):
        return x
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{fname}: {name} is a numpy.ma masked array, which "
                        f"attnpy does not support")
    a = keep_mask(x, fname) if name == "mask" else np.asarray(x)
    if a.dtype.kind not in "biuf" and not is_bfloat16(a.dtype):
        raise TypeError(f"{fname}: {name} must be an array of real numbers, "
                        f"got dtype {a.dtype} (expected {ACCEPTED16})")
    return da.from_array(a, chunks=a.shape or ())


class _Plan:
    """Shapes, chunks and the graph of one call."""

    def __init__(self, fname, Q, K, V, mask, bias, causal, scale):
        self.fname = fname
        Q, K, V = (_as_dask(x, n, fname) for x, n in ((Q, "Q"), (K, "K"), (V, "V")))
        mask, bias = _as_dask(mask, "mask", fname), _as_dask(bias, "bias", fname)
        for x, n in ((Q, "Q"), (K, "K"), (V, "V")):
            if x.ndim < 2:
                raise ValueError(f"{fname}: {n} must have at least 2 dimensions, "
                                 f"got shape {x.shape}")
        L, E = Q.shape[-2:]
        S, Ev = K.shape[-2], V.shape[-1]
        if K.shape[-1] != E:
            raise ValueError(f"{fname}: K has {K.shape[-1]} features but Q has {E} "
                             f"(Q.shape={Q.shape}, K.shape={K.shape})")
        if V.shape[-2] != S:
            raise ValueError(f"{fname}: V has {V.shape[-2]} positions but K has {S} "
                             f"(K.shape={K.shape}, V.shape={V.shape})")
        extra = [m.shape[:-2] for m in (mask, bias) if m is not None and m.ndim >= 2]
        try:
            batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], *extra)
        except ValueError:
            raise ValueError(f"{fname}: the leading (batch) dimensions of Q, K, V, "
                             f"mask and bias do not broadcast (Q.shape={Q.shape}, "
                             f"K.shape={K.shape}, V.shape={V.shape})") from None
        # the result's dtype, as attnpy.attention's; a 16-bit result's
        # partials and lse stay float32 (acc) and the result is rounded
        # once, at the end
        self.dtype = result_dtype(Q.dtype, K.dtype, V.dtype)
        self.acc = np.dtype(np.float32) if is_16bit(self.dtype) else self.dtype
        self.L, self.S, self.E, self.Ev, self.batch = L, S, E, Ev, batch
        nb = len(batch)
        Q = da.broadcast_to(Q, batch + (L, E))
        bchunks = Q.chunks[:nb]
        self.qchunks = Q.chunks[nb]
        self.Q = Q.rechunk(bchunks + (self.qchunks, E))
        K = da.broadcast_to(K, batch + (S, E))
        self.kchunks = K.chunks[nb]
        self.K = K.rechunk(bchunks + (self.kchunks, E))
        self.V = da.broadcast_to(V, batch + (S, Ev)).rechunk(bchunks + (self.kchunks, Ev))
        self.bchunks = bchunks
        self.mask = self._score_operand(mask, "mask")
        self.bias = self._score_operand(bias, "bias")
        self.causal = causal
        # query i sits at key position i + coff (i' = i, or
        # i + S - L with causal="bottom_right")
        if causal in (False, None, True, "top_left"):
            self.coff = 0
        elif causal == "bottom_right":
            self.coff = S - L
        else:
            raise ValueError(f"{fname}: causal must be False, True, 'top_left' or "
                             f"'bottom_right', got {causal!r}")
        self.scale = (1.0 / math.sqrt(E) if E else 1.0) if scale is None else float(scale)

    def variants(self, window, alibi, softcap):
        """Check window, ALiBi slopes and softcap; the slopes broadcast to
        the batch shape (one per batch item)."""
        fname = self.fname
        if window is not None:
            try:
                left, right = window
            except (TypeError, ValueError):
                raise TypeError(f"{fname}: window must be None or (left, right), "
                                f"got {window!r}") from None
            for side in (left, right):
                if side is not None and (isinstance(side, bool) or
                                         not isinstance(side, (int, np.integer))
                                         or side < 0):
                    raise ValueError(f"{fname}: window sides must be None or "
                                     f"integers >= 0, got {window!r}")
            window = (None if left is None else int(left),
                      None if right is None else int(right))
        if softcap is not None:
            softcap = float(softcap)
            if not (math.isfinite(softcap) and softcap > 0):
                raise ValueError(f"{fname}: softcap must be None or a finite "
                                 f"number > 0, got {softcap!r}")
        if alibi is not None:
            try:
                alibi = np.broadcast_to(alibi.astype(self.acc), self.batch)
            except ValueError:
                raise ValueError(f"{fname}: alibi_slopes of shape {alibi.shape} do "
                                 f"not broadcast to the batch dims {self.batch}"
                                 ) from None
        self.window, self.alibi, self.softcap = window, alibi, softcap

    def _score_operand(self, m, name):
        """mask/bias as (batch..., L or 1, S or 1), chunked like the scores."""
        if m is None:
            return None
        if m.ndim < 2:
            m = m.reshape((1,) * (2 - m.ndim) + m.shape)
        ml, ms = m.shape[-2:]
        if ml not in (1, self.L) or ms not in (1, self.S):
            raise ValueError(f"{self.fname}: {name} of shape {m.shape} does not "
                             f"broadcast to the scores' (..., L, S) = "
                             f"(..., {self.L}, {self.S})")
        nb = len(self.batch)
        m = da.broadcast_to(m, self.batch + (ml, ms))
        return m.rechunk(self.bchunks + (self.qchunks if ml > 1 else (1,),
                                         self.kchunks if ms > 1 else (1,)))

    # -- the graph --------------------------------------------------------
    def build(self, fully_masked, split_every):
        name = "attnpy-attention-" + tokenize(
            self.Q, self.K, self.V, self.mask, self.bias, self.causal,
            self.scale, fully_masked, split_every, self.window, self.alibi,
            self.softcap)
        # the "uniform" policy's output: the mean of the value rows, by
        # dask's own tree reduction (never all of V in one task)
        vmean = (self.V.mean(axis=-2, dtype=np.float64)
                 if fully_masked == "uniform" and self.S else None)
        deps = [a for a in (self.Q, self.K, self.V, self.mask, self.bias, vmean)
                if a is not None]
        qoff = np.concatenate([[0], np.cumsum(self.qchunks)])
        koff = np.concatenate([[0], np.cumsum(self.kchunks)])
        boff = [np.concatenate([[0], np.cumsum(c)]) for c in self.bchunks]
        causal = self.causal not in (False, None)
        dsk = {}
        for bi in np.ndindex(*[len(c) for c in self.bchunks]):
            alibi = None if self.alibi is None else self.alibi[tuple(
                slice(o[i], o[i + 1]) for o, i in zip(boff, bi))]
            for qi in range(len(self.qchunks)):
                parts = []
                for ki in range(len(self.kchunks)):
                    q0, k0 = int(qoff[qi]), int(koff[ki])
                    if not self._visible(q0, self.qchunks[qi], k0, self.kchunks[ki]):
                        continue          # no row of the block sees a key of it
                    key = (name + "-part",) + bi + (qi, ki)
                    dsk[key] = (_partial, (self.Q.name,) + bi + (qi, 0),
                                (self.K.name,) + bi + (ki, 0),
                                (self.V.name,) + bi + (ki, 0),
                                self._block_key(self.mask, bi, qi, ki),
                                self._block_key(self.bias, bi, qi, ki),
                                (self.scale, causal, q0 + self.coff - k0,
                                 self.window, alibi, self.softcap,
                                 str(self.acc)))
                    parts.append(key)
                top = _tree(dsk, name + "-merge", bi + (qi,), parts, split_every)
                if top is None:   # bottom_right with L > S: rows before any key
                    top = (name + "-none",) + bi + (qi,)
                    dsk[top] = (_no_key, (self.Q.name,) + bi + (qi, 0), self.Ev,
                                str(self.acc))
                dsk[(name + "-res",) + bi + (qi,)] = (
                    _finish, top, fully_masked,
                    None if vmean is None else (vmean.name,) + bi + (0,),
                    int(qoff[qi]), str(self.dtype), str(self.acc))
                dsk[(name,) + bi + (qi, 0)] = (_item, (name + "-res",) + bi + (qi,), 0)
                dsk[(name + "-lse",) + bi + (qi,)] = (
                    _item, (name + "-res",) + bi + (qi,), 1)
        graph = HighLevelGraph.from_collections(name, dsk, dependencies=deps)
        out = da.Array(graph, name, self.bchunks + (self.qchunks, (self.Ev,)),
                       dtype=self.dtype)
        lse_graph = HighLevelGraph.from_collections(
            name + "-lse", {k: v for k, v in dsk.items()
                            if k[0] == name + "-lse"}, dependencies=[out])
        lse = da.Array(lse_graph, name + "-lse", self.bchunks + (self.qchunks,),
                       dtype=self.acc)
        return out, lse

    def _visible(self, q0, nq, k0, nk):
        """Can any query of rows q0.. (nq) see any key of k0.. (nk)? Query
        i sees keys lo(i) <= j <= hi(i), both non-decreasing in i."""
        left, right = self.window if self.window is not None else (None, None)
        first, last = q0 + self.coff, q0 + nq - 1 + self.coff   # positions
        hi = [last + right] if right is not None else []
        if self.causal not in (False, None):
            hi.append(last)
        if hi and min(hi) < k0:
            return False
        return left is None or first - left <= k0 + nk - 1

    def _block_key(self, m, bi, qi, ki):
        if m is None:
            return None
        return (m.name,) + bi + (qi if m.shape[-2] > 1 else 0,
                                 ki if m.shape[-1] > 1 else 0)


def _partial(q, k, v, mask, bias, how):
    """(out, lse) of one query block over one key block, computed at the
    blocks' place in the sequence: pos_shift = q0 + coff - k0 puts local
    query r at local key position r + pos_shift, so causal (top_left here),
    the window and ALiBi see global positions. The output is written in
    `acc` (float32 for 16-bit inputs, which the kernel reads in 16 bits)."""
    scale, causal, shift, window, alibi, softcap, acc = how
    out = np.empty(q.shape[:-1] + v.shape[-1:], dtype=acc)
    return _variants.sdpa(q, k, v, mask, bias, causal, scale, "zero", out,
                          None, "attnpy.dask.attention", False,
                          (window, alibi, softcap), shift, return_lse=True)


def _merge(*parts):
    out, lse = attnpy.merge_attention([p[0] for p in parts], [p[1] for p in parts])
    return out, lse


def _tree(dsk, name, idx, keys, split_every):
    """Merge `keys` (partials in key order) in a tree of fan-in split_every;
    returns the key of the root (or None when there are no partials)."""
    level = 0
    while len(keys) > 1:
        nxt = []
        for g in range(0, len(keys), split_every):
            group = keys[g:g + split_every]
            if len(group) == 1:
                nxt.append(group[0])
                continue
            key = (name,) + idx + (level, g // split_every)
            dsk[key] = (_merge,) + tuple(group)
            nxt.append(key)
        keys, level = nxt, level + 1
    return keys[0] if keys else None


def _no_key(q, Ev, dtype):
    """The partial of rows that see no key at all: out 0, lse -inf."""
    return (np.zeros(q.shape[:-1] + (Ev,), dtype=dtype),
            np.full(q.shape[:-1], -np.inf, dtype=dtype))


def _finish(part, fully_masked, vmean, q0, dtype, acc):
    """The merged (out, lse) of one query block, with the policy applied to
    the rows that saw no key; out rounded once to `dtype`, lse in `acc`."""
    out, lse = part
    dead = np.isneginf(lse)
    if fully_masked == "zero" or not dead.any():
        return out.astype(dtype, copy=False), lse.astype(acc, copy=False)
    if fully_masked == "raise":
        row = int(np.argwhere(dead)[0][-1])
        raise ValueError(f"attnpy.dask.attention: query row {q0 + row} may "
                         f"attend to no key (fully_masked='raise')")
    out = np.array(out, dtype=dtype)
    if fully_masked == "nan":
        out[dead] = np.nan
    elif vmean is None:                # S == 0: the core's uniform is 0
        out[dead] = 0
    else:
        fill = np.broadcast_to(vmean[..., None, :], out.shape)
        out[dead] = fill[dead]
    return out, lse.astype(acc, copy=False)


def _item(pair, i):
    return pair[i]

"""Decoding: rotary positions, merging partial attention, a key/value cache.

A generation loop runs one query row at a time against every key so far.
:func:`attention` takes such calls (``L <= 4``) to a split-K kernel that
spreads the keys over the threads; :class:`KVCache` hands it the keys and
values without a copy per token; :func:`rotary_embedding` gives the rotary
positions of Llama-type models; :func:`merge_attention` combines attention
computed over separate parts of the keys.
"""
from __future__ import annotations

from typing import Any, Sequence
import numpy as np

from . import _core
from ._validate import (ACCEPTED16, float_dtype as _float_dtype,
                        is_bfloat16 as _is_bfloat16, size as _size)
from ._types import Array, ArrayLike, DTypeLike

__all__ = ["merge_attention", "KVCache"]


def merge_attention(outs: Sequence[ArrayLike],
                    lses: Sequence[ArrayLike]) -> tuple[Array, Array]:
    """Merge attention computed over disjoint sets of keys.

    If ``outs[k]`` is attention over the k-th part of the keys and
    ``lses[k]`` the log-sum-exp of the scores each row saw there (-inf
    where it saw none; ``attention(..., return_lse=True)`` gives both),
    the result is attention over all the keys::

        lse = log(sum_k exp(lses[k]))
        out = sum_k exp(lses[k] - lse) * outs[k]

    computed in float64, the parts in order. A part of weight 0 adds
    nothing, not even a NaN it holds; a row whose every lse is -inf gets
    out 0 and lse -inf (``fully_masked="zero"``).

    Parameters
    ----------
    outs : sequence of array_like, each (..., L, Ev)
    lses : sequence of array_like, each (..., L)
        As many as `outs`; leading dimensions broadcast.

    Returns
    -------
    out : ndarray, shape (..., L, Ev)
    lse : ndarray, shape (..., L)

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.standard_normal((3, 2, 5, 8))        # (H, L|S, E)
    >>> def part(K, V):                                   # out and lse
    ...     s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(8)
    ...     lse = np.log(np.exp(s).sum(-1))
    ...     return np.exp(s - lse[..., None]) @ V, lse
    >>> (o1, l1), (o2, l2) = part(K[:, :2], V[:, :2]), part(K[:, 2:], V[:, 2:])
    >>> out, lse = attnpy.merge_attention([o1, o2], [l1, l2])
    >>> bool(np.allclose(out, attnpy.attention(Q, K, V)))
    True
    """
    fname = "merge_attention"
    try:  # a sequence of arrays, or one array stacking them on axis 0
        outs, lses = list(outs), list(lses)
    except TypeError:
        raise TypeError(f"{fname}: outs and lses must be sequences of "
                        "arrays") from None
    if len(outs) != len(lses):
        raise ValueError(f"{fname}: {len(outs)} outs but {len(lses)} lses")
    if not outs:
        raise ValueError(f"{fname}: nothing to merge (outs is empty)")
    outs = [_core.as_real(o, fname, f"outs[{k}]") for k, o in enumerate(outs)]
    lses = [_core.as_real(x, fname, f"lses[{k}]") for k, x in enumerate(lses)]
    return _core.merge(*_broadcast_parts(outs, lses, fname), fname=fname)


def _broadcast_parts(outs, lses, fname):
    """outs (..., L, Ev) and lses (..., L) checked and broadcast together."""
    if outs[0].ndim < 2:
        raise ValueError(f"{fname}: outs[0] must be (..., L, Ev), got shape "
                         f"{outs[0].shape}")
    L, Ev = outs[0].shape[-2:]
    for k, (o, x) in enumerate(zip(outs, lses)):
        if o.shape[-2:] != (L, Ev) or o.ndim < 2:
            raise ValueError(f"{fname}: outs[{k}] has shape {o.shape} but "
                             f"outs[0] has {outs[0].shape}: every part must "
                             f"be (..., {L}, {Ev})")
        if x.shape[-1:] != (L,):
            raise ValueError(f"{fname}: lses[{k}] has shape {x.shape}, not "
                             f"(..., {L}) to go with outs[{k}].shape="
                             f"{o.shape}")
    shapes = [o.shape[:-2] for o in outs] + [x.shape[:-1] for x in lses]
    try:
        lead = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{fname}: the leading (batch) dimensions of outs "
                         f"and lses do not broadcast: {shapes}") from None
    return ([np.broadcast_to(o, lead + (L, Ev)) for o in outs],
            [np.broadcast_to(x, lead + (L,)) for x in lses])


class KVCache:
    """A preallocated key/value cache for decoding token by token.

    Keys (batch, num_heads, max_len, head_dim) and values (batch,
    num_heads, max_len, value_dim) are allocated once; :meth:`append`
    writes new positions after the filled part and :attr:`keys` /
    :attr:`values` are views of the filled part (no copy, no reallocation
    per token) to pass to :func:`attention`.

    Parameters
    ----------
    batch, num_heads, max_len, head_dim : int
    dtype : float32 (default), float64, float16 or bfloat16
        The storage dtype. float16 and bfloat16 (``ml_dtypes.bfloat16``,
        or the string ``"bfloat16"``) halve the cache's memory; the
        attention kernels read them in 16 bits and accumulate in float32.
    value_dim : int, optional
        Features of a value row (default: head_dim).

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> cache = attnpy.KVCache(1, 2, max_len=16, head_dim=4)
    >>> rng = np.random.default_rng(0)
    >>> K, V = cache.append(rng.standard_normal((1, 2, 3, 4)),
    ...                     rng.standard_normal((1, 2, 3, 4)))  # a prompt
    >>> cache.length, K.shape
    (3, (1, 2, 3, 4))
    >>> q = rng.standard_normal((1, 2, 1, 4), dtype=np.float32)
    >>> K, V = cache.append(rng.standard_normal((1, 2, 1, 4)),
    ...                     rng.standard_normal((1, 2, 1, 4)))  # one token
    >>> attnpy.attention(q, K, V).shape
    (1, 2, 1, 4)
    >>> bool(np.shares_memory(cache.keys, K))
    True

    A float16 cache stores 16 bits; attention reads them as they are:

    >>> half = attnpy.KVCache(1, 2, max_len=16, head_dim=4, dtype=np.float16)
    >>> K, V = half.append(rng.standard_normal((1, 2, 3, 4)),
    ...                    rng.standard_normal((1, 2, 3, 4)))
    >>> K.dtype, attnpy.attention(q.astype(np.float16), K, V).dtype
    (dtype('float16'), dtype('float16'))
    """

    def __init__(self, batch: int, num_heads: int, max_len: int,
                 head_dim: int, *, dtype: DTypeLike = np.float32,
                 value_dim: int | None = None) -> None:
        fname = "KVCache"
        dims = [_size(batch, fname, "batch"),
                _size(num_heads, fname, "num_heads"),
                _size(max_len, fname, "max_len"),
                _size(head_dim, fname, "head_dim")]
        dv = dims[3] if value_dim is None else _size(value_dim, fname,
                                                      "value_dim")
        dt = _float_dtype(dtype, fname, sixteen=True)
        try:
            self._k = np.zeros(dims, dt)
            self._v = np.zeros(dims[:3] + [dv], dt)
        except (MemoryError, ValueError) as exc:
            raise MemoryError(f"{fname}: a cache of shape {tuple(dims)} "
                              f"({dt}) is too large to allocate") from exc
        self._n = 0

    @property
    def length(self) -> int:
        """Positions filled so far."""
        return self._n

    @property
    def max_len(self) -> int:
        """Positions the cache can hold."""
        return self._k.shape[2]

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._k.dtype

    def _view(self, a):
        view = a[:, :, :self._n]
        view.flags.writeable = False
        return view

    @property
    def keys(self) -> Array:
        """Read-only view of the filled keys, (batch, num_heads, length, head_dim)."""
        return self._view(self._k)

    @property
    def values(self) -> Array:
        """Read-only view of the filled values, (batch, num_heads, length, value_dim)."""
        return self._view(self._v)

    def append(self, k: ArrayLike, v: ArrayLike) -> tuple[Array, Array]:
        """Write `k`, `v` (batch, num_heads, T, ...) after the filled part.

        Parameters
        ----------
        k : array_like, shape (batch, num_heads, T, head_dim)
        v : array_like, shape (batch, num_heads, T, value_dim)
            The new tokens' keys and values (T of them), converted to the
            cache's dtype. ValueError when they do not fit.

        Returns
        -------
        keys, values : ndarray
            The views (:attr:`keys`, :attr:`values`) of the filled part,
            the new positions included.

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> cache = attnpy.KVCache(1, 2, 16, 4)
        >>> K, V = cache.append(np.ones((1, 2, 3, 4)), np.ones((1, 2, 3, 4)))
        >>> cache.length, K.shape
        (3, (1, 2, 3, 4))
        """
        fname = "KVCache.append"
        k, v = np.asarray(k), np.asarray(v)
        for name, a, full in (("k", k, self._k), ("v", v, self._v)):
            if a.dtype.kind not in "biuf" and not _is_bfloat16(a.dtype):
                raise TypeError(f"{fname}: {name} has dtype {a.dtype}; the "
                                f"cache holds real numbers ({ACCEPTED16}, "
                                "bool or integers, converted to the "
                                "cache's dtype)")
            want = full.shape[:2] + full.shape[3:]
            if a.ndim != 4 or a.shape[:2] + a.shape[3:] != want:
                raise ValueError(
                    f"{fname}: {name} must have shape ({want[0]}, {want[1]}, "
                    f"T, {want[2]}) for this cache, got {name}.shape="
                    f"{a.shape}")
        T = k.shape[2]
        if v.shape[2] != T:
            raise ValueError(f"{fname}: k has {T} positions but v has "
                             f"{v.shape[2]} (k.shape={k.shape}, "
                             f"v.shape={v.shape})")
        if self._n + T > self.max_len:
            raise ValueError(
                f"{fname}: the cache is full: it holds {self._n} of "
                f"max_len={self.max_len} positions and {T} more do not fit "
                f"(k.shape={k.shape}); reset() it or make a larger one")
        self._k[:, :, self._n:self._n + T] = k
        self._v[:, :, self._n:self._n + T] = v
        self._n += T
        return self.keys, self.values

    def reset(self) -> None:
        """Forget the filled part (length 0); the storage is kept.

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> cache = attnpy.KVCache(1, 1, 8, 2)
        >>> _ = cache.append(np.ones((1, 1, 5, 2)), np.ones((1, 1, 5, 2)))
        >>> cache.reset()
        >>> cache.length
        0
        """
        self._n = 0

    def __repr__(self):
        b, h, n, e = self._k.shape
        return (f"KVCache(batch={b}, num_heads={h}, length={self._n}, "
                f"max_len={n}, head_dim={e}, value_dim={self._v.shape[3]}, "
                f"dtype={self._k.dtype})")

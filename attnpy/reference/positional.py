"""Twins of the positional family: sinusoidal encodings, rotary embedding."""
import numpy as np

from ._common import (_quiet, _store, result_dtype)


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
    pe = _pe_table(offset + np.arange(T, dtype=np.float64), D, base)
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
    dtype = result_dtype(x)
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

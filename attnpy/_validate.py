"""The argument checks the Python wrappers share (private).

Each check raises TypeError / ValueError naming the public function and the
argument, as every attnpy error does. ``public`` wraps a public function so
that the usual slips of people coming from the tutorials or PyTorch (a mask
passed by position, ``is_causal=``, ``attn_mask=``) get a message that
says what to write instead of Python's bare one.
"""
from __future__ import annotations

import decimal
import functools
import inspect
import operator
from typing import Any, Callable, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])

#: keyword names from other libraries -> what attnpy calls them
KEYWORD_HINTS = {
    "is_causal": "causal=True (or causal='bottom_right')",
    "attn_mask": ("mask= for a keep-mask (True/nonzero = may attend) or "
                  "bias= for an additive float mask (0 = attend, -inf = "
                  "blocked)"),
    "key_padding_mask": ("mask=attnpy.padding_mask(lengths, S) (True = "
                         "may attend)"),
    "dropout_p": "nothing: attnpy has no dropout",
    "dim": "axis=",
    "need_weights": "scaled_dot_product_attention for the weights",
}


def integer(value, fname, arg):
    """An int argument (bool and float rejected, like NumPy)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fname}: {arg} must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{fname}: {arg} must be an integer, got "
                        f"{type(value).__name__}") from None


def size(value, fname, arg):
    """A non-negative int argument."""
    n = integer(value, fname, arg)
    if n < 0:
        raise ValueError(f"{fname}: {arg} must be >= 0, got {n}")
    return n


def flag(value, fname, arg):
    """A True / False argument (NumPy's bool, and the integers 0 and 1, too;
    an array or anything else is refused)."""
    if not (isinstance(value, (bool, np.bool_))
            or (isinstance(value, (int, np.integer)) and value in (0, 1))):
        raise TypeError(f"{fname}: {arg} must be True or False, got "
                        f"{type(value).__name__}")
    return bool(value)


def real(value, fname, arg):
    """A real number argument as a float (str, bytes, complex rejected)."""
    if isinstance(value, (str, bytes, complex, np.complexfloating)):
        raise TypeError(f"{fname}: {arg} must be a real number, got "
                        f"{type(value).__name__}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: {arg} must be a real number, got "
                        f"{type(value).__name__}") from None


def offset_base(offset, base, fname):
    """The offset (int >= 0, a float64 number) and base (real > 0) of
    position encodings."""
    offset = size(offset, fname, "offset")
    try:
        float(offset)              # positions are float64 numbers
    except OverflowError:
        o = format(decimal.Decimal(offset), ".3e")   # not 400 digits
        raise ValueError(f"{fname}: offset {o} "
                         f"is past the largest float64; positions are "
                         f"float64 numbers") from None
    base = real(base, fname, "base")
    if not base > 0:
        raise ValueError(f"{fname}: base must be > 0, got {base}")
    return offset, base


def axis(value, nd, fname):
    """`value` (an int, negative counts from the end) as an axis of an
    nd-dim array, in [0, nd); TypeError / AxisError naming `fname`."""
    value = integer(value, fname, "axis")
    if not -nd <= value < nd:
        raise np.exceptions.AxisError(
            f"{fname}: axis {value} is out of bounds for an array of "
            f"dimension {nd}")
    return value % nd


def empty(shape, dtype, fname, what="the result"):
    """np.empty, with allocation errors that name the function."""
    try:
        return np.empty(shape, dtype=dtype)
    except MemoryError:
        raise MemoryError(f"{fname}: {what} of shape {shape} is too large to "
                          f"allocate") from None
    except ValueError as exc:
        raise ValueError(f"{fname}: {what} of shape {shape} is too large to "
                         f"allocate ({exc})") from None


#: the storage dtypes the attention functions take, for messages
ACCEPTED16 = "float16, bfloat16, float32 or float64"


def is_bfloat16(dtype):
    """Is `dtype` ml_dtypes.bfloat16? Read off the dtype itself (kind 'V',
    two bytes, scalar type ``bfloat16`` from ml_dtypes), so ml_dtypes is
    never imported here: such a dtype only exists once the user has."""
    t = getattr(dtype, "type", None)
    return (getattr(dtype, "kind", None) == "V"
            and getattr(dtype, "itemsize", None) == 2 and t is not None
            and getattr(t, "__name__", None) == "bfloat16"
            and str(getattr(t, "__module__", "")).split(".")[0]
            == "ml_dtypes")


def is_16bit(dtype):
    """float16 or bfloat16."""
    return dtype == np.float16 or is_bfloat16(dtype)


def float_dtype(dtype, fname, sixteen=False):
    """np.dtype(dtype), which must be float32 or float64 (or, with
    `sixteen`, float16 or bfloat16: the string "bfloat16" imports
    ml_dtypes, the attnpy[bf16] extra)."""
    want = ACCEPTED16 if sixteen else "float32 or float64"
    if sixteen and isinstance(dtype, str) and dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError(f"{fname}: dtype='bfloat16' needs ml_dtypes "
                            "(pip install \"attnpy[bf16]\")") from None
        dtype = ml_dtypes.bfloat16
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{fname}: dtype must be {want}, got "
                        f"{dtype!r}") from None
    if dt in (np.dtype(np.float32), np.dtype(np.float64)) or (
            sixteen and is_16bit(dt)):
        return dt
    raise TypeError(f"{fname}: dtype must be {want}, got {dt}")


def _as_result(dt, bf):
    """A promoted dtype as a result: float16/float32/float64/bfloat16 stay,
    longdouble, bool and integers become float64."""
    if bf is not None and is_bfloat16(dt):
        return bf.newbyteorder("=")
    if dt in (np.float16, np.float32):
        return np.dtype(dt.type)            # native byte order
    return np.dtype(np.float64)


def result_dtype(*dtypes):
    """The dtype of a result computed from arrays of `dtypes` (None
    skipped), as the C binding chooses it: ``np.result_type``, with
    longdouble, bool and integers made float64; where NumPy has no common
    dtype (bfloat16 with float16 or a wide integer), float32, or float64
    where the other dtypes promote to float64."""
    dts = [np.dtype(d) for d in dtypes if d is not None]
    if not dts:
        return np.dtype(np.float32)
    bf = next((d for d in dts if is_bfloat16(d)), None)
    try:
        return _as_result(np.result_type(*dts), bf)
    except TypeError:          # DTypePromotionError
        rest = [d for d in dts if not is_bfloat16(d)]
        if bf is None or not rest:
            raise
    r = _as_result(np.result_type(*rest), None)
    return np.dtype(np.float32) if r == np.float16 else r


def check_out(out, shape, dtype, fname):
    """out= of a result computed in NumPy: exactly shape and dtype."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{fname}: out must be a NumPy array, got "
                        f"{type(out).__name__}")
    if out.shape != tuple(shape):
        raise ValueError(f"{fname}: out has shape {out.shape} but the result "
                         f"has shape {tuple(shape)}")
    if out.dtype != dtype:
        raise TypeError(f"{fname}: out has dtype {out.dtype} but the result "
                        f"has dtype {dtype}")
    return out


def num_heads(h, d, fname):
    """num_heads of a d-wide model: 1 <= h <= d (or h = 1 for d = 0), d
    divisible by h."""
    if h < 1:
        raise ValueError(f"{fname}: num_heads must be positive, got {h}")
    if h > max(d, 1):
        raise ValueError(f"{fname}: num_heads={h} must be between 1 and "
                         f"d_model={d}")
    if d % h:
        raise ValueError(f"{fname}: d_model={d} is not divisible by "
                         f"num_heads={h}")
    return h


def keep_mask(mask, fname):
    """A NumPy mask checked as the C binding checks one (for callers that
    must fail before the binding sees it, e.g. lazily evaluated graphs):
    no negative entries (an additive mask is a bias), and a float mask
    holds only 0 and 1 (weights are a bias too)."""
    m = np.asarray(mask)
    flt = m.dtype.kind == "f" or m.dtype.name == "bfloat16"
    if m.dtype.kind not in "if" and not flt:
        return m
    if np.any(m < 0):
        e = float(m[m < 0].flat[0])
        raise ValueError(f"{fname}: mask holds negative values (e.g. {e!r}), "
                         f"but mask is a keep-mask: nonzero/True = may "
                         f"attend. An additive mask (0 = attend, -inf = "
                         f"blocked, like PyTorch's float attn_mask) goes in "
                         f"bias= instead (mask.shape={m.shape})")
    if flt:
        bad = ~((m == 0) | (m == 1))
        if np.any(bad):
            e = float(m[bad].flat[0])
            raise ValueError(
                f"{fname}: mask holds values other than 0 and 1 (e.g. "
                f"{e!r}), but mask is a keep-mask: a float mask must be 0 "
                f"(blocked) or 1 (may attend), like the tutorials' np.tril "
                f"mask. Weights or an additive mask (0 = attend, -inf = "
                f"blocked) go in bias= instead (mask.shape={m.shape})")
    return m


def _call_hint(fname, sig, args, kwargs):
    """The message for a call that does not bind to `sig`, or None."""
    for k in kwargs:
        if k not in sig.parameters and k in KEYWORD_HINTS:
            return (f"{fname}: unexpected keyword argument {k!r}; attnpy "
                    f"spells it {KEYWORD_HINTS[k]}")
    params = list(sig.parameters.values())
    npos = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in params)
    kwonly = [p.name for p in params if p.kind == p.KEYWORD_ONLY]
    if len(args) > npos and kwonly and not any(
            p.kind == p.VAR_POSITIONAL for p in params):
        extra = kwonly[:len(args) - npos]
        shown = [p.name for p in params[:npos] if p.name != "self"]
        call = ", ".join(shown + [f"{n}=..." for n in extra])
        which = " and ".join(extra) if len(extra) < 3 else \
            ", ".join(extra) + ", ..."
        verb = "is" if len(extra) == 1 else "are"
        return (f"{fname}() takes {len(shown)} positional arguments but "
                f"{len(args) - (npos - len(shown))} were given: {which} "
                f"{verb} keyword-only, as in {fname.split('.')[-1]}({call})")
    return None


def public(fname: str) -> Callable[[F], F]:
    """Decorator of a public function or method named `fname` in messages:
    a call that does not bind to its signature raises TypeError with a
    hint (keyword-only arguments, other libraries' keyword names). A call
    that binds costs one more Python frame, nothing else."""
    def wrap(f: F) -> F:
        sig = inspect.signature(f)

        @functools.wraps(f)
        def call(*args, **kwargs):
            try:
                return f(*args, **kwargs)
            except TypeError:
                try:
                    sig.bind(*args, **kwargs)
                except TypeError:
                    hint = _call_hint(fname, sig, args, kwargs)
                    if hint is not None:
                        raise TypeError(hint) from None
                raise
        return call  # type: ignore[return-value]
    return wrap

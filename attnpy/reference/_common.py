"""The reference twins' shared rules: compute dtypes, out=, quiet NaN."""
import numpy as np


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


def is_16bit(dtype):
    """float16, or ml_dtypes.bfloat16 (told by the dtype alone)."""
    dtype = np.dtype(dtype)
    return dtype == np.float16 or (dtype.kind == "V" and dtype.itemsize == 2
                                   and dtype.type.__name__ == "bfloat16")


def result_dtype(*arrays):
    """The result dtype of the functions that keep 16-bit data (softmax,
    rotary_embedding, merge_attention's out, the layer functions).

    np.result_type of the inputs, float16, bfloat16 and float32 kept,
    everything else (float64, long double, bool, integers) float64. Where
    NumPy has no common dtype (bfloat16 with float16, or with a wide
    integer): float32, or float64 where the other inputs promote to
    float64. A 16-bit result is computed in float32 by attnpy and in
    float64 by these twins, then rounded once.

    >>> result_dtype(np.zeros(2, np.float16), np.zeros(2, np.float16))
    dtype('float16')
    >>> result_dtype(np.zeros(2, np.float16), np.zeros(2, np.float32))
    dtype('float32')
    >>> result_dtype(np.zeros(2, np.uint8), np.zeros(2, np.float32))
    dtype('float32')
    """
    dts = [np.asarray(a).dtype for a in arrays]
    for dt in dts:
        if not is_16bit(dt):
            _check_real("input", dt)
    dts = [d.newbyteorder("=") for d in dts]   # byte order aside
    if not dts:
        return np.dtype(np.float32)
    try:
        rt = np.result_type(*dts)
    except TypeError:                       # DTypePromotionError
        rest = [d for d in dts if not is_16bit(d) or d == np.float16]
        rt = np.result_type(*rest)
        return np.dtype(np.float32 if rt in (np.float16, np.float32)
                        else np.float64)
    if rt == np.float32 or is_16bit(rt):
        return rt
    return np.dtype(np.float64)


def grad_dtype(a, dtype):
    """The dtype of the gradient for input `a` of a call whose result dtype
    is `dtype`: a's own dtype when a is 16-bit and the call computes in
    float32, else `dtype`."""
    own = np.asarray(a).dtype
    if is_16bit(own) and (dtype == np.float32 or is_16bit(dtype)):
        return own
    return dtype


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

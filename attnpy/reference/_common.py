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

"""Test arrays in every memory layout and dtype attnpy must accept.

In the spirit of bottleneck's array generator: the C binding has to cope
with whatever NumPy hands it, so the tests feed it the same values laid out
in memory in many ways, and compare with attnpy.reference.

    random_array(rng, shape, dtype, special=False)   random values
    layouts(a)            (name, view) pairs holding exactly a's values:
                          contiguous, fortran, strided, transposed,
                          reversed (negative strides), byteswapped,
                          unaligned
    broadcast_view(a)     a view with stride 0 along the first axis
    all_arrays(rng)       (description, array) over shapes x dtypes x layouts,
                          0-size, float16/int/bool, NaN/inf and broadcast
    strided_empty(shape, dtype)   an uninitialised non-contiguous array
    transposed_empty(shape, dtype) an uninitialised transposed view
"""
import numpy as np

FLOAT_DTYPES = (np.float32, np.float64)
OTHER_DTYPES = (np.float16, np.int32, np.int64, np.uint8, np.bool_)

# (rtol, atol) for comparing attnpy with attnpy.reference, by result dtype.
TOLERANCES = {
    np.dtype(np.float32): (1e-5, 2e-6),
    np.dtype(np.float64): (1e-12, 1e-13),
    # float16 results: attnpy rounds its float32 result once, the twins
    # their float64 one: at most an ulp of float16 (2^-10 relative) apart
    np.dtype(np.float16): (2e-3, 1e-3),
}


def random_array(rng, shape, dtype=np.float64, special=False):
    """Random values of `dtype`: normals for floats, small ints, random bools.

    special=True plants NaN, +inf and -inf at random places (floats only).
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.7
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -3
        return rng.integers(lo, 4, size=shape).astype(dtype)
    a = rng.standard_normal(shape).astype(dtype)
    if special and a.size:
        flat = a.reshape(-1)
        picks = rng.choice(a.size, size=min(3, a.size), replace=False)
        for k, value in zip(picks, (np.nan, np.inf, -np.inf)):
            flat[k] = value
    return a


def _reverse_all(a):
    return a[tuple(slice(None, None, -1) for _ in range(a.ndim))]


def layouts(a):
    """Yield (name, array) pairs: the values of `a` in different layouts.

    Every yielded array compares equal to `a` (NaN aside); only how the
    values sit in memory differs.
    """
    a = np.asarray(a)
    yield "contiguous", np.ascontiguousarray(a)
    if a.ndim >= 2:
        yield "fortran", np.asfortranarray(a)
        # the last two axes swapped in memory: what Q.T or K.swapaxes gives
        t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        yield "transposed", np.swapaxes(t, -1, -2)
    if a.ndim >= 1:
        # every other element along every axis of a twice-as-big buffer
        big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
        view = big[tuple(slice(None, None, 2) for _ in range(a.ndim))]
        view[...] = a
        yield "strided", view
        # negative strides: a reversed copy seen reversed again
        yield "reversed", _reverse_all(np.ascontiguousarray(_reverse_all(a)))
    if a.dtype.itemsize > 1:
        swapped = a.astype(a.dtype.newbyteorder("S"))
        yield "byteswapped", swapped
        # data starting one byte past an aligned address
        buf = np.zeros(a.nbytes + 1, dtype=np.uint8)
        unaligned = buf[1:].view(a.dtype).reshape(a.shape)
        unaligned[...] = a
        yield "unaligned", unaligned


def layout_names(ndim=2, itemsize=8):
    """The names layouts() yields for an array of this ndim/itemsize."""
    probe = np.zeros((1,) * ndim, dtype="u%d" % itemsize if itemsize > 1
                     else np.uint8)
    return [name for name, _ in layouts(probe)]


SHAPES = [(4,), (3, 5), (2, 3, 4), (2, 1, 3, 6), (1, 1), (0,), (0, 4),
          (3, 0), (2, 0, 3)]


def all_arrays(rng, shapes=SHAPES, dtypes=FLOAT_DTYPES + OTHER_DTYPES,
               special=True):
    """Yield (description, array) over shapes x dtypes x layouts, plus a
    broadcast (stride 0) view and, for floats, NaN/inf-containing arrays
    when `special` (bottleneck's array_iter, for attnpy)."""
    for shape in shapes:
        for dtype in dtypes:
            dt = np.dtype(dtype)
            variants = [("", random_array(rng, shape, dt))]
            if special and dt.kind == "f":
                variants.append((" nan/inf",
                                 random_array(rng, shape, dt, special=True)))
            for tag, a in variants:
                for name, v in layouts(a):
                    yield f"{dt.name}{shape} {name}{tag}", v
                if a.ndim and a.shape[0] > 1:
                    yield f"{dt.name}{shape} broadcast{tag}", broadcast_view(a)


def broadcast_view(a):
    """A read-only view of a's shape whose first axis has stride 0.

    Its values are a[0] repeated, so compare against the reference on this
    very view, not on `a`.
    """
    a = np.asarray(a)
    return np.broadcast_to(a[:1], a.shape)


def transposed_empty(shape, dtype):
    """A writeable array of `shape` whose last two axes are swapped in memory
    (not C-contiguous when the last two extents exceed 1), filled with a
    sentinel so that unwritten elements show."""
    shape = tuple(shape)
    base = np.full(shape[:-2] + (shape[-1], shape[-2]), 12345, dtype=dtype)
    return np.swapaxes(base, -1, -2)


def strided_empty(shape, dtype):
    """A writeable array of `shape` taking every other element of a bigger
    buffer, filled with a sentinel."""
    big = np.full(tuple(2 * n for n in shape), 12345, dtype=dtype)
    return big[tuple(slice(None, None, 2) for _ in shape)]


def snapshot(*arrays):
    """Byte-for-byte record of arrays (and of the buffers they view)."""
    record = []
    for a in arrays:
        if a is None:
            record.append(None)
            continue
        a = np.asarray(a)
        base = a.base if isinstance(a.base, np.ndarray) else None
        record.append((a.tobytes(), a.shape, a.strides, a.dtype,
                       None if base is None else base.tobytes()))
    return record

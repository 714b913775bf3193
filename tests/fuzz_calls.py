#!/usr/bin/env python3
"""Crash fuzzer for attnpy's public API.

Makes many random calls -- valid and invalid -- to every public function:
arguments come from a pool of arrays of odd dtypes, shapes and strides
(0-size, transposed, reversed, stride-0 broadcast, unaligned, read-only,
byte-swapped, NaN/inf), None, strings, huge and negative ints, nested lists,
dicts, and out= arrays (right and wrong, aliasing inputs).

A call may succeed or raise ValueError, TypeError or MemoryError (AxisError
is a ValueError). Anything else is a failure, and so is:
  * a successful call whose result differs from attnpy.reference (when the
    reference accepts the same arguments and the values are moderate),
  * an out= call that does not return its out array,
  * an input array modified by a call that was not told to write it,
  * a crash (the process dies: the exit code says so; faulthandler prints
    the Python stack, and --log prints every call before it is made).

Every call i is generated from its own generator seeded by (seed, i), so
``--only i`` replays exactly one call.

    python tests/fuzz_calls.py --calls 10000 --seed 1
    python tests/fuzz_calls.py --seed 1 --only 4321 --log

The last line is a summary:
    fuzz_calls: seed=1 calls=10000 ok=... expected_errors=...
      unexpected_errors=0 failures=0 ...
and the exit code is 0 only when there were no failures.

The process limits its own address space (RLIMIT_AS, current + 4 GiB) so a
request for a huge array fails with MemoryError whatever the machine's
overcommit policy; --no-rlimit turns that off (for AddressSanitizer runs,
which need a huge address space: use ASAN_OPTIONS max_allocation_size and
allocator_may_return_null=1 there instead).
"""
import argparse
import faulthandler
import os
import re
import sys
import time
import traceback
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import attnpy  # noqa: E402
from attnpy import reference as ref  # noqa: E402
from _registry import REGISTRY  # noqa: E402  (tests/ is sys.path[0])

EXPECTED = (ValueError, TypeError, MemoryError)

# ---------------------------------------------------------------------------
# the pool
# ---------------------------------------------------------------------------

DIMS = [0, 1, 1, 2, 2, 3, 3, 4, 5]
GOOD_DTYPES = [np.float64, np.float32, np.float64, np.float32, np.float16,
               np.int8, np.int64, np.uint8, bool, np.longdouble, ">f8", ">f4"]
BAD_DTYPES = [np.complex64, np.complex128, object, "U3", "S2", "M8[s]",
              "m8[ms]", "V8", [("a", "f8"), ("b", "i4")]]
LAYOUTS = ["C", "C", "C", "T", "neg", "step", "F", "bcast", "unaligned",
           "readonly"]
HUGE_INTS = [2 ** 31, 2 ** 40, 2 ** 62, 2 ** 63, 2 ** 64, 10 ** 30,
             -(2 ** 63), -(2 ** 31), -1, -7]
SCALARS = [None, None, "", "abc", "top_left", "bottom_right", "zero",
           "uniform", "nan", "raise", "sideways", 0, 1, 2, 3, 5, 8, True,
           False, 0.0, -1.5, 2.5, float("nan"), float("inf"), -float("inf"),
           1e308, 1j, np.int64(3), np.float32(0.5), np.True_,
           [[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0]], [["a", "b"]],
           [], [[]], (2, 3), {"a": 1}, {1.0, 2.0}, object(), b"xy",
           slice(1, 2), Ellipsis, np.float64] + HUGE_INTS


def fill(rng, shape, dtype, special):
    """Values for an array of `shape`/`dtype` (moderate, maybe NaN/inf)."""
    x = np.asarray(rng.standard_normal(shape) * rng.choice([1.0, 1.0, 3.0, 1e3]))
    if special and x.size:
        pick = rng.random(shape) < 0.2
        x[pick] = rng.choice([np.nan, np.inf, -np.inf, 1e30, -1e30])
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dt.kind == "b":
            return x > 0
        if dt.kind in "iu":
            return np.nan_to_num(x, posinf=100, neginf=-100).clip(-100, 100) \
                .astype(dt)
        if dt.kind in "fc":
            return x.astype(dt)
        if dt.kind == "O":
            return x.astype(object)
        if dt.kind in "US":
            return x.round(1).astype(dt)
        if dt.kind in "Mm":
            return np.nan_to_num(x, nan=0, posinf=9, neginf=-9).astype(
                np.int64).astype(dt)
        return np.zeros(shape, dt)


def relayout(rng, a, kind):
    """`a` with the same values but laid out as `kind` says."""
    if kind == "T" and a.ndim >= 2:
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if kind == "neg" and a.ndim >= 1:
        idx = (slice(None, None, -1),) * a.ndim
        return np.ascontiguousarray(a[idx])[idx]
    if kind == "step" and a.ndim >= 1:
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if kind == "F":
        return np.asfortranarray(a)
    if kind == "bcast" and a.ndim >= 1:
        return np.broadcast_to(a[:1] if a.shape[0] else a, a.shape) \
            if a.shape[0] > 1 else np.broadcast_to(a, a.shape)
    if kind == "unaligned" and a.dtype.itemsize > 1 and a.dtype.kind != "O":
        buf = np.zeros(a.nbytes + 1, np.uint8)
        u = np.frombuffer(buf.data, a.dtype, a.size, 1).reshape(a.shape)
        u[...] = a
        return u
    if kind == "readonly":
        a = a.copy()
        a.flags.writeable = False
        return a
    return a.copy()


def rand_array(rng, shape=None, dtype=None, layout=None, bad_dtype_p=0.05,
               special_p=0.15):
    if shape is None:
        shape = tuple(int(rng.choice(DIMS)) for _ in range(rng.integers(0, 5)))
    if dtype is None:
        pool = BAD_DTYPES if rng.random() < bad_dtype_p else GOOD_DTYPES
        dtype = pool[rng.integers(len(pool))]
    if layout is None:
        layout = LAYOUTS[rng.integers(len(LAYOUTS))]
    a = np.asarray(fill(rng, shape, dtype, rng.random() < special_p))
    return relayout(rng, a, layout)


def pool_value(rng):
    """Anything at all: a random array or a random Python value."""
    if rng.random() < 0.5:
        return rand_array(rng, bad_dtype_p=0.3)
    return SCALARS[rng.integers(len(SCALARS))]


def lead(rng, batch):
    n = int(rng.integers(0, len(batch) + 1))
    return tuple(d if rng.random() < 0.7 else 1 for d in batch[len(batch) - n:])


# ---------------------------------------------------------------------------
# call specs: (fname, args, kwargs, ref_fn, writes) per public function
# ---------------------------------------------------------------------------

def maybe_mutate(rng, args, kwargs, names, p=0.4):
    """Replace a few arguments by pool values (invalid calls)."""
    if rng.random() < p:
        for _ in range(int(rng.integers(1, 3))):
            k = names[rng.integers(len(names))]
            v = pool_value(rng)
            if isinstance(k, int):
                if k < len(args):
                    args[k] = v
            else:
                kwargs[k] = v
    return args, kwargs


def gen_attention(rng, with_weights):
    batch = tuple(int(rng.choice([0, 1, 2, 3])) for _ in range(rng.integers(0, 3)))
    L, S, E, Ev = (int(rng.choice(DIMS)) for _ in range(4))
    dt = [np.float64, np.float32][rng.integers(2)]

    def arr(shape):
        d = dt if rng.random() < 0.8 else None
        return rand_array(rng, lead(rng, batch) + shape, dtype=d)

    Q, K, V = arr((L, E)), arr((S, E)), arr((S, Ev))
    kw = {}
    if rng.random() < 0.5:
        shape = lead(rng, batch) + (int(rng.choice([L, 1])),
                                    int(rng.choice([S, 1])))
        kind = rng.integers(3)
        m = rng.random(shape) < rng.choice([0.0, 0.5, 0.9, 1.0])
        kw["mask"] = relayout(rng, [m, m.astype(float), m.astype(np.int8)][kind],
                              LAYOUTS[rng.integers(len(LAYOUTS))])
    if rng.random() < 0.4:
        shape = lead(rng, batch) + (int(rng.choice([L, 1])),
                                    int(rng.choice([S, 1])))
        b = rng.standard_normal(shape)
        b[rng.random(shape) < rng.choice([0.0, 0.3, 1.0])] = -np.inf
        kw["bias"] = relayout(rng, b.astype(dt),
                              LAYOUTS[rng.integers(len(LAYOUTS))])
    if rng.random() < 0.5:
        kw["causal"] = [False, True, "top_left", "bottom_right", None,
                        np.True_][rng.integers(6)]
    if rng.random() < 0.5:
        kw["fully_masked"] = ["zero", "uniform", "nan", "raise"][rng.integers(4)]
    if rng.random() < 0.3:
        kw["scale"] = [None, 0.5, 1, -2.0, 0.0, np.float32(0.25),
                       float("nan")][rng.integers(7)]
    # out= / weights_out=: right, wrong, or aliasing an input
    try:
        shape = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2],
                                    *[kw[k].shape[:-2] for k in ("mask", "bias")
                                      if k in kw])
    except ValueError:
        shape = Q.shape[:-2]
    ct = dt
    if rng.random() < 0.3:
        kw["out"] = relayout(rng, np.zeros(shape + (L, Ev), ct),
                             LAYOUTS[rng.integers(len(LAYOUTS))])
    if with_weights and rng.random() < 0.3:
        kw["weights_out"] = relayout(rng, np.zeros(shape + (L, S), ct),
                                     LAYOUTS[rng.integers(len(LAYOUTS))])
    if rng.random() < 0.1:
        cands = [Q, K, V] + [kw[k] for k in ("mask", "bias", "out")
                             if k in kw]
        kw["out"] = cands[rng.integers(len(cands))]
    if with_weights and rng.random() < 0.08:
        if "out" in kw:
            kw["weights_out"] = kw["out"]
        elif "bias" in kw:
            kw["weights_out"] = kw["bias"]
    args = [Q, K, V]
    names = [0, 1, 2, "mask", "bias", "causal", "fully_masked", "scale",
             "out"] + (["weights_out"] if with_weights else [])
    return maybe_mutate(rng, args, kw, names)


def spec_attention(rng):
    a, kw = gen_attention(rng, False)
    return "attention", attnpy.attention, a, kw, ref.attention, ("out",)


def spec_sdpa(rng):
    a, kw = gen_attention(rng, True)
    return ("scaled_dot_product_attention",
            attnpy.scaled_dot_product_attention, a, kw,
            ref.scaled_dot_product_attention, ("out", "weights_out"))


def spec_softmax(rng):
    x = rand_array(rng)
    kw = {}
    if rng.random() < 0.7 and x.ndim:
        kw["axis"] = int(rng.integers(-x.ndim, x.ndim))
    if rng.random() < 0.3:
        kw["out"] = [x, relayout(rng, np.zeros(x.shape), "T"),
                     np.zeros(x.shape, np.float32)][rng.integers(3)]
    a, kw = maybe_mutate(rng, [x], kw, [0, "axis", "out"])
    return "softmax", attnpy.softmax, a, kw, ref.softmax, ("out",)


def spec_softmax_backward(rng):
    y = rand_array(rng)
    dy = rand_array(rng, y.shape) if rng.random() < 0.9 else rand_array(rng)
    kw = {}
    if rng.random() < 0.7 and y.ndim:
        kw["axis"] = int(rng.integers(-y.ndim, y.ndim))
    if rng.random() < 0.3:
        kw["out"] = [dy, relayout(rng, np.zeros(y.shape), "T"),
                     np.zeros(y.shape, np.float32)][rng.integers(3)]
    a, kw = maybe_mutate(rng, [dy, y], kw, [0, 1, "axis", "out"])
    return ("softmax_backward", attnpy.softmax_backward, a, kw,
            ref.softmax_backward, ("out",))


def spec_softmax_jacobian(rng):
    y = rand_array(rng)
    kw = {}
    if rng.random() < 0.7 and y.ndim:
        kw["axis"] = int(rng.integers(-y.ndim, y.ndim))
    a, kw = maybe_mutate(rng, [y], kw, [0, "axis"])
    return ("softmax_jacobian", attnpy.softmax_jacobian, a, kw,
            ref.softmax_jacobian, ())


def spec_create_causal_mask(rng):
    a, kw = maybe_mutate(rng, [int(rng.choice(DIMS))], {}, [0])
    return ("create_causal_mask", attnpy.create_causal_mask, a, kw,
            ref.create_causal_mask, ())


def spec_causal_mask(rng):
    a = [int(rng.choice(DIMS))]
    kw = {}
    if rng.random() < 0.5:
        a.append(int(rng.choice(DIMS)))
    if rng.random() < 0.5:
        kw["align"] = ["top_left", "bottom_right"][rng.integers(2)]
    a, kw = maybe_mutate(rng, a, kw, [0, 1, "align"])
    return "causal_mask", attnpy.causal_mask, a, kw, ref.causal_mask, ()


def spec_padding_mask(rng):
    S = int(rng.choice(DIMS))
    n = int(rng.integers(0, 4))
    a = [rng.integers(0, S + 1, n).tolist(), S]
    a, kw = maybe_mutate(rng, a, {}, [0, 1])
    return "padding_mask", attnpy.padding_mask, a, kw, ref.padding_mask, ()


def spec_positional_encoding(rng):
    a = [int(rng.choice(DIMS + [7, 16])), int(rng.choice(DIMS + [7, 16]))]
    kw = {}
    if rng.random() < 0.3:
        kw["base"] = [10000.0, 2, 1e6, 0.5][rng.integers(4)]
    if rng.random() < 0.3:
        kw["dtype"] = [np.float32, np.float64, "float32"][rng.integers(3)]
    if rng.random() < 0.2:
        kw["out"] = relayout(rng, np.zeros((a[0], a[1]),
                                           kw.get("dtype", np.float64)),
                             LAYOUTS[rng.integers(len(LAYOUTS))])
    a, kw = maybe_mutate(rng, a, kw, [0, 1, "base", "dtype", "out"])
    return ("positional_encoding", attnpy.positional_encoding, a, kw,
            ref.positional_encoding, ("out",))


def spec_add_positional_encoding(rng):
    x = rand_array(rng, dtype=[np.float32, np.float64, None][rng.integers(3)])
    kw = {}
    if rng.random() < 0.4:
        kw["offset"] = int(rng.choice([0, 1, 5, 1000, 2 ** 40]))
    if rng.random() < 0.2:
        kw["base"] = [10000.0, 2.0][rng.integers(2)]
    a, kw = maybe_mutate(rng, [x], kw, [0, "offset", "base"])
    return ("add_positional_encoding", attnpy.add_positional_encoding, a, kw,
            ref.add_positional_encoding, (0,))


def spec_split_heads(rng):
    H = int(rng.choice([1, 2, 3, 4]))
    shape = tuple(int(rng.choice(DIMS)) for _ in range(rng.integers(1, 4)))
    x = rand_array(rng, shape + (H * int(rng.choice(DIMS)),))
    a, kw = maybe_mutate(rng, [x, H], {}, [0, 1])
    return "split_heads", attnpy.split_heads, a, kw, ref.split_heads, ()


def spec_combine_heads(rng):
    x = rand_array(rng)
    kw = {}
    if rng.random() < 0.3 and x.ndim >= 3:
        *lead_, H, T, dk = x.shape
        kw["out"] = relayout(rng, np.zeros(tuple(lead_) + (T, H * dk)),
                             LAYOUTS[rng.integers(len(LAYOUTS))])
    a, kw = maybe_mutate(rng, [x], kw, [0, "out"])
    return ("combine_heads", attnpy.combine_heads, a, kw, ref.combine_heads,
            ("out",))


def spec_set_num_threads(rng):
    a = [int(rng.choice([1, 1, 2, 3, 4]))]
    a, kw = maybe_mutate(rng, a, {}, [0], p=0.5)
    return "set_num_threads", attnpy.set_num_threads, a, kw, None, ()


def spec_set_isa(rng):
    names = attnpy.isas() + ["auto"]
    a = [names[rng.integers(len(names))]]
    a, kw = maybe_mutate(rng, a, {}, [0], p=0.5)
    return "set_isa", attnpy.set_isa, a, kw, None, ()


def spec_mha(rng):
    """Construct, then forward / __call__ / assign a weight."""
    d = int(rng.choice([0, 2, 4, 6, 8]))
    h = int(rng.choice([1, 2, 3, 4]))
    seed = int(rng.integers(0, 1000))
    dtype = [np.float64, np.float32][rng.integers(2)]
    init_a, init_kw = maybe_mutate(rng, [d, h], {"seed": seed, "dtype": dtype},
                                   [0, 1, "seed", "dtype"], p=0.15)
    what = ["forward", "call", "assign"][rng.integers(3)]
    batch = tuple(int(rng.choice([1, 2])) for _ in range(rng.integers(0, 2)))
    X = rand_array(rng, batch + (int(rng.choice(DIMS)), d), dtype=dtype,
                   bad_dtype_p=0.02)
    if what == "forward":
        a, kw = [X], {}
        if rng.random() < 0.4:
            kw["causal"] = [True, False, "bottom_right"][rng.integers(3)]
        a, kw = maybe_mutate(rng, a, kw, [0, "mask", "causal"])
    elif what == "call":
        mem = rand_array(rng, batch + (int(rng.choice(DIMS)), d), dtype=dtype,
                         bad_dtype_p=0.02)
        a, kw = [X, mem], {"need_weights": bool(rng.integers(2))}
        a, kw = maybe_mutate(rng, a, kw, [0, 1, 2, "mask", "causal"])
    else:
        a = ["W_" + "qkvo"[rng.integers(4)],
             rand_array(rng, (d, d), bad_dtype_p=0.1)]
        a, kw = maybe_mutate(rng, a, {}, [1], p=0.3)

    def call(*args, **kw):
        m = attnpy.MultiHeadAttention(*init_a, **init_kw)
        if what == "forward":
            return m.forward(*args, **kw)
        if what == "call":
            return m(*args, **kw)
        setattr(m, args[0], args[1])
        return m

    def reference(*args, **kw):
        if what == "assign":
            raise NotImplementedError
        m = ref.MultiHeadAttention(*init_a, **init_kw)
        if what == "forward":
            return m.forward(*args, **kw)
        return m(*args, **kw)

    init = ", ".join([describe(v) for v in init_a]
                     + [f"{k}={describe(v)}" for k, v in init_kw.items()])
    call.label = f"MultiHeadAttention({init}).{what}"
    return "MultiHeadAttention", call, a, kw, reference, ()


def _shuffle_array(rng, a):
    """a in a random layout, now and then with a random shape instead."""
    if isinstance(a, list):
        return [_shuffle_array(rng, x) for x in a]
    if not isinstance(a, np.ndarray):
        return a
    if rng.random() < 0.08:
        return rand_array(rng, tuple(int(rng.choice(DIMS)) for _ in a.shape))
    return relayout(rng, a, LAYOUTS[rng.integers(len(LAYOUTS))])


def registry_spec(entry):
    """A spec from a tests/_registry.py entry: its argument generator (a
    consistent call: the forward results a backward takes, partial
    results over disjoint keys) at a random float dtype, then arrays
    re-laid out or re-shaped at random, out= right, wrong or aliasing an
    input, and a few arguments swapped for pool values (odd dtypes among
    them: the hand-written specs mix dtypes on purpose)."""
    def spec(rng):
        args, kw = entry.gen(rng, [np.float64, np.float32][rng.integers(2)])
        args, kw = list(args), dict(kw)
        if entry.out and rng.random() < 0.3:
            want = entry.twin(*args, **kw)
            want = want[0] if isinstance(want, tuple) else want
            arrays = [a for a in args + list(kw.values())
                      if isinstance(a, np.ndarray)]
            kw["out"] = [np.zeros(want.shape, want.dtype),
                         np.zeros(want.shape, np.float32),
                         np.zeros(want.shape[:-1], want.dtype),
                         *arrays][rng.integers(3 + len(arrays))]
        args = [_shuffle_array(rng, a) for a in args]
        kw = {k: _shuffle_array(rng, v) for k, v in kw.items()}
        names = list(range(len(args))) + list(kw) + (["out"] if entry.out
                                                      else [])
        args, kw = maybe_mutate(rng, args, kw, names)
        writes = (() if entry.writes is None else (entry.writes,)) + \
            (("out",) if entry.out else ())
        return entry.name, entry.func, args, kw, entry.twin, writes
    spec.__name__ = "spec_" + entry.name
    return spec


SPECS = [spec_attention, spec_attention, spec_sdpa, spec_sdpa, spec_softmax,
         spec_softmax_backward, spec_softmax_jacobian,
         spec_create_causal_mask, spec_causal_mask, spec_padding_mask,
         spec_positional_encoding, spec_add_positional_encoding,
         spec_split_heads, spec_combine_heads, spec_set_num_threads, spec_set_isa,
         spec_mha]
_HAND_WRITTEN = {spec(np.random.default_rng(0))[0] for spec in SPECS[:-1]}
SPECS += [registry_spec(e) for e in REGISTRY
          if e.gen is not None and e.name not in _HAND_WRITTEN]

# Functions of tests/_registry.py the fuzzer does not call, and why
# (tests/reliability/test_registry.py fails for a registered function
# that is neither fuzzed nor listed here).
NOT_FUZZED = {"get_num_threads": "takes no argument: no call to vary",
              "get_isa": "takes no argument: no call to vary",
              "isas": "takes only a flag: nothing to break"}


# ---------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------

def describe(v):
    if isinstance(v, np.ndarray):
        return (f"array(shape={v.shape}, dtype={v.dtype}, strides={v.strides},"
                f" aligned={v.flags.aligned}, writeable={v.flags.writeable},"
                f" id={id(v) % 100000})")
    r = repr(v)
    return r if len(r) < 60 else r[:57] + "..."


def describe_call(fname, args, kw, f=None):
    parts = [describe(a) for a in args]
    parts += [f"{k}={describe(v)}" for k, v in kw.items()]
    return f"{getattr(f, 'label', fname)}({', '.join(parts)})"


def copy_value(v):
    if isinstance(v, np.ndarray):
        return np.array(v, copy=True)
    return v


def moderate(*values):
    """True if every float in the arrays is non-finite or |x| < 1e4 (so
    that summation order cannot change overflow) and no input is exotic."""
    for v in values:
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in "biuf":
                return False
            if v.dtype.kind == "f":
                with np.errstate(all="ignore"):
                    f = np.asarray(v, np.float64)
                    fin = f[np.isfinite(f)]
                    if fin.size and np.abs(fin).max() >= 1e4:
                        return False
    return True


def angle_atol(fname, kw):
    """Sines of positions far from 0 differ by the angle's own rounding:
    pos * freq is computed from a freq one ulp away in attnpy and in
    NumPy (their exp and log differ), so the results may differ by about
    |pos| * 2^-52 per ulp of freq, whatever either sin does."""
    if fname not in ("positional_encoding", "add_positional_encoding"):
        return 0.0
    offset = kw.get("offset", 0)
    if not isinstance(offset, (int, float, np.integer, np.floating)):
        return 0.0
    return (abs(float(offset)) + 1e4) * 2.0 ** -48


def same_values(a, b, dtype, extra_atol=0.0):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {a.shape} != reference {b.shape}"
    if a.dtype.newbyteorder("=") != b.dtype.newbyteorder("="):
        return f"dtype {a.dtype} != reference {b.dtype}"
    if a.dtype.kind not in "fc":
        return None if np.array_equal(a, b) else "values differ"
    rtol, atol = ((1e-4, 1e-5) if dtype == np.float32
                  else (8e-3, 4e-3) if dtype.itemsize == 2  # float16, bf16
                  else (1e-9, 1e-11))
    atol += extra_atol
    try:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        return "values differ from the reference: " + \
            " ".join(str(e).split())[:300]
    return None


def check_call(fname, f, args, kw, ref_fn, writes):
    """Run one call. Returns (status, problem): status 'ok' or 'error';
    problem None or a string describing a failure."""
    targets = [args[w] if isinstance(w, int) and w < len(args) else kw.get(w)
               for w in writes]
    targets = [t for t in targets if isinstance(t, np.ndarray)]
    inputs = [v for v in list(args) + list(kw.values())
              if isinstance(v, np.ndarray) and v.dtype.kind != "O"
              and not any(np.shares_memory(v, t) for t in targets)]
    before = [(v, v.tobytes()) for v in inputs]
    ref_args = [copy_value(a) for a in args]
    ref_kw = {k: copy_value(v) for k, v in kw.items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = f(*args, **kw)
    except EXPECTED as e:
        for v, b in before:
            if v.tobytes() != b:
                return "error", f"input modified by a failing call ({e!r})"
        if not isinstance(e, MemoryError) and not str(e).startswith(fname):
            return "unnamed", f"{type(e).__name__}: {e}"
        return "error", None
    except BaseException as e:  # noqa: BLE001 -- anything else is a bug
        if isinstance(e, KeyboardInterrupt):
            raise
        return "fail", (f"unexpected {type(e).__name__}: {e}\n"
                        + "".join(traceback.format_exc(limit=-3)))
    for v, b in before:
        if v.tobytes() != b:
            return "ok", "an input array was modified"
    # out= must be returned
    if "out" in kw and isinstance(kw["out"], np.ndarray):
        got = result[0] if isinstance(result, tuple) else result
        if got is not kw["out"]:
            return "ok", "out= given but a different array returned"
    if ref_fn is None or not moderate(*args, *kw.values()):
        return "ok", None
    # compare with the reference when it accepts the same call
    for k in ("out", "weights_out"):
        ref_kw.pop(k, None)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expect = ref_fn(*ref_args, **ref_kw)
    except Exception:  # noqa: BLE001 -- the reference is not validated
        return "ok", None
    got = result
    if fname == "MultiHeadAttention" and not isinstance(expect, (tuple,
                                                                np.ndarray)):
        return "ok", None
    if isinstance(expect, tuple):
        if not isinstance(got, tuple) or len(got) != len(expect):
            return "ok", "result structure differs from the reference"
        pairs = list(zip(got, expect))
    else:
        pairs = [(got, expect)]
    for g, e in pairs:
        dt = np.asarray(e).dtype
        if g is kw.get("out") and g.dtype != dt:  # a wider out=: widened
            e = np.asarray(e).astype(g.dtype)
        problem = same_values(g, e, dt, angle_atol(fname, kw))
        if problem:
            return "ok", problem
    return "ok", None


def canary():
    """A fixed call whose answer is known: the process still works."""
    rng = np.random.default_rng(7)
    Q, K, V = rng.standard_normal((3, 2, 4, 5))
    o, w = attnpy.scaled_dot_product_attention(Q, K, V, causal=True)
    ro, rw = ref.scaled_dot_product_attention(Q, K, V, causal=True)
    if not (np.allclose(o, ro, rtol=1e-10, atol=1e-12)
            and np.allclose(w, rw, rtol=1e-10, atol=1e-12)
            and np.array_equal(attnpy.attention(Q, K, V, causal=True), o)):
        raise SystemExit("fuzz_calls: canary call gives wrong numbers")


def limit_address_space(extra=4 << 30):
    try:
        import resource
        page = resource.getpagesize()
        with open("/proc/self/statm") as fh:
            vm = int(fh.read().split()[0]) * page
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = vm + extra
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        return limit
    except (ImportError, OSError, ValueError):
        return None


def signature(fname, problem):
    first = problem.splitlines()[0]
    return fname + ": " + re.sub(r"\d+", "N", first)[:60]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--seed", type=int, default=None,
                   help="default: from the clock (printed)")
    p.add_argument("--only", type=int, default=None,
                   help="replay call number ONLY of this seed")
    p.add_argument("--log", action="store_true",
                   help="print every call before making it")
    p.add_argument("--show", type=int, default=10,
                   help="print this many distinct failures in full")
    p.add_argument("--no-rlimit", action="store_true")
    p.add_argument("--strict-messages", action="store_true",
                   help="also fail on ValueError/TypeError messages that do "
                        "not start with the function's name")
    opt = p.parse_args(argv)
    seed = opt.seed if opt.seed is not None else int(time.time()) % 100000
    faulthandler.enable()
    if not opt.no_rlimit:
        limit_address_space()
    threads0, isa0 = attnpy.get_num_threads(), attnpy.get_isa()
    indices = [opt.only] if opt.only is not None else range(opt.calls)
    counts = {"ok": 0, "error": 0, "fail": 0, "unnamed": 0}
    failures, unnamed = {}, {}
    t0 = time.perf_counter()
    for i in indices:
        rng = np.random.default_rng([seed, i])
        spec = SPECS[rng.integers(len(SPECS))]
        fname, f, args, kw, ref_fn, writes = spec(rng)
        if opt.log:
            print(f"[{i}] {describe_call(fname, args, kw, f)}", flush=True)
        status, problem = check_call(fname, f, args, kw, ref_fn, writes)
        if status in counts:
            counts[status] += 1
        if status == "unnamed":
            unnamed.setdefault(signature(fname, problem),
                               (i, describe_call(fname, args, kw, f), problem))
            if not opt.strict_messages:
                counts["error"] += 1
                problem = None
        if problem:
            sig = signature(fname, problem)
            if sig not in failures:
                failures[sig] = [i, describe_call(fname, args, kw, f), problem, 0]
            failures[sig][3] += 1
        if i % 500 == 499:
            canary()
    attnpy.set_num_threads(threads0)
    attnpy.set_isa(isa0)
    canary()
    nfail = sum(v[3] for v in failures.values())
    for n, (sig, (i, call, problem, count)) in enumerate(failures.items()):
        if n >= opt.show:
            print(f"... and {len(failures) - opt.show} more distinct failures")
            break
        print(f"FAILURE x{count} (first: call {i}; replay with --seed {seed} "
              f"--only {i})\n  {call}\n  {problem.strip()}\n")
    if unnamed and not opt.strict_messages:
        print(f"note: {len(unnamed)} kinds of expected errors do not start "
              f"with the function's name (--strict-messages fails on them):")
        for sig, (i, call, problem) in list(unnamed.items())[:opt.show]:
            print(f"  call {i}: {problem.strip()[:150]}")
    print(f"fuzz_calls: seed={seed} calls={len(indices)} ok={counts['ok']} "
          f"expected_errors={counts['error']} "
          f"unexpected_errors={counts['fail']} failures={nfail} "
          f"distinct={len(failures)} unnamed_messages={len(unnamed)} "
          f"time={time.perf_counter() - t0:.1f}s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

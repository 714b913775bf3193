"""Generic tests of every public function in tests/_registry.py, in each
dtype of its entry: against its NumPy twin with its array arguments in
every memory layout of tests/_arrays.py (all at once, and each alone
beside contiguous others, plus a stride-0 broadcast view); with a bad
dtype or too few dimensions in each array argument; with out= (fresh,
strided, transposed, of the wrong shape or dtype, read-only, and
aliasing an input); with its inputs unchanged (NaN/inf included, called
twice). Also: every public function is registered, the fuzzer calls
every registered function and the bench times each or says why not."""
import itertools
import os
import re

import numpy as np
import pytest

import attnpy
import fuzz_calls
from _arrays import TOLERANCES, broadcast_view, layout_names, layouts, \
    snapshot, strided_empty, transposed_empty
from _registry import BY_NAME, NOT_BENCHED, NOT_FUNCTIONS, REGISTRY, first

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
WITH_ARGS = [e for e in REGISTRY if e.gen is not None]


def _cases(entries, per_dtype=True):
    """pytest params (entry, dtype) over each entry's own dtypes."""
    return [pytest.param(e, np.dtype(d), id=f"{e.name}-{np.dtype(d).name}")
            for e in entries for d in (e.dtypes if per_dtype
                                       else e.dtypes[:1])]


def _arrays_in(args, kw):
    """(where, array) of every ndarray argument; where = index or name, or
    (index, k) for the k-th array of a list argument."""
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            yield i, a
        elif isinstance(a, list):
            for k, x in enumerate(a):
                yield (i, k), x
    for k, a in kw.items():
        if isinstance(a, np.ndarray):
            yield k, a


def _replace(args, kw, where, value):
    args, kw = list(args), dict(kw)
    if isinstance(where, tuple):
        args[where[0]] = list(args[where[0]])
        args[where[0]][where[1]] = value
    elif isinstance(where, int):
        args[where] = value
    else:
        kw[where] = value
    return args, kw


def _results(r):
    return [x for x in (r if isinstance(r, tuple) else (r,))
            if x is not None]


def _close(got, want):
    got, want = _results(got), _results(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype.newbyteorder("=") == w.dtype.newbyteorder("=")
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w)
            continue
        rtol, atol = TOLERANCES[w.dtype.newbyteorder("=")]
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                   equal_nan=True)


def _call(f, e, args, kw):
    if e.writes is not None and isinstance(args[e.writes], np.ndarray):
        args = list(args)        # in place: on a copy, so the caller's
        args[e.writes] = args[e.writes].copy()   # stays the reference
    return f(*args, **kw)


def _native(args, kw):
    """The arguments' values as native-order contiguous arrays (what the
    twins take)."""
    for where, a in list(_arrays_in(args, kw)):
        args, kw = _replace(args, kw, where, np.ascontiguousarray(
            a, a.dtype.newbyteorder("=")))
    return args, kw


def _twin_check(e, args, kw):
    """attnpy on these arguments agrees with the twin on their values."""
    _close(_call(e.func, e, args, kw), _call(e.twin, e, *_native(args, kw)))


@pytest.mark.parametrize("entry,dtype", _cases(WITH_ARGS))
def test_matches_twin_in_every_layout(entry, dtype):
    """All array arguments in one layout at a time, every variant."""
    rng = np.random.default_rng(11)
    args, kw0 = entry.gen(rng, dtype)
    places = list(_arrays_in(args, kw0))
    seen = set()
    for extra in entry.variants:
        kw = dict(kw0, **extra)
        for name in layout_names(2, dtype.itemsize):
            a2, k2 = list(args), dict(kw)
            for where, a in places:
                lay = dict(layouts(a))
                if name in lay:
                    a2, k2 = _replace(a2, k2, where, lay[name])
                    seen.add(name)
            _twin_check(entry, a2, k2)
    assert not places or "transposed" in seen or all(
        a.ndim < 2 for _, a in places)


@pytest.mark.parametrize("entry,dtype", _cases(WITH_ARGS))
def test_each_argument_alone_in_every_layout(entry, dtype):
    """One array argument in each layout and as a stride-0 broadcast view,
    the others contiguous."""
    rng = np.random.default_rng(15)
    args, kw0 = entry.gen(rng, dtype)
    for kw in (dict(kw0, **extra) for extra in entry.variants):
        for where, a in _arrays_in(args, kw):
            views = list(layouts(a))
            if where != entry.writes:      # a broadcast view is read-only
                views.append(("broadcast", broadcast_view(a)))
            for name, v in views:
                _twin_check(entry, *_replace(args, kw, where, v))


def _with_special_values(rng, args, kw):
    """The arguments with NaN, inf and -inf in every float array."""
    for where, a in list(_arrays_in(args, kw)):
        if a.dtype.kind == "f" and a.size:
            a = a.copy()
            flat = a.reshape(-1)
            for v in (np.nan, np.inf, -np.inf):
                flat[rng.integers(flat.size)] = v
            args, kw = _replace(args, kw, where, a)
    return args, kw


@pytest.mark.parametrize("special", [False, True], ids=["finite", "nan-inf"])
@pytest.mark.parametrize("entry", WITH_ARGS, ids=lambda e: e.name)
def test_inputs_unchanged(entry, special):
    """Inputs in every layout (NaN/inf too) come back byte for byte, call
    after call; only the argument written in place may change."""
    rng = np.random.default_rng(12)
    args, kw0 = entry.gen(rng, np.float64)
    if special:
        args, kw0 = _with_special_values(rng, args, kw0)
    for name, extra in itertools.product(layout_names(2, 8),
                                         entry.variants):
        kw = dict(kw0, **extra)
        a2, k2 = list(args), dict(kw)
        for where, a in _arrays_in(args, kw):
            lay = dict(layouts(a))
            if name in lay:
                a2, k2 = _replace(a2, k2, where, lay[name])
        places = [a for w, a in _arrays_in(a2, k2) if w != entry.writes]
        before = snapshot(*places)
        for _ in range(2):
            with np.errstate(all="ignore"):     # NaN in a matmul warns
                _call(entry.func, entry, a2, k2)
            assert snapshot(*places) == before, name


def _bad_arrays(a):
    return (a.astype(np.complex128), a.astype(object), np.ma.masked_array(a),
            a.astype("U3"), np.zeros(a.shape, "M8[s]"))


@pytest.mark.parametrize("entry", WITH_ARGS, ids=lambda e: e.name)
def test_bad_dtypes_raise_type_error_naming_the_function(entry):
    """Complex, object, masked, string and datetime arrays: a TypeError
    from attnpy naming the function, and from the twin unless it only
    moves data (twin_types=False)."""
    rng = np.random.default_rng(13)
    args, kw = entry.gen(rng, np.float64)
    for where, a in _arrays_in(args, kw):
        for bad in _bad_arrays(a):
            a2, k2 = _replace(args, kw, where, bad)
            with pytest.raises(TypeError, match=entry.name):
                _call(entry.func, entry, a2, k2)
            if entry.twin_types and not isinstance(bad, np.ma.MaskedArray):
                with pytest.raises(TypeError):
                    _call(entry.twin, entry, a2, k2)


@pytest.mark.parametrize("entry", WITH_ARGS, ids=lambda e: e.name)
def test_none_or_fewer_dimensions_fail_cleanly(entry):
    """Each array argument as None, a 0-d array, or with its first axis
    dropped: the call works (an optional argument, broadcasting) or raises
    an error naming the function; it never reads an operand or dims that
    are not there."""
    rng = np.random.default_rng(17)
    args, kw = entry.gen(rng, np.float64)
    for where, a in _arrays_in(args, kw):
        for bad in (None, np.asarray(a.reshape(-1)[:1].sum()), a[0]):
            try:
                _call(entry.func, entry, *_replace(args, kw, where, bad))
            except (ValueError, TypeError) as e:
                assert str(e).startswith(entry.name), e


WITH_OUT = [e for e in WITH_ARGS if e.out]


@pytest.mark.parametrize("entry,dtype", _cases(WITH_OUT))
def test_out_fresh_strided_and_transposed(entry, dtype):
    """out= is filled and returned, whatever its layout; the inputs stay
    unchanged; an out of the wrong shape or dtype, or read-only, is
    refused naming the function."""
    rng = np.random.default_rng(14)
    args, kw0 = entry.gen(rng, dtype)
    inputs = [a for w, a in _arrays_in(args, kw0) if w != entry.writes]
    before = snapshot(*inputs)
    for kw in (dict(kw0, **extra) for extra in entry.variants):
        want = first(_call(entry.func, entry, args, kw))
        outs = [np.empty_like(want), strided_empty(want.shape, want.dtype)]
        if want.ndim >= 2:
            outs.append(transposed_empty(want.shape, want.dtype))
        for out in outs:
            got = _call(entry.func, entry, args, dict(kw, out=out))
            assert first(got) is out
            np.testing.assert_array_equal(out, want)
    assert snapshot(*inputs) == before
    # a narrower float dtype (a wider out= is accepted: the result is
    # written rounded once into it)
    other = np.float32 if want.dtype == np.float64 else np.float16
    readonly = np.empty_like(want)
    readonly.flags.writeable = False
    for bad, errors in [(np.empty(want.shape + (1,), want.dtype), ValueError),
                        (np.empty(want.shape, other), (ValueError, TypeError)),
                        (readonly, (ValueError, TypeError))]:
        with pytest.raises(errors, match=entry.name):
            _call(entry.func, entry, args, dict(kw, out=bad))


# out= as an input itself, or a view of it in another layout
ALIASES = [("contiguous", lambda a: a), ("transposed", lambda a: a),
           ("contiguous", lambda a: np.swapaxes(a, -1, -2)),
           ("contiguous", lambda a: a[::-1]),
           ("contiguous", lambda a: a[..., ::-1])]


def _alias_places(e, dtype):
    args, kw = (e.alias_gen or e.gen)(np.random.default_rng(16), dtype)
    shape = first(e.twin(*args, **kw)).shape
    return args, kw, [w for w, a in _arrays_in(args, kw)
                      if a.shape == shape and w != e.writes]


ALIASABLE = [e for e in WITH_OUT if _alias_places(e, np.float64)[2]]


@pytest.mark.parametrize("entry,dtype", _cases(ALIASABLE))
def test_out_aliasing_an_input(entry, dtype):
    """out= may be one of the inputs or overlap it (transposed, reversed):
    the result is what the inputs held before the call, as with NumPy's
    ufuncs."""
    args, kw0, places = _alias_places(entry, dtype)
    for extra in entry.variants:
        kw = dict(kw0, **extra)
        want = entry.twin(*args, **kw)
        for where in places:
            for layout, view in ALIASES:
                a = dict(layouts(dict(_arrays_in(args, kw))[where].copy()))[
                    layout]
                a2, k2 = _replace(args, kw, where, a)
                if view(a).shape != a.shape:
                    continue                    # not square
                got = entry.func(*a2, **dict(k2, out=view(a)))
                assert np.shares_memory(first(got), a)
                _close(got, want)


def test_every_public_function_is_registered():
    public = {n for n in attnpy.__all__ if n not in NOT_FUNCTIONS}
    assert public == set(BY_NAME)
    for e in REGISTRY:
        assert e.family in {"attention", "elementwise", "positional",
                            "layer", "quant", "runtime"}
        if e.twin is not None:
            assert e.twin.__name__ == e.name


def test_the_fuzzer_covers_the_registry():
    """The fuzzer calls every registered function (by its public name)
    or says why not."""
    rng = np.random.default_rng(0)
    fuzzed = {spec(rng)[0] for spec in fuzz_calls.SPECS}
    missing = {e.name for e in REGISTRY} - fuzzed - set(
        fuzz_calls.NOT_FUZZED)
    assert not missing, f"the fuzzer has no spec for {sorted(missing)}"
    assert not fuzzed & set(fuzz_calls.NOT_FUZZED)


def _bench_sources():
    """The text of attnpy/bench/*.py and of the example the llm part runs."""
    from attnpy.bench import llm
    here = os.path.dirname(llm.__file__)
    names = [os.path.join(here, f) for f in os.listdir(here)
             if f.endswith(".py")]
    names.append(os.path.join(ROOT, "examples", "smollm2.py"))
    text = []
    for n in names:
        with open(n, encoding="utf-8") as f:
            text.append(f.read())
    return "\n".join(text)


def test_the_bench_times_every_function_or_says_why_not():
    """Each entry names the bench part that times it (a key of
    attnpy.bench.parts.PARTS, whose code calls it or the class it runs
    inside), or NOT_BENCHED says why it is not timed; not both."""
    from attnpy.bench.parts import PARTS
    text = _bench_sources()
    for e in REGISTRY:
        assert (e.bench is None) == (e.name in NOT_BENCHED), e.name
        if e.bench is not None:
            part, _, via = e.bench.partition(":")
            assert part in PARTS, e.bench
            assert re.search(r"attnpy\.%s\b" % (via or e.name), text), e.bench
    assert set(NOT_BENCHED) <= set(BY_NAME)

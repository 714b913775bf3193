"""Generic tests of every public function in tests/_registry.py: against
its NumPy twin with its array arguments in every memory layout of
tests/_arrays.py, with a bad dtype in each array argument, with out= (a
fresh array and a non-contiguous view), and with its inputs unchanged.
Also: every public function is registered, and the fuzzer has a spec for
every registered function."""
import numpy as np
import pytest

import attnpy
import fuzz_calls
from _arrays import TOLERANCES, layout_names, layouts, snapshot, \
    strided_empty
from _registry import BY_NAME, NOT_FUNCTIONS, REGISTRY, first

DTYPES = (np.float64, np.float32)
WITH_ARGS = [e for e in REGISTRY if e.gen is not None]
IDS = [e.name for e in WITH_ARGS]


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


def _close(got, want, dtype):
    rtol, atol = TOLERANCES[np.dtype(dtype)]
    got, want = _results(got), _results(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _call(e, args, kw):
    if e.writes is not None:     # in place: on a copy, so the caller's
        args = list(args)        # array stays the test's reference
        args[e.writes] = args[e.writes].copy()
    return e.func(*args, **kw)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("entry", WITH_ARGS, ids=IDS)
def test_matches_twin_in_every_layout(entry, dtype):
    rng = np.random.default_rng(11)
    args, kw = entry.gen(rng, dtype)
    twin_args = list(args)
    if entry.writes is not None:
        twin_args[entry.writes] = args[entry.writes].copy()
    want = entry.twin(*twin_args, **kw)
    places = list(_arrays_in(args, kw))
    names = layout_names(2, np.dtype(dtype).itemsize)
    seen = set()
    for name in names:
        a2, k2 = list(args), dict(kw)
        for where, a in places:
            lay = dict(layouts(a))
            if name in lay:
                a2, k2 = _replace(a2, k2, where, lay[name])
                seen.add(name)
        _close(_call(entry, a2, k2), want, dtype)
    assert not places or "transposed" in seen or all(
        a.ndim < 2 for _, a in places)


@pytest.mark.parametrize("entry", WITH_ARGS, ids=IDS)
def test_inputs_unchanged(entry):
    rng = np.random.default_rng(12)
    args, kw = entry.gen(rng, np.float64)
    places = [(w, a) for w, a in _arrays_in(args, kw) if w != entry.writes]
    before = snapshot(*[a for _, a in places])
    _call(entry, args, kw)
    assert snapshot(*[a for _, a in places]) == before


@pytest.mark.parametrize("entry", WITH_ARGS, ids=IDS)
def test_bad_dtypes_raise_type_error_naming_the_function(entry):
    rng = np.random.default_rng(13)
    args, kw = entry.gen(rng, np.float64)
    places = list(_arrays_in(args, kw))
    for where, a in places:
        for bad in (a.astype(np.complex128), a.astype(object),
                    np.ma.masked_array(a)):
            a2, k2 = _replace(args, kw, where, bad)
            with pytest.raises(TypeError, match=entry.name):
                _call(entry, a2, k2)


@pytest.mark.parametrize("entry", [e for e in WITH_ARGS if e.out],
                         ids=[e.name for e in WITH_ARGS if e.out])
def test_out_fresh_and_strided(entry):
    rng = np.random.default_rng(14)
    args, kw = entry.gen(rng, np.float64)
    want = first(_call(entry, args, kw))
    for out in (np.empty_like(want), strided_empty(want.shape, want.dtype)):
        got = _call(entry, args, dict(kw, out=out))
        assert first(got) is out
        np.testing.assert_array_equal(out, want)
    wrong = np.empty(want.shape + (1,), want.dtype)
    with pytest.raises(ValueError, match=entry.name):
        _call(entry, args, dict(kw, out=wrong))


def test_every_public_function_is_registered():
    public = {n for n in attnpy.__all__ if n not in NOT_FUNCTIONS}
    assert public == set(BY_NAME)
    for e in REGISTRY:
        assert e.family in {"attention", "elementwise", "positional",
                            "layer", "runtime"}
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

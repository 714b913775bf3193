"""attnpy/_core.pyi describes the C extension as built: the same
functions, and for each the parameters of its text signature (the first
line of its docstring in the method table): names, kinds (positional or
keyword-only) and defaults. The keyword parser rejects names it does not
know."""
import ast
import inspect
import os

import pytest

from attnpy import _core

STUB = os.path.join(os.path.dirname(_core.__file__), "_core.pyi")


def _stub_functions():
    with open(STUB) as f:
        tree = ast.parse(f.read())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


STUBS = _stub_functions()
BUILT = sorted(n for n in dir(_core) if not n.startswith("_")
               and callable(getattr(_core, n)))


def _stub_params(fn):
    a = fn.args
    out = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(pos, defaults):
        kind = "POSITIONAL_ONLY" if p in a.posonlyargs else \
            "POSITIONAL_OR_KEYWORD"
        out.append((p.arg, kind, None if d is None else ast.literal_eval(d)))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "KEYWORD_ONLY",
                    None if d is None else ast.literal_eval(d)))
    return out


def _built_params(f):
    sig = inspect.signature(f)
    return [(p.name, p.kind.name,
             None if p.default is p.empty else p.default)
            for p in sig.parameters.values()]


def test_same_functions():
    assert sorted(STUBS) == BUILT


@pytest.mark.parametrize("name", BUILT)
def test_same_parameters(name):
    assert name in STUBS, f"{name} is missing from _core.pyi"
    assert _stub_params(STUBS[name]) == _built_params(getattr(_core, name))


@pytest.mark.parametrize("name", [n for n in BUILT if any(
    k == "KEYWORD_ONLY" for _, k, _ in _built_params(getattr(_core, n)))])
def test_unknown_keywords_are_refused(name):
    with pytest.raises(TypeError, match=f"{name}.. got an unexpected "
                                        f"keyword argument 'nonsense'"):
        getattr(_core, name)(*[None] * _npos(name), nonsense=1)


def _npos(name):
    return sum(k == "POSITIONAL_ONLY"
               for _, k, _ in _built_params(getattr(_core, name)))


def test_sdpa_named_flags():
    import numpy as np
    Q = np.arange(24.0).reshape(2, 3, 4) / 10
    out = _core.sdpa(Q, Q, Q)
    o1, w = _core.sdpa(Q, Q, Q, return_weights=True)
    o2, w2, s = _core.sdpa(Q, Q, Q, return_scores=True)
    o3, lse = _core.sdpa(Q, Q, Q, return_lse=True)
    for o in (o1, o2, o3):
        np.testing.assert_array_equal(o, out)
    np.testing.assert_array_equal(w, w2)
    np.testing.assert_allclose(s, Q @ np.swapaxes(Q, -1, -2), rtol=1e-14)
    assert lse.shape == (2, 3)
    with pytest.raises(ValueError, match="return_lse cannot be combined"):
        _core.sdpa(Q, Q, Q, return_lse=True, return_weights=True)
    with pytest.raises(TypeError, match="at most 3 positional arguments"):
        _core.sdpa(Q, Q, Q, Q)
    with pytest.raises(TypeError, match="multiple values for argument 'K'"):
        _core.sdpa(Q, Q, Q, K=Q)
    with pytest.raises(TypeError, match="missing required argument 'V'"):
        _core.sdpa(Q, Q)

"""Every public function and every public method of a public class has a
numpydoc docstring with Parameters (when it takes any), Returns (when it
returns something) and Examples sections; the examples run as doctests
with the rest of the package."""
import inspect

import pytest

import attnpy


def _documented():
    for name in attnpy.__all__:
        obj = getattr(attnpy, name)
        if inspect.isclass(obj):
            yield name, obj, "class"
            for m, f in vars(obj).items():
                if inspect.isfunction(f) and (not m.startswith("_")
                                              or m == "__call__"):
                    yield f"{name}.{m}", f, "method"
        elif inspect.isfunction(obj):
            yield name, obj, "function"


# the methods of AttentionTrace (attnpy.teach) keep their docs' tests in
# tests/teach; explain, show and the class itself are walked here
ITEMS = [(n, o, k) for n, o, k in _documented()
         if not n.startswith("AttentionTrace.")]


def _sections(doc):
    lines = [ln.strip() for ln in doc.splitlines()]
    return {a for a, b in zip(lines, lines[1:])
            if b and set(b) == {"-"} and len(b) >= len(a) > 0}


@pytest.mark.parametrize("name, obj, kind", ITEMS,
                         ids=[n for n, _, _ in ITEMS])
def test_numpydoc_sections(name, obj, kind):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    found = _sections(doc)
    sig = inspect.signature(obj)
    params = [p for p in sig.parameters if p != "self"]
    want = {"Examples"}
    if params:
        want.add("Parameters")
    if kind != "class" and not name.endswith("__init__"):
        src = inspect.getsource(inspect.unwrap(obj))
        if "return " in src and sig.return_annotation not in (None, "None"):
            want.add("Returns")
    missing = want - found
    assert not missing, f"{name}: docstring lacks {sorted(missing)}"


def test_the_walk_sees_methods():
    names = {n for n, _, _ in ITEMS}
    assert {"MultiHeadAttention.forward", "MultiHeadAttention.backward",
            "TransformerEncoderLayer.forward", "KVCache.append",
            "create_causal_mask", "get_num_threads"} <= names

"""attnpy's type annotations: mypy flags a wrong option string in a user's
script (``causal="sideways"``), passes a correct one, and finds the
package's marker file; every public function and method is annotated."""
import inspect
import os
import subprocess
import sys
import textwrap

import pytest

import attnpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

GOOD = """\
import numpy as np
import attnpy

Q = np.zeros((2, 4, 8))
out = attnpy.attention(Q, Q, Q, causal=True, mask=attnpy.causal_mask(4))
o2, w = attnpy.scaled_dot_product_attention(Q, Q, Q,
                                            attnpy.create_causal_mask(4))
print(out.shape, o2.shape, w.sum(axis=-1))
mha = attnpy.MultiHeadAttention(8, 2, seed=0)
y, weights = mha.forward(Q, causal="bottom_right")
layer = attnpy.TransformerEncoderLayer(8, 2, 16, activation="gelu")
z = layer.forward(Q) + 1.0
pe = attnpy.positional_encoding(10, 8, dtype=np.float32)
n: int = attnpy.get_num_threads()
print(attnpy.softmax([1.0, 2.0]), attnpy.gelu(Q, approximate="tanh"))
"""

# line -> the option mypy must reject on it
BAD = {
    5: ('attnpy.attention(Q, Q, Q, causal="sideways")', "sideways"),
    6: ('attnpy.scaled_dot_product_attention(Q, Q, Q, fully_masked="never")',
        "never"),
    7: ('attnpy.causal_mask(3, align="middle")', "middle"),
    8: ('attnpy.gelu(Q, approximate="fast")', "fast"),
    9: ('attnpy.feed_forward(Q, Q, Q, Q, Q, activation="swish")', "swish"),
    10: ('attnpy.MultiHeadAttention(8, 2).forward(Q, causal="left")', "left"),
    11: ('attnpy.explain(Q, Q, Q, fully_masked="skip")', "skip"),
}


def _bad_script():
    lines = ["import numpy as np", "import attnpy", "",
             "Q = np.zeros((2, 4, 8))"]
    lines += [f"x{i} = {BAD[i][0]}" for i in sorted(BAD)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory):
    """One mypy process checks both scripts (its start and NumPy's stubs
    are most of the time); each test reads the lines of its own file."""
    tmp = tmp_path_factory.mktemp("mypy")
    (tmp / "bad_script.py").write_text(_bad_script())
    (tmp / "good_script.py").write_text(GOOD)
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental",
         "--cache-dir", str(tmp / "cache"), "--no-error-summary",
         "--hide-error-context", "bad_script.py", "good_script.py"],
        env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
    # 1: errors found (the bad script's); 2 would be a crash or bad usage
    assert r.returncode == 1 and not r.stderr, r.stdout + r.stderr
    return r.stdout.splitlines()


def test_mypy_flags_wrong_option_strings(mypy_run):
    errors = [ln for ln in mypy_run if ln.startswith("bad_script.py:")
              and ": error:" in ln]
    flagged = {int(ln.split(":")[1]) for ln in errors}
    assert flagged == set(BAD), mypy_run
    for ln in errors:
        line = int(ln.split(":")[1])
        assert BAD[line][1] in ln and "[arg-type]" in ln, ln


def test_mypy_passes_a_correct_script(mypy_run):
    # anything mypy says of the good script (error or note) fails
    assert not [ln for ln in mypy_run if ln.startswith("good_script.py")], \
        mypy_run
    assert all(ln.startswith("bad_script.py:") for ln in mypy_run), mypy_run


def test_py_typed_ships():
    pkg = os.path.dirname(attnpy.__file__)
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        text = f.read()
    assert '"py.typed"' in text


def _public_callables():
    for name in attnpy.__all__:
        obj = getattr(attnpy, name)
        if inspect.isclass(obj):
            for m, f in vars(obj).items():
                if callable(f) and (not m.startswith("_") or m in (
                        "__init__", "__call__")):
                    yield f"{name}.{m}", f
                elif isinstance(f, property):
                    yield f"{name}.{m}", f.fget
        elif inspect.isfunction(obj):
            yield name, obj


# the methods of AttentionTrace (attnpy.teach) are checked by tests/teach;
# explain and show are walked here
CALLABLES = [(n, f) for n, f in _public_callables()
             if not n.startswith("AttentionTrace.")]


@pytest.mark.parametrize("name, f", CALLABLES, ids=[n for n, _ in CALLABLES])
def test_public_signatures_are_annotated(name, f):
    sig = inspect.signature(f)
    missing = [p.name for p in sig.parameters.values()
               if p.name != "self" and p.annotation is p.empty]
    assert not missing, f"{name}: parameters without annotation: {missing}"
    assert sig.return_annotation is not sig.empty, \
        f"{name}: no return annotation"

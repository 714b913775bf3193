"""The lead's tests: the command line, MultiHeadAttention, threads settings,
packaging details. Numerical agreement with the reference lives in
test_reference.py; bad input in test_bad_input.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

import attnpy
from attnpy import reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_module(*args, env=None):
    e = dict(os.environ, PYTHONPATH=ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "attnpy", *args], cwd=ROOT,
                          env=e, capture_output=True, text=True, timeout=120)


def test_worked_example_cli_prints_exact_steps_and_tutorial_drift():
    r = run_module()
    assert r.returncode == 0, r.stderr
    text = r.stdout
    # the tutorial's scores and scaled scores, to 3 decimals
    for fig in ("1.160", "0.470", "0.810", "0.850", "0.560", "1.270",
                "0.580", "0.235", "0.405", "0.425", "0.280", "0.635"):
        assert fig in text
    # exact weights and output row 0
    for fig in ("0.393", "0.278", "0.329", "0.307", "0.371", "0.321",
                "0.318", "0.281", "0.401", "0.579", "0.373", "0.447",
                "0.351"):
        assert fig in text
    # and where the hand rounding drifted: 0.330 vs exact 0.32950, etc.
    assert "weights[0, 2]  tutorial 0.330   exact 0.32950" in text
    assert "output[0, 0]   tutorial 0.580   exact 0.57876" in text
    assert "output[0, 3]   tutorial 0.352   exact 0.35070" in text


def test_worked_example_decimals_option():
    r = run_module("--decimals", "5")
    assert r.returncode == 0, r.stderr
    assert "0.32950" in r.stdout and "0.57876" in r.stdout
    bad = run_module("--decimals", "-1")
    assert bad.returncode == 2 and "--decimals" in bad.stderr


def test_demo_steps_match_reference_exactly():
    from attnpy import _demo
    steps = _demo.compute()
    X = _demo.X
    out, w = reference.scaled_dot_product_attention(X, X, X)
    np.testing.assert_allclose(steps["scores"], X @ X.T, rtol=1e-12)
    np.testing.assert_allclose(steps["weights"], w, rtol=1e-12)
    np.testing.assert_allclose(steps["output"], out, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mha_matches_tutorial_class_given_same_weights(dtype):
    rng = np.random.default_rng(3)
    d, h = 16, 4
    mha = attnpy.MultiHeadAttention(d, h, seed=1, dtype=dtype)
    X = rng.standard_normal((2, 6, d)).astype(dtype)
    mask = attnpy.create_causal_mask(6)
    out, w = mha.forward(X, mask)
    ref_out, ref_w = reference.tutorial_multi_head_attention(
        X, mha.W_q, mha.W_k, mha.W_v, mha.W_o, h, mask)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert out.dtype == dtype and w.dtype == dtype
    assert w.shape == (2, h, 6, 6)
    np.testing.assert_allclose(out, ref_out, rtol=tol, atol=tol)
    np.testing.assert_allclose(w, ref_w, rtol=tol, atol=tol)


def test_mha_default_init_draws_like_the_tutorial():
    np.random.seed(7)
    mha = attnpy.MultiHeadAttention(8, 2)
    np.random.seed(7)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        expected = np.random.randn(8, 8) * np.sqrt(2.0 / 8)
        np.testing.assert_array_equal(getattr(mha, name), expected)


def test_mha_seed_is_reproducible_and_weights_assignable():
    a = attnpy.MultiHeadAttention(8, 2, seed=5)
    b = attnpy.MultiHeadAttention(8, 2, seed=5)
    np.testing.assert_array_equal(a.W_o, b.W_o)
    a.W_q = np.eye(8)
    np.testing.assert_array_equal(a.W_q, np.eye(8))
    with pytest.raises(ValueError, match="W_k must have shape"):
        a.W_k = np.eye(4)
    with pytest.raises(ValueError, match="d_model=10 is not divisible by "
                                         "num_heads=4"):
        attnpy.MultiHeadAttention(10, 4)


def test_mha_cross_attention_against_reference():
    rng = np.random.default_rng(4)
    mha = attnpy.MultiHeadAttention(12, 3, seed=2)
    q = rng.standard_normal((2, 5, 12))
    mem = rng.standard_normal((2, 9, 12))
    out, w = mha(q, mem, need_weights=True)
    assert out.shape == (2, 5, 12) and w.shape == (2, 3, 5, 9)
    Q = reference.split_heads(q @ mha.W_q, 3)
    K = reference.split_heads(mem @ mha.W_k, 3)
    V = reference.split_heads(mem @ mha.W_v, 3)
    r_out, r_w = reference.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(w, r_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out, reference.combine_heads(r_out) @ mha.W_o,
                               rtol=1e-12, atol=1e-14)
    # key without value: value defaults to key
    np.testing.assert_array_equal(mha(q, mem), out)
    # self-attention through __call__ is forward()
    np.testing.assert_array_equal(mha(q), mha.forward(q)[0])
    with pytest.raises(ValueError, match=r"MultiHeadAttention: key must have "
                                         r"shape \(\.\.\., seq, d_model=12\)"):
        mha(q, rng.standard_normal((2, 9, 7)))


def test_num_threads_setting_and_environment():
    old = attnpy.set_num_threads(2)
    assert attnpy.get_num_threads() == 2
    assert attnpy.set_num_threads(old) == 2
    with pytest.raises(ValueError, match="set_num_threads: n must be"):
        attnpy.set_num_threads(0)
    with pytest.raises(TypeError, match="set_num_threads: n must be an int"):
        attnpy.set_num_threads(2.0)
    code = "import attnpy; print(attnpy.get_num_threads())"
    e = dict(os.environ, PYTHONPATH=ROOT, ATTNPY_NUM_THREADS="3")
    r = subprocess.run([sys.executable, "-c", code], env=e, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "3", r.stderr
    e.pop("ATTNPY_NUM_THREADS")
    r = subprocess.run([sys.executable, "-c", code], env=e, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    if hasattr(os, "sched_getaffinity"):    # Linux: the affinity mask
        usable = len(os.sched_getaffinity(0))
    elif hasattr(os, "process_cpu_count"):  # Python 3.13: Windows' mask
        usable = os.process_cpu_count()
    else:                                   # macOS: no affinity masks
        usable = os.cpu_count()
    assert int(r.stdout) == usable


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(5)
    Q, K, V = (rng.standard_normal((2, 3, 200, 32)) for _ in range(3))
    attnpy.set_num_threads(1)
    one = attnpy.scaled_dot_product_attention(Q, K, V, causal=True)
    attnpy.set_num_threads(2)
    two = attnpy.scaled_dot_product_attention(Q, K, V, causal=True)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


def test_attention_output_is_bitwise_the_sdpa_output():
    rng = np.random.default_rng(6)
    for dtype in (np.float32, np.float64):
        Q, K, V = (rng.standard_normal((2, 70, 24)).astype(dtype)
                   for _ in range(3))
        m = rng.random((70, 70)) > 0.3
        a = attnpy.attention(Q, K, V, mask=m, causal="bottom_right")
        s, _ = attnpy.scaled_dot_product_attention(Q, K, V, m,
                                                   causal="bottom_right")
        np.testing.assert_array_equal(a, s)


def test_package_metadata_and_typing():
    assert attnpy.__version__ == "0.1.0"
    pkg = os.path.dirname(attnpy.__file__)
    assert os.path.exists(os.path.join(pkg, "py.typed"))
    assert os.path.exists(os.path.join(pkg, "_core.pyi"))
    for name in attnpy.__all__:
        assert hasattr(attnpy, name), name

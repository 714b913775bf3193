"""Build and run the C core's own test programs (tools/c_smoke.c and every
tests/c/*.c with a main(); tools/c_tests.sh builds and runs them, here and
in CI's valgrind, sanitizer and cross-compiler steps).

test_core.c checks the fast attention path (every instruction set the CPU
has, 1 and 2 threads) against the naive C oracle over random problems, the
vector exp's ulp error, concurrent callers, fork() after a threaded call,
the poll / cancel protocol and the small kernels; test_decode.c the key-chunk split
decode path (bitwise over 1, 2, 3 and 5 threads), attn_merge and
attn_rope; test_bwd.c the backward pass (fast vs naive on every ISA,
bitwise over 1/2/3/4/7 threads; naive vs finite differences) and the
forward's lse; test_platform.c the portability layer (x86 feature
detection, the caller's floating-point environment on every pool thread).
test_layer.c the layer family (layer norm, bias + activation, forward
and backward, against long double oracles and finite differences;
bitwise over 1, 2, 3 and 5 threads). test_variants.c the attention
variants (window, pos_shift, ALiBi, softcap): the naive oracle against
the equivalent explicit mask and bias, its backward against finite
differences, the tile and decode paths forward and backward against it on
every ISA, bitwise over 1 to 4 threads, a windowed decode that never reads
outside its window; test_variants_tile.c the variants in the tiled
forward and backward kernels on test_core.c's and test_bwd.c's random
problems, and window block skipping. test_fma.c the exact software fma
and fmaf of platforms whose C library fma is not trusted, against the FMA
instruction; test_math.c the elementary functions of simd/math.h (exp,
sigmoid, tanh, Phi, the normal density, log, sincos, pow): their accuracy
against mpmath references, their special values, and the bits of every
instantiation against the scalar one. test_bits.c the digest battery:
238 fixed core calls whose SHA-256 digests must equal
tests/c/bits_expected.h (tools/make_bit_digests.py) on every instruction
set at 1 to 4 threads, and random attention problems held to their
"portable" digest. All without the Python binding.

Marked slow: building the programs takes ~25 s of the 2-CPU machine, a
sixth of the README's test command, so the fast suite leaves them to
`bash tools/c_tests.sh` (the developer's command after a C change, each
program's own 6-8 random problems) and to CI's full-counts step
(``pytest --full -m slow tests``: 60 random problems each), besides the
valgrind, sanitizer and cross-compiler steps. Only collected on POSIX
(tests/conftest.py): Windows runs these programs in
tools/cross_windows.sh.
"""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
C_TESTS = os.path.join(ROOT, "tools", "c_tests.sh")
CC = os.environ.get("CC", "gcc")
FULL_COUNT = "60"

pytestmark = pytest.mark.slow


def program_names():
    out = subprocess.run(["bash", C_TESTS, "list"], capture_output=True,
                         text=True, check=True).stdout.split()
    assert "c_smoke" in out and len(out) >= 2, out
    return out


@pytest.fixture(scope="module")
def c_bin(tmp_path_factory):
    """Every program built once, -O1 -g -Werror: no compiler warning. With
    ATTNPY_C_BIN set, the programs already built there (CI's valgrind step
    builds them with -O1 -g1 -Werror, and its full-counts step runs them
    natively here rather than compiling the same sources again)."""
    prebuilt = os.environ.get("ATTNPY_C_BIN")
    if prebuilt:
        missing = [n for n in program_names()
                   if not os.access(os.path.join(prebuilt, n), os.X_OK)]
        assert not missing, f"ATTNPY_C_BIN={prebuilt} lacks {missing}"
        return prebuilt
    if shutil.which(CC) is None:
        pytest.fail(f"C compiler {CC!r} not found (needed to build the C tests)")
    out = tmp_path_factory.mktemp("cbin")
    build = subprocess.run(["bash", C_TESTS, "build", str(out), "-O1", "-g",
                            "-Werror"], capture_output=True, text=True,
                           env=dict(os.environ, CC=CC))
    assert build.returncode == 0, "build failed:\n" + build.stderr
    assert build.stderr == "", "compiler warnings:\n" + build.stderr
    return str(out)


@pytest.mark.parametrize("program", program_names())
def test_c_core(c_bin, program, request):
    count = ["--count", FULL_COUNT] if request.config.getoption("full") else []
    cmd = ["bash", C_TESTS, "--bin", c_bin, *count, program]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert f"c_tests.sh: {program}: " in out and "c_tests.sh: OK" in out, out


def test_math_every_float(c_bin, request):
    """test_math --exhaustive=8: each float function of simd/math.h at
    every float input of every 8th chunk of 4096 consecutive bit patterns
    (all exponents, signs and NaNs visited; 2^29 inputs), every
    instantiation but the soft-fma ones against the scalar one bit for
    bit, the scalar one against glibc's double functions (<= 2 ulp). A
    minute of CPU on two threads, so only in CI's full-counts step
    (``--full``); ``test_math 1 --exhaustive`` runs all 2^32 (~9 min)."""
    if not request.config.getoption("full"):
        pytest.skip("every float input takes minutes: CI's full-counts step "
                    "(--full) runs it")
    run = subprocess.run([os.path.join(c_bin, "test_math"), "1",
                          "--exhaustive=8"],
                         capture_output=True, text=True, timeout=5400)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "every float input in every 8th chunk" in out \
        and ", 0 failed" in out, out

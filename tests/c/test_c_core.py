"""Build and run the C core's own test programs (tests/c/test_*.c).

test_core.c checks the fast attention path (every instruction set the CPU
has, 1 and 2 threads) against the naive C oracle over many random problems,
the vector exp's ulp error, concurrent callers, fork() after a threaded
call, the poll / cancel protocol and the small kernels; test_decode.c the
split-K decode path (bitwise over 1, 2, 3 and 5 threads), attn_merge and
attn_rope; test_bwd.c the backward pass (fast vs naive on every ISA,
bitwise over 1/2/3/7 threads; naive vs finite differences) and the
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
problems, and window block skipping. All without the Python binding.
"""
import glob
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORE = os.path.join(ROOT, "csrc", "core")
CC = os.environ.get("CC", "gcc")


def core_sources():
    # every C file of the pure core (csrc/core/; the binding is csrc/python/)
    return sorted(glob.glob(os.path.join(CORE, "**", "*.c"), recursive=True))


@pytest.mark.skipif(sys.platform == "win32", reason="gcc/pthreads build")
@pytest.mark.parametrize("program", ["test_core", "test_decode", "test_bwd",
                                     "test_platform", "test_layer",
                                     "test_variants", "test_variants_tile"])
def test_c_core(tmp_path, program):
    if shutil.which(CC) is None:
        pytest.fail(f"C compiler {CC!r} not found (needed to build the C tests)")
    exe = str(tmp_path / program)
    cmd = [CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g",
           "-pthread", "-I" + CORE,
           os.path.join(ROOT, "tests", "c", program + ".c"),
           *core_sources(), "-lm", "-o", exe]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, "build failed:\n" + build.stderr
    assert build.stderr == "", "compiler warnings:\n" + build.stderr
    run = subprocess.run([exe, "60"], capture_output=True, text=True,
                         timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    last = out.strip().splitlines()[-1]
    passed, failed = int(last.split()[0]), int(last.split()[2])
    assert failed == 0 and passed > (40 if program == "test_platform"
                                     else 1000), out

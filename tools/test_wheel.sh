#!/usr/bin/env bash
# tools/test_wheel.sh -- the built wheels, installed as a user without a C
# compiler installs them.
#
#   tools/test_wheel.sh [--wheels DIR] [--skip-aarch64] [VERSION ...]
#                       [-- PYTEST_ARGS ...]
#
#   DIR: where tools/build_wheels.sh put the wheels (default dist/; the
#   wheels this needs are built there first when missing). VERSION: the
#   CPythons to test the x86-64 wheel with (default 3.11).
#   1. x86-64: with a PATH on which gcc, cc, clang, ... are stubs that fail,
#      tools/test_pythons.sh --wheels DIR installs the wheel and the test
#      extra into a fresh venv (pip must not build anything needing a C
#      compiler) and runs `python -m attnpy` and the fast suite
#      (PYTEST_ARGS, default below) from a copy of the tree without the
#      attnpy/ sources, so the installed wheel is what is tested.
#   2. AArch64, under qemu-user: Debian's arm64 CPython 3.11 (its .debs,
#      unpacked, not installed) with NumPy's manylinux aarch64 wheel and
#      the cp311 aarch64 wheel: the extension imports, reports the NEON
#      path, `python -m attnpy` runs, and attention calls (plain, causal,
#      float64, grouped heads with a window) match attnpy.reference, and
#      tests/attention/test_api_basic.py passes (but for its three tests
#      that start a child Python: qemu-user cannot, see below), and the
#      bits battery gives the stored digests (tests/_battery.py). Only
#      3.11: bookworm has no other arm64 CPython, and PyPI ships none.
# Installs qemu-user with apt-get when missing, and adds dpkg's arm64
# architecture (for `apt-get download`; nothing arm64 is installed).
# Env: PIP_ARGS extra pip arguments for the venvs (as tools/test_pythons.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WHEELS=$ROOT/dist
aarch64=1
versions=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
        --wheels) WHEELS=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
        --skip-aarch64) aarch64=0; shift ;;
        *) versions+=("$1"); shift ;;
    esac
done
[ "${1:-}" = -- ] && shift
[ ${#versions[@]} -gt 0 ] || versions=(3.11)
# the fast suite: the API, the fast path and its variants, bad input,
# threads, fork and Ctrl-C, the teaching tools, the layer, the README's
# and the docstrings' examples (the C programs of tests/c need a compiler
# and do not depend on how attnpy is installed: .ci/run runs them)
[ $# -gt 0 ] || set -- -m "not slow" tests/attention tests/teach \
    tests/reliability/test_bad_input.py tests/reliability/test_threads.py \
    tests/layer/test_layer.py README.md --pyargs attnpy
grep -q -- '--wheels' "$ROOT/tools/test_pythons.sh" || {
    echo "test_wheel.sh: tools/test_pythons.sh has no --wheels option" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

have_wheel() { # $1 version, $2 arch
    ls "$WHEELS"/attnpy-*-cp${1/./}-*manylinux*_"$2".whl >/dev/null 2>&1
}
need=()
for v in "${versions[@]}"; do have_wheel "$v" x86_64 || need+=("$v"); done
if [ ${#need[@]} -gt 0 ]; then
    bash "$ROOT/tools/build_wheels.sh" --out "$WHEELS" --arch x86_64 \
        --python "$(IFS=,; echo "${need[*]}")"
fi

# --- 1. x86-64, no compiler ---------------------------------------------------
NOCC=$WORK/no-compiler
mkdir -p "$NOCC"
for c in cc gcc clang c89 c99 c++ g++ clang++ cpp ld tcc zig \
        x86_64-linux-gnu-gcc x86_64-linux-gnu-g++; do
    printf '#!/bin/sh\necho "%s: no C compiler here (tools/test_wheel.sh)" >&2\nexit 127\n' \
        "$c" >"$NOCC/$c"
    chmod +x "$NOCC/$c"
done
if PATH=$NOCC:$PATH cc --version >/dev/null 2>&1; then
    echo "test_wheel.sh: the compiler stubs do not shadow cc" >&2; exit 1
fi
echo "=== x86-64 wheel, CPython ${versions[*]}, no C compiler on PATH"
PATH=$NOCC:$PATH bash "$ROOT/tools/test_pythons.sh" --wheels "$WHEELS" \
    "${versions[@]}" -- "$@"
# python -m attnpy from the installed wheel, in a venv of its own (pip only)
for v in "${versions[@]}"; do
    py=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".*/bin/python3 2>/dev/null \
        | sort -V | tail -1)
    [ -n "$py" ] || py=$(command -v "python$v")
    "$py" -m venv "$WORK/demo-$v"
    PATH=$NOCC:$PATH "$WORK/demo-$v/bin/python" -m pip install -q \
        ${PIP_ARGS:-} "$(ls "$WHEELS"/attnpy-*-cp${v/./}-*manylinux*_x86_64.whl)"
    (cd "$WORK" && PATH=$NOCC:$PATH "$WORK/demo-$v/bin/python" -m attnpy \
        >"$WORK/demo-$v.txt") || { cat "$WORK/demo-$v.txt" >&2; exit 1; }
    grep -q "the cat sat" "$WORK/demo-$v.txt" \
        || { echo "python -m attnpy printed no worked example" >&2; exit 1; }
    echo "python -m attnpy ($v, wheel): $(wc -l <"$WORK/demo-$v.txt") lines, OK"
done
[ $aarch64 = 1 ] || exit 0

# --- 2. AArch64 under qemu-user -------------------------------------------------
have_wheel 3.11 aarch64 || bash "$ROOT/tools/build_wheels.sh" \
    --out "$WHEELS" --arch aarch64 --python 3.11
command -v qemu-aarch64 >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install \
        -y -qq --no-install-recommends qemu-user; }
A64=${XDG_CACHE_HOME:-$HOME/.cache}/attnpy/aarch64-python3.11
if ! [ -x "$A64/root/usr/bin/python3.11" ] || ! [ -d "$A64/pure" ] \
    || ! ls "$A64"/numpy/ml_dtypes-*.whl >/dev/null 2>&1; then
    rm -rf "$A64"
    mkdir -p "$A64/debs" "$A64/root" "$A64/numpy" "$A64/pure"
    dpkg --print-foreign-architectures | grep -qx arm64 || {
        dpkg --add-architecture arm64 && apt-get update -qq; }
    (cd "$A64/debs" && apt-get download -q python3.11-minimal:arm64 \
        libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 libc6:arm64 \
        libgcc-s1:arm64 libstdc++6:arm64 libexpat1:arm64 zlib1g:arm64 \
        libffi8:arm64 libbz2-1.0:arm64 liblzma5:arm64 >/dev/null 2>&1) \
        || { echo "test_wheel.sh: apt-get download of arm64 CPython failed" >&2; exit 1; }
    for d in "$A64"/debs/*.deb; do dpkg -x "$d" "$A64/root"; done
    python3 -m pip download -q --only-binary=:all: --no-deps \
        --platform manylinux2014_aarch64 --python-version 3.11 \
        --implementation cp --abi cp311 -d "$A64/numpy" "numpy>=2" \
        "ml_dtypes>=0.4"
    python3 -m pip download -q --only-binary=:all: \
        --platform manylinux2014_aarch64 --python-version 3.11 \
        --implementation cp --abi cp311 -d "$A64/pure" "pytest>=7"
fi
# the guest's / is $A64/root (qemu -L), so the site directory goes there
SITE=$A64/root/site
rm -rf "$SITE"
mkdir -p "$SITE"
(cd "$SITE" && for w in "$A64"/pure/*.whl; do unzip -q -o "$w"; done \
    && unzip -q "$A64"/numpy/numpy-*.whl \
    && unzip -q -o "$A64"/numpy/ml_dtypes-*.whl \
    && unzip -q "$(ls "$WHEELS"/attnpy-*-cp311-*manylinux*_aarch64.whl)")
a64() { (cd "$WORK" && PYTHONPATH=/site PYTHONNOUSERSITE=1 \
    qemu-aarch64 -L "$A64/root" "$A64/root/usr/bin/python3.11" "$@"); }
echo "=== AArch64 wheel (cp311) under qemu-aarch64"
a64 -m attnpy >"$WORK/demo-a64.txt" || { cat "$WORK/demo-a64.txt" >&2; exit 1; }
grep -q "the cat sat" "$WORK/demo-a64.txt"
a64 - <<'EOF'
import platform, sys
import numpy as np
import attnpy
from attnpy import reference
assert platform.machine() == "aarch64", platform.machine()
assert attnpy.__file__.startswith("/site/"), attnpy.__file__
assert attnpy._core.isa() == "neon", attnpy._core.isa()
rng = np.random.default_rng(0)
Q, K, V = rng.standard_normal((3, 2, 4, 50, 24))
for dt, tol, kw in [(np.float32, 1e-5, {}), (np.float32, 1e-5, {"causal": True}),
                    (np.float64, 1e-12, {"causal": True}),
                    (np.float64, 1e-12, {"window": (7, 0), "causal": True})]:
    q, k, v = (a.astype(dt) for a in (Q, K, V))
    out = attnpy.attention(q, k, v, **kw)
    ref = reference.attention(q, k, v, **kw)
    err = float(np.max(np.abs(out - ref)))
    assert out.dtype == dt and err < tol, (dt, kw, err)
q = Q.astype(np.float32)
kv = K[:, :1].astype(np.float32)
out = attnpy.attention(q, kv, kv, enable_gqa=True, causal=True)
ref = reference.attention(q, kv, kv, enable_gqa=True, causal=True)
assert float(np.max(np.abs(out - ref))) < 1e-5
print("aarch64 wheel: %s, Python %s, NumPy %s, isa %s, attention == reference: OK"
      % (platform.machine(), sys.version.split()[0], np.__version__, attnpy._core.isa()))
EOF
# the API tests too, from a copy of tests/ (no attnpy/ sources beside it);
# the three that start `python` as a child process cannot run here: qemu-user
# runs one program, and an AArch64 child needs binfmt_misc, which this
# machine does not register
mkdir -p "$WORK/a64"
cp -r "$ROOT/tests" "$ROOT/pyproject.toml" "$WORK/a64/"
t=tests/attention/test_api_basic.py
(cd "$WORK/a64" && PYTHONPATH=/site PYTHONNOUSERSITE=1 qemu-aarch64 \
    -L "$A64/root" "$A64/root/usr/bin/python3.11" -m pytest -q \
    -p no:cacheprovider "$t" \
    --deselect "$t::test_worked_example_cli_prints_exact_steps_and_tutorial_drift" \
    --deselect "$t::test_worked_example_decimals_option" \
    --deselect "$t::test_num_threads_setting_and_environment") | tail -n 1
# the bits battery: NEON (and the portable code built for AArch64) give
# the digests the portable set gave on x86-64, at 1 to 4 threads
(cd "$WORK/a64" && PYTHONPATH=/site PYTHONNOUSERSITE=1 qemu-aarch64 \
    -L "$A64/root" "$A64/root/usr/bin/python3.11" -m pytest -q \
    -p no:cacheprovider tests/attention/test_bits_battery.py) | tail -n 1
echo "test_wheel.sh: OK"

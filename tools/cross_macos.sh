#!/usr/bin/env bash
# tools/cross_macos.sh -- the C core compiled for macOS (Apple silicon and
# Intel) with zig's clang (PyPI ziglang), on this Linux machine.
#
#   every csrc/core file, and tools/c_smoke.c and the tests/c programs,
#   compiled (-c -o: zig has macOS's headers, not its linker's libraries)
#   for aarch64-macos (the NEON path) and x86_64-macos (AVX2 / AVX-512
#   with target attributes), -std=c11 -Wall -Wextra -Werror with the
#   flags setup.py uses (-O3 -ffp-contract=off); no warning allowed.
# Compiles only: nothing is run (no macOS here). Installs ziglang with pip
# (PYTHON, default python3) when `python -m ziglang` is missing.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_cross.sh"
PY=${PYTHON:-python3}
if ! "$PY" -m ziglang version >/dev/null 2>&1; then
    echo "installing ziglang" >&2
    "$PY" -m pip install -q ziglang >&2
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-mac.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
flags=(-std=c11 -Wall -Wextra -O3 -fno-strict-aliasing -ffp-contract=off)
for target in aarch64-macos x86_64-macos; do
    compile_core_clean "$OUT/$target" "$PY" -m ziglang cc -target "$target" \
        "${flags[@]}"
    log=$OUT/$target/tests.log
    : >"$log"
    # the test programs see the sets' math rows, as tools/c_tests.sh
    # builds them (ATTN_MATH_ROWS: isa/kernels.h)
    for c in "$ROOT"/tools/c_smoke.c "$ROOT"/tests/c/*.c; do
        "$PY" -m ziglang cc -target "$target" "${flags[@]}" -Werror \
            -DATTN_MATH_ROWS=1 \
            -I"$ROOT/csrc/core" -I"$ROOT/tests/c" -c "$c" \
            -o "$OUT/$target/$(basename "${c%.c}").o" >>"$log" 2>&1 \
            || echo "FAILED: $c" >>"$log"
    done
    if [ -s "$log" ]; then
        cat "$log" >&2
        echo "cross_macos.sh: $target: the C test programs do not compile" \
             "cleanly" >&2
        exit 1
    fi
    echo "$target: tools/c_smoke.c and tests/c/*.c compile, no warnings"
done
echo "cross_macos.sh: OK"

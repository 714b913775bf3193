#!/usr/bin/env bash
# tools/cross_windows.sh -- the C core built for Windows x86-64 and its C
# tests run under wine, on this Linux machine.
#
#   1. every csrc/core file compiled with mingw-w64 gcc at -O3 (-Wall
#      -Wextra -Werror: no warning allowed; -O1's warnings are gcc's own,
#      checked natively by tools/c_tests.sh and tools/valgrind.sh), and its
#      objects checked to need no pthreads (the core's Windows build uses
#      Win32 threads: runtime/thread.h, as MSVC builds do)
#   2. tools/c_smoke.c and the tests/c programs (these use winpthreads
#      themselves), linked with those objects (compiled with the tests'
#      ATTN_MATH_ROWS=1) and statically, run under wine64 with their short
#      default arguments: every instruction set the CPU has (portable,
#      AVX2, AVX-512) against the C oracle. fork() is not on Windows.
# Installs mingw-w64's x86-64 C compiler (gcc-mingw-w64-x86-64-win32) and
# wine64 (--no-install-recommends) with apt-get when missing. Exits
# nonzero on any warning or failure. The Python binding (csrc/python)
# needs Windows' Python headers and is not built here; MSVC builds are
# for cibuildwheel on a Windows runner.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_cross.sh"
need_tools gcc-mingw-w64-x86-64-win32 wine64 -- x86_64-w64-mingw32-gcc
WINE=/usr/lib/wine/wine64
[ -x "$WINE" ] || need_tools wine64 -- wine64
[ -x "$WINE" ] || WINE=$(command -v wine64)
CC=x86_64-w64-mingw32-gcc
OUT=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-win.XXXXXX")
# wine's server outlives the programs and still writes to the prefix for a
# moment: stop it and wait for it before removing the prefix (a plain rm
# raced it: "Directory not empty", and the script failed after its OK)
WINESERVER=$(dirname "$WINE")/wineserver
[ -x "$WINESERVER" ] || WINESERVER=$(command -v wineserver || echo true)
cleanup() {
    if [ "${WINEPREFIX:-}" = "$OUT/wineprefix" ] && [ -d "$WINEPREFIX" ]; then
        "$WINESERVER" -k 2>/dev/null || true
        "$WINESERVER" -w 2>/dev/null || true
    fi
    rm -rf "$OUT"
}
trap cleanup EXIT

compile_core_clean "$OUT/o3" "$CC" -std=c11 -Wall -Wextra -O3 \
    -fno-strict-aliasing -DATTN_MATH_ROWS=1
if x86_64-w64-mingw32-nm -u "$OUT"/o3/obj/*.o | grep -q pthread_; then
    echo "cross_windows.sh: the core's objects need pthreads:" >&2
    x86_64-w64-mingw32-nm -uA "$OUT"/o3/obj/*.o | grep pthread_ >&2
    exit 1
fi
echo "core objects: no pthread symbols (Win32 threads)"

export CC CROSS_FLAGS="-O2 -Werror -static"
CORE_OBJS=$(core_objs "$OUT/o3/obj")
export CORE_OBJS
export WINEDEBUG=-all WINEPREFIX=${WINEPREFIX:-$OUT/wineprefix}
# the prefix, and a server that stays up until cleanup(), before the
# programs run side by side (two first calls at once race to create them)
"$WINE" wineboot -i >/dev/null 2>&1 || true
"$WINESERVER" -p 2>/dev/null || true
run_c_tests "$OUT" "$WINE"
echo "cross_windows.sh: OK"

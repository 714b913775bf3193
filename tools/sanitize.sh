#!/usr/bin/env bash
# tools/sanitize.sh -- attnpy under AddressSanitizer + UndefinedBehaviorSanitizer.
#
#   tools/sanitize.sh [extra pytest args...]
#
# 1. Copies the repository (working tree, without .git, build/ and *.so) to
#    a temporary directory: the in-place extension of your checkout is
#    never touched.
# 2. Builds the extension there with ATTNPY_SANITIZE=address,undefined
#    (setup.py adds -fsanitize=... -fno-omit-frame-pointer -g1 -O1).
# 3. Builds and runs the C test programs (tools/c_smoke.c, tests/c/*) with
#    the same sanitizers and LeakSanitizer on (detect_leaks=1).
# 4. Runs the pytest suite on the sanitized extension with libasan
#    preloaded into Python (PYTHONMALLOC=malloc so that Python objects are
#    checked too), detect_leaks=0 (CPython itself "leaks" at exit), huge
#    allocations returning NULL (-> MemoryError) instead of aborting.
#    Left out: tests/reliability/test_leaks.py (RSS and valgrind measurements are
#    meaningless under ASan's quarantine and LD_PRELOAD).
# Any sanitizer report -- in this process or any child -- makes the script
# exit nonzero (reports go to log files that are checked at the end).
#
# Needs gcc's libasan/libubsan (Debian: libgcc-12-dev + libasan8 +
# libubsan1, present with gcc); installs them with apt-get if missing.
# Env: CC (default gcc), KEEP=1 keeps the temporary directory,
# SANITIZE_C_ARGS (default 40): arguments for the tests/c programs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/tools/c_tests.sh"
export CC=${CC:-gcc}
PY=${PYTHON:-python3}
start=$(date +%s)
phase() { echo "sanitize.sh: [$(( $(date +%s) - start )) s] $*"; }

# --- the runtime -----------------------------------------------------------
libasan=$("$CC" -print-file-name=libasan.so)
if [ ! -e "$libasan" ] || [ ! -e "$("$CC" -print-file-name=libubsan.so)" ]; then
    echo "sanitize.sh: installing the sanitizer runtimes" >&2
    ver=$("$CC" -dumpversion | cut -d. -f1)
    apt-get update -qq && apt-get install -y -qq "libgcc-$ver-dev" libasan8 \
        libubsan1 >&2
    libasan=$("$CC" -print-file-name=libasan.so)
fi
libasan=$(readlink -f "$libasan")
[ -e "$libasan" ] || { echo "sanitize.sh: no libasan for $CC" >&2; exit 2; }
# libstdc++ is preloaded too: otherwise ASan's __cxa_throw interceptor finds
# no real __cxa_throw when a C++ extension (matplotlib) throws, and aborts
libstdcxx=$(readlink -f "$("$CC" -print-file-name=libstdc++.so.6)")
preload=$libasan
[ -e "$libstdcxx" ] && preload="$libasan:$libstdcxx"

# --- 1. a private copy ---------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-sanitize.XXXXXX")
LOGS="$WORK/_sanitizer_logs"
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        echo "sanitize.sh: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
tar -C "$ROOT" --exclude=./.git --exclude=./build --exclude='*.so' \
    --exclude=./.venv --exclude='__pycache__' --exclude=./.hypothesis \
    --exclude=./.pytest_cache -cf - . | tar -C "$WORK" -xf -
mkdir -p "$LOGS"

# --- 2. the sanitized extension ---------------------------------------------------
phase "building the extension with -fsanitize=address,undefined"
# setup.py run by hand reads pyproject.toml's metadata itself (PEP 639's
# license = "MIT"): setuptools >= 77, which pip's build isolation fetches
# but a fresh venv's bundled setuptools is older than
"$PY" -c 'import setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' \
    2>/dev/null || "$PY" -m pip install -q "setuptools>=77" || exit 1
# (gcc_vzeroupper: setup.py's -O1 for the sanitizers, as fast as -O2's
# code where the AVX code returns to SSE code, tools/c_tests.sh)
(cd "$WORK" && CFLAGS="${CFLAGS:-} $(gcc_vzeroupper "$CC")" \
    ATTNPY_SANITIZE=address,undefined "$PY" setup.py \
    build_ext --inplace -q --parallel "$(nproc)" >"$LOGS/build.txt" 2>&1) || {
    cat "$LOGS/build.txt" >&2
    exit 1
}
so=$(ls "$WORK"/attnpy/_core*.so)
case "$(ldd "$so")" in
    *libasan*) ;;
    *) echo "sanitize.sh: $so is not linked with libasan" >&2; exit 1 ;;
esac

UBSAN_COMMON="halt_on_error=1:print_stacktrace=1"
fail=0

# --- 3. the C programs -----------------------------------------------------------------
# link with the extension's own sanitized objects of csrc/core/ (the
# core compiled once, with exactly the flags the Python run uses)
CORE_OBJS=$(find "$WORK/build" -path '*csrc/core/*.o' | sort | tr '\n' ' ')
[ -n "$CORE_OBJS" ] || { echo "sanitize.sh: no core objects in build/" >&2; exit 1; }
export CORE_OBJS
phase "building the C test programs"
# line tables only (-g1): the reports' files and lines, at 60% of -g's
# compile time
mapfile -t programs < <(build_c_programs "$WORK" "$WORK/_cbin" -O1 -g1 \
    -fsanitize=address,undefined -fno-omit-frame-pointer)
# one program per CPU at a time; their output is shown in order after
san_one() {
    local args=()
    [ "$(basename "$1")" = c_smoke ] || args=(${SANITIZE_C_ARGS:-40})
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:log_path=$LOGS/c-asan" \
        UBSAN_OPTIONS="$UBSAN_COMMON:log_path=$LOGS/c-ubsan" \
        "$1" "${args[@]}"
}
phase "running ${#programs[@]} C programs (ASan+UBSan+LSan)"
each_parallel "$WORK/_cruns" san_one "${programs[@]}"
for prog in "${programs[@]}"; do
    name=$(basename "$prog")
    echo "sanitize.sh: $name:"
    tail -3 "$WORK/_cruns/$name.out"
    if [ "$(cat "$WORK/_cruns/$name.rc")" != 0 ] \
            || ! c_output_ok "$WORK/_cruns/$name.out"; then
        cat "$WORK/_cruns/$name.out" >&2
        echo "sanitize.sh: FAILED: $name" >&2
        fail=1
    fi
done
phase "C programs done"

# --- 4. Python -------------------------------------------------------------------------
phase "running pytest on the sanitized extension"
(
    cd "$WORK"
    export LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}"
    export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:max_allocation_size=8589934592:handle_segv=1:log_path=$LOGS/py-asan"
    export UBSAN_OPTIONS="$UBSAN_COMMON:log_path=$LOGS/py-ubsan"
    export PYTHONMALLOC=malloc
    export PYTHONFAULTHANDLER=1
    # tests/c builds the C programs without the sanitizers: they ran
    # above with them
    "$PY" -m pytest -q -p no:cacheprovider \
        --ignore=tests/reliability/test_leaks.py --ignore=tests/c "$@"
) || fail=1

phase "pytest done"
# --- any report anywhere fails the run ---------------------------------------------------
# (the logs also hold ASan's "failed to allocate 0x... bytes" warnings for
# the tests' deliberately huge requests, which then raise MemoryError:
# those are not reports)
reports=""
for log in "$LOGS"/*san.*; do
    [ -e "$log" ] || continue
    if grep -v -E 'WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$' \
            "$log" | grep -q .; then
        reports="$reports $log"
    fi
done
if [ -n "$reports" ]; then
    for r in $reports; do
        echo "===== sanitizer report: $r" >&2
        head -80 "$r" >&2
    done
    fail=1
fi
nwarn=$(cat "$LOGS"/*san.* 2>/dev/null | grep -c "failed to allocate" || true)
echo "sanitize.sh: sanitizer reports: $(echo $reports | wc -w);" \
     "refused huge allocations (expected): $nwarn"
took=$(( $(date +%s) - start ))
if [ "$fail" -ne 0 ]; then
    echo "sanitize.sh: FAILED (${took} s)" >&2
    exit 1
fi
echo "sanitize.sh: OK (${took} s)"

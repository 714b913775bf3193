#!/usr/bin/env bash
# tools/valgrind.sh -- the attnpy C core's test programs under valgrind.
#
# Builds tools/c_smoke.c and the kernel's tests/c programs (see
# tools/c_tests.sh) with -O1 -g1 (line tables: the reports' lines) into
# a temporary directory and runs each under valgrind memcheck:
#
#   valgrind --error-exitcode=99 --leak-check=full
#            --errors-for-leak-kinds=definite,indirect ...
#
# with ATTN_CHECK_SMALL=1 (the programs' big random problems drawn at the
# small ones' sizes; natively and under the sanitizers they stay big); a
# program with an error is run again with --track-origins=yes.
#
# The script fails (exit 1) on
#   * any memory error (invalid read/write/free, use of uninitialised
#     values, bad syscall arguments, overlapping memcpy) in any process,
#     forked children included;
#   * any definitely or indirectly lost block in the program's own process
#     (a forked child that leaves with _exit() without freeing is not a
#     leak, so children's leak records are shown but do not fail the run).
# A program whose own checks fail only under valgrind (e.g. ulp bounds of
# an FMA-based exp, which valgrind emulates with different rounding, or a
# fork test whose child valgrind gave exit code 99 for the above) is
# reported as a warning: its checks run natively in tests/c/test_c_core.py.
#
#   tools/valgrind.sh            # from anywhere; prints "valgrind.sh: OK"
#   VALGRIND_C_ARGS=50 tools/valgrind.sh   # arguments for tests/c programs
#                                          # (default: none, their own counts)
#
#   C_BIN=DIR tools/valgrind.sh   # builds the programs into DIR and keeps
#                                 # them (CI's full-counts step runs the
#                                 # same programs natively: ATTNPY_C_BIN)
#
# The programs are built with -Werror: a compiler warning fails the run.
# Needs: a C compiler (CC, default cc) and valgrind (apt-get install
# valgrind). Python is not involved.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/tools/c_tests.sh"

if ! command -v valgrind >/dev/null; then
    echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-valgrind.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
BIN=${C_BIN:-$OUT/bin}
mkdir -p "$BIN" && BIN=$(cd "$BIN" && pwd)
start=$(date +%s)
VG_ERR=99
MEM_ERRORS='^==[0-9]+== (Invalid (read|write|free)|Conditional jump or move depends|Use of uninitialised|Syscall param|Mismatched free|Source and destination overlap|Argument .* of function .* has a fishy)'

mapfile -t programs < <(build_c_programs "$ROOT" "$BIN" -O1 -g1 -Werror)
# the build runs in a process substitution, whose status is lost: every
# program must be there
if [ ${#programs[@]} -ne "$(c_program_sources "$ROOT" | wc -l)" ]; then
    echo "valgrind.sh: ${#programs[@]} programs built" >&2
    exit 1
fi
# one valgrind per CPU at a time (each program is one process under
# valgrind, which serialises its threads); the results are read in order
vg_one() {
    local prog=$1 name args=() pid
    name=$(basename "$prog")
    # the tests/c programs take a count of random problems (their own
    # default, 6-8, unless VALGRIND_C_ARGS is set) on top of their fixed
    # cases, which run whatever the count; valgrind runs ~50x slower
    [ "$name" = c_smoke ] || [ -z "${VALGRIND_C_ARGS:-}" ] \
        || args=($VALGRIND_C_ARGS)
    mkdir -p "$OUT/logs-$name"
    # ATTN_CHECK_SMALL: the programs' "big" random problems at the small
    # ones' sizes (tests/c/check.h); --track-origins (a third more time) only
    # in the rerun of a program that shows an error, to say where the
    # uninitialised value came from
    ATTN_CHECK_SMALL=1 valgrind --error-exitcode=$VG_ERR --leak-check=full \
        --errors-for-leak-kinds=definite,indirect \
        --show-leak-kinds=definite,indirect ${VG_ORIGINS:-} \
        --log-file="$OUT/logs-$name/vg.%p" "$prog" "${args[@]}" \
        >"$OUT/logs-$name/stdout.txt" 2>&1 &
    pid=$!
    echo "$pid" >"$OUT/logs-$name/main.pid"
    wait "$pid"
}
echo "valgrind.sh: running ${#programs[@]} programs, $(nproc 2>/dev/null || echo 2) at a time"
each_parallel "$OUT/runs" vg_one "${programs[@]}"
status=0
for prog in "${programs[@]}"; do
    name=$(basename "$prog")
    echo "valgrind.sh: $name"
    rc=$(cat "$OUT/runs/$name.rc")
    pid=$(cat "$OUT/logs-$name/main.pid")
    tail -3 "$OUT/logs-$name/stdout.txt"
    main_log="$OUT/logs-$name/vg.$pid"
    bad=0
    # memory errors in any process
    for log in "$OUT/logs-$name"/vg.*; do
        if grep -Eq "$MEM_ERRORS" "$log"; then
            echo "valgrind.sh: memory errors in $name (process ${log##*.}):" >&2
            cat "$log" >&2
            bad=1
        fi
    done
    # leaks (and every other error) in the program's own process
    if [ "$rc" -eq "$VG_ERR" ] || ! grep -q "ERROR SUMMARY: 0 errors" "$main_log"; then
        echo "valgrind.sh: errors or leaks in $name:" >&2
        cat "$main_log" >&2
        bad=1
    fi
    for log in "$OUT/logs-$name"/vg.*; do
        if [ "$log" != "$main_log" ] && grep -q "definitely lost in" "$log"; then
            echo "valgrind.sh: note: a forked child of $name exited without" \
                 "freeing (not counted):" \
                 "$(grep -c 'definitely lost in' "$log") leak record(s)"
        fi
    done
    if [ "$bad" -ne 0 ]; then
        status=1
        echo "valgrind.sh: $name again with --track-origins=yes:" >&2
        rm -f "$OUT/logs-$name"/vg.*
        VG_ORIGINS=--track-origins=yes vg_one "$prog" || true
        cat "$OUT/logs-$name"/vg.* >&2
    elif [ "$rc" -ne 0 ]; then
        echo "valgrind.sh: WARNING: $name's own checks failed under valgrind" \
             "(exit $rc; no memory error):"
        grep -E "FAIL" "$OUT/logs-$name/stdout.txt" | head -20 || true
    fi
done
if [ "$status" -ne 0 ]; then
    echo "valgrind.sh: FAILED" >&2
    exit "$status"
fi
echo "valgrind.sh: OK (${#programs[@]} programs, $(( $(date +%s) - start )) s)"

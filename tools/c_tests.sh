#!/usr/bin/env bash
# tools/c_tests.sh -- the one place that knows how to build and run the C
# core's test programs, without Python. tests/c/test_c_core.py (the fast
# suite), tests/c/Makefile, tools/valgrind.sh, tools/sanitize.sh and the
# cross scripts (tools/_cross.sh) all build through it.
#
# The programs: tools/c_smoke.c (a workout of every core entry point) and
# every tests/c/*.c that defines main() except the bench_*.c timers; the
# other tests/c/*.c files are helpers linked into each. Each is linked
# with csrc/core/*/*.c (the pure C core; never the binding in csrc/python/).
#
#   tools/c_tests.sh [--bin DIR] [--count N] [NAME ...]
#       builds every program ($CC, default cc, with $C_TESTS_CFLAGS,
#       default "-O1 -g -Werror"; or uses the ones already built in DIR),
#       runs NAME ... (default: all) one per CPU at a time, each tests/c
#       program with N random problems on top of its fixed cases (default:
#       the program's own, 6-8), shows each one's output and fails when
#       any fails. Prints "c_tests.sh: OK (...)" at the end.
#   tools/c_tests.sh list              the program names, one a line
#   tools/c_tests.sh build OUT FLAGS.. builds into OUT, prints the paths
#
# Sourced (valgrind.sh, sanitize.sh, _cross.sh) it only defines:
#   c_program_sources SRC_ROOT   the main() files, c_smoke.c first
#   gcc_vzeroupper CC          gcc's flag for vzeroupper below -O2
#   build_c_programs SRC_ROOT OUT CFLAGS...
#       compiles the core and the helpers once, in parallel (one job per
#       CPU) -- or, when CORE_OBJS lists object files of the core built
#       with the same flags (sanitize.sh reuses the extension's), links
#       from those -- then links each program; prints their paths. Fails
#       when any program did not build.
#   each_parallel DIR FN PROG...
#       runs "FN PROG" for every PROG, as many at a time as there are
#       CPUs, with stdout+stderr in DIR/<name>.out and the exit status in
#       DIR/<name>.rc; returns when all are done.
#   c_output_ok LOG
#       true when the program's last line reports success: "N passed, 0
#       failed ..." or "...: OK (N checks)", with N > 40 (the checks ran
#       at all).

c_program_sources() {
    local src=$1 f
    echo "$src/tools/c_smoke.c"
    for f in "$src"/tests/c/*.c; do
        [ -e "$f" ] || continue
        case $(basename "$f") in bench_*) continue ;; esac  # timers
        grep -Eq '^[[:space:]]*int[[:space:]]+main[[:space:]]*\(' "$f" \
            && echo "$f"
    done
}

# gcc_vzeroupper CC -- "-fexpensive-optimizations" when CC is gcc: gcc
# clears the vector registers' upper halves (vzeroupper) at the end of AVX
# code only with it, which -O2 turns on; at -O1 the dirty halves made every
# later SSE instruction ~60x slower on a Sapphire Rapids VM (test_amx, 60
# problems: 27 s, with it 2 s). clang always clears them (and rejects the
# flag under -Werror).
gcc_vzeroupper() {
    local m
    # shellcheck disable=SC2086
    m=$($1 -dM -E -x c /dev/null 2>/dev/null) || return 0
    case $m in *__clang__*) ;; *__GNUC__*) echo -fexpensive-optimizations ;; esac
}

build_c_programs() {
    local src=$1 out=$2
    shift 2
    local cc=${CC:-cc}
    # ATTN_MATH_ROWS: the sets' tables carry simd/math.h's functions over
    # rows (isa/kernels.h), what test_math and test_core check per set
    local flags=(-std=c11 -Wall -Wextra -pthread -DATTN_MATH_ROWS=1 "$@"
                 $(gcc_vzeroupper "$cc") -I"$src/csrc/core" -I"$src/tests/c")
    local mains=() helpers=() f
    mapfile -t mains < <(c_program_sources "$src")
    for f in "$src"/tests/c/*.c; do
        [ -e "$f" ] || continue
        case $(basename "$f") in bench_*) continue ;; esac
        case " ${mains[*]} " in *" $f "*) ;; *) helpers+=("$f") ;; esac
    done
    mkdir -p "$out/obj"
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    local objs=() c o srcs=("$src"/csrc/core/*/*.c "${helpers[@]}")
    if [ -n "${CORE_OBJS:-}" ]; then
        read -r -a objs <<<"$CORE_OBJS"
        # the naive oracles of csrc/core/testing/ are not in the
        # extension's objects: the programs compile them here
        srcs=("${helpers[@]}")
        for c in "$src"/csrc/core/testing/*.c; do
            [ -e "$c" ] && srcs+=("$c")
        done
    fi
    for c in "${srcs[@]}"; do
        o="$out/obj/$(basename "${c%.c}").o"
        objs+=("$o")
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
            wait -n || true
        done
        "$cc" "${flags[@]}" -c "$c" -o "$o" >&2 &
    done
    wait
    for o in "${objs[@]}"; do
        [ -e "$o" ] || { echo "build_c_programs: failed to build $o" >&2; return 1; }
    done
    local m name
    for m in "${mains[@]}"; do
        name=$(basename "${m%.c}")
        "$cc" "${flags[@]}" -o "$out/$name" "$m" "${objs[@]}" -lm >&2 \
            || { echo "build_c_programs: failed to build $name" >&2; return 1; }
        echo "$out/$name"
    done
}

each_parallel() {
    local dir=$1 fn=$2
    shift 2
    local jobs prog name
    jobs=$(nproc 2>/dev/null || echo 2)
    mkdir -p "$dir"
    for prog in "$@"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
            wait -n || true
        done
        name=$(basename "$prog")
        (
            set +e
            "$fn" "$prog" >"$dir/$name.out" 2>&1
            echo $? >"$dir/$name.rc"
        ) &
    done
    wait
}

c_output_ok() {
    local last n
    last=$(tail -n 1 "$1" | tr -d '\r')
    if [[ $last =~ ^([0-9]+)\ passed,\ 0\ failed ]]; then
        n=${BASH_REMATCH[1]}
    elif [[ $last =~ :\ OK\ \(([0-9]+)\ checks\) ]]; then
        n=${BASH_REMATCH[1]}
    else
        return 1
    fi
    [ "$n" -gt 40 ]
}

# --- the command line (not when sourced) ----------------------------------------
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    case "${1:-}" in
        list)
            c_program_sources "$ROOT" | while read -r f; do
                basename "${f%.c}"
            done
            exit 0 ;;
        build)
            [ $# -ge 2 ] || { echo "usage: c_tests.sh build OUT [CFLAGS...]" >&2; exit 2; }
            out=$2
            shift 2
            build_c_programs "$ROOT" "$out" "$@"
            exit ;;
    esac
    bin="" count="" names=()
    while [ $# -gt 0 ]; do
        case $1 in
            --bin) bin=$2; shift 2 ;;
            --count) count=$2; shift 2 ;;
            -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
            *) names+=("$1"); shift ;;
        esac
    done
    start=$(date +%s)
    work=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-c_tests.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    if [ -z "$bin" ]; then
        bin=$work/bin
        # shellcheck disable=SC2086
        build_c_programs "$ROOT" "$bin" ${C_TESTS_CFLAGS:--O1 -g -Werror} >/dev/null
    fi
    if [ ${#names[@]} -eq 0 ]; then
        for f in $(c_program_sources "$ROOT"); do names+=("$(basename "${f%.c}")"); done
    fi
    progs=()
    for n in "${names[@]}"; do
        [ -x "$bin/$n" ] || { echo "c_tests.sh: no program $bin/$n" >&2; exit 2; }
        progs+=("$bin/$n")
    done
    _run_native() {
        local args=()
        [ "$(basename "$1")" = c_smoke ] || [ -z "$count" ] || args=("$count")
        "$1" "${args[@]}"
    }
    each_parallel "$work/runs" _run_native "${progs[@]}"
    fail=0
    for p in "${progs[@]}"; do
        n=$(basename "$p")
        log=$work/runs/$n.out
        if [ "$(cat "$work/runs/$n.rc")" = 0 ] && c_output_ok "$log"; then
            echo "c_tests.sh: $n: $(tail -n 1 "$log")"
        else
            cat "$log"
            echo "c_tests.sh: FAILED: $n (exit $(cat "$work/runs/$n.rc"))"
            fail=1
        fi
    done
    took=$(( $(date +%s) - start ))
    if [ $fail != 0 ]; then
        echo "c_tests.sh: FAILED (${took} s)" >&2
        exit 1
    fi
    echo "c_tests.sh: OK (${#progs[@]} programs, count ${count:-default}, ${took} s)"
fi

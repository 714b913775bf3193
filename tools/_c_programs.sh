# tools/_c_programs.sh -- sourced by valgrind.sh and sanitize.sh.
#
# build_c_programs SRC_ROOT OUT_DIR CFLAGS...
#   Builds the C test programs of the attnpy core, without Python:
#     * tools/c_smoke.c (this directory's workout of every core entry point)
#     * every tests/c/*.c that defines main() (the kernel's C tests; not
#       the bench_*.c timing programs); the
#       other tests/c/*.c files are linked into each of them as helpers.
#   Each is linked with csrc/core/*/*.c (the pure C core; never the binding
#   in csrc/python/), compiled once, in parallel (one job per CPU) -- or,
#   when the variable CORE_OBJS lists object files of the core built with the same flags
#   (sanitize.sh reuses the extension's), linked from those.
#   Prints the paths of the programs built, one per line, on stdout.
#
# each_parallel DIR FN PROG...
#   Runs "FN PROG" for every PROG, as many at a time as there are CPUs,
#   each with its stdout and stderr in DIR/<name>.out and its exit status
#   in DIR/<name>.rc, and returns when all are done (the caller then reads
#   the results in order).

build_c_programs() {
    local src=$1 out=$2
    shift 2
    local cc=${CC:-cc}
    local flags=(-std=c11 -Wall -Wextra -pthread "$@" -I"$src/csrc/core"
                 -I"$src/tests/c")
    local helpers=() mains=()
    if [ -d "$src/tests/c" ]; then
        local f
        for f in "$src"/tests/c/*.c; do
            [ -e "$f" ] || continue
            case $(basename "$f") in bench_*) continue ;; esac  # timers
            if grep -Eq '^[[:space:]]*int[[:space:]]+main[[:space:]]*\(' "$f"; then
                mains+=("$f")
            else
                helpers+=("$f")
            fi
        done
    fi
    mains=("$src/tools/c_smoke.c" "${mains[@]}")
    mkdir -p "$out/obj"
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    # objects of the core and the helpers, compiled in parallel
    local objs=() c o srcs=("$src"/csrc/core/*/*.c "${helpers[@]}")
    if [ -n "${CORE_OBJS:-}" ]; then
        read -r -a objs <<<"$CORE_OBJS"
        srcs=("${helpers[@]}")
    fi
    for c in "${srcs[@]}"; do
        o="$out/obj/$(basename "${c%.c}").o"
        objs+=("$o")
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
            wait -n
        done
        "$cc" "${flags[@]}" -c "$c" -o "$o" >&2 &
    done
    local pid
    for pid in $(jobs -rp); do
        wait "$pid"
    done
    for o in "${objs[@]}"; do
        [ -e "$o" ] || { echo "build_c_programs: failed to build $o" >&2; return 1; }
    done
    local m name
    for m in "${mains[@]}"; do
        name=$(basename "${m%.c}")
        "$cc" "${flags[@]}" -o "$out/$name" "$m" "${objs[@]}" -lm >&2
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

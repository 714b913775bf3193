# tools/_cross.sh -- sourced by the cross_*.sh scripts.
#
# need_tools PACKAGES -- COMMANDS...
#   Installs the Debian PACKAGES (apt-get, --no-install-recommends) when
#   one of COMMANDS is missing; fails when they are still missing.
# compile_core_clean OUT CC FLAGS...
#   Compiles every csrc/core/*/*.c file to OUT/obj/*.o (-c -o) with
#   -Werror; fails if any compiler output at all (a warning) appears.
# core_objs OBJDIR
#   The objects compile_core_clean left in OBJDIR, as CORE_OBJS for
#   run_c_tests (csrc/core/testing/'s oracles left out: build_c_programs
#   compiles those itself).
# run_c_tests OUT RUNNER...
#   Builds tools/c_smoke.c and every tests/c program (tools/c_tests.sh,
#   with $CC and $CROSS_FLAGS) and runs each with RUNNER (wine, qemu) and
#   the program's short default arguments; fails on any failure.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/tools/c_tests.sh"

need_tools() {
    local pkgs=() cmds=() seen=0 a missing=0
    for a in "$@"; do
        if [ "$a" = -- ]; then seen=1; elif [ $seen = 0 ]; then pkgs+=("$a")
        else cmds+=("$a"); fi
    done
    for a in "${cmds[@]}"; do command -v "$a" >/dev/null || missing=1; done
    if [ $missing = 1 ]; then
        echo "installing ${pkgs[*]}" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends -o APT::Keep-Downloaded-Packages=false \
            "${pkgs[@]}" >&2
    fi
    for a in "${cmds[@]}"; do
        command -v "$a" >/dev/null || { echo "missing: $a" >&2; return 1; }
    done
}

compile_core_clean() {
    local out=$1 cc=$2
    shift 2
    mkdir -p "$out/obj"
    rm -rf "$out"/obj/*.o "$out/clog"
    local c fail=0 log=$out/compile.log
    _CC=("$cc" "$@" -Werror -I"$ROOT/csrc/core")
    _OBJ=$out/obj
    # one compiler per CPU at a time (tools/c_tests.sh)
    each_parallel "$out/clog" _compile_one "$ROOT"/csrc/core/*/*.c
    cat "$out"/clog/*.out >"$log"
    for c in "$ROOT"/csrc/core/*/*.c; do
        [ "$(cat "$out/clog/$(basename "$c").rc")" = 0 ] || fail=1
    done
    if [ $fail = 1 ] || [ -s "$log" ]; then
        cat "$log" >&2
        echo "compile_core_clean: $cc: errors or warnings" >&2
        return 1
    fi
    echo "$cc $*: $(ls "$ROOT"/csrc/core/*/*.c | wc -l) core files, no warnings"
}

_compile_one() {
    local o
    o=$(basename "${1%.c}")
    "${_CC[@]}" -c "$1" -o "$_OBJ/$o.o"
}

core_objs() {
    local c objs=
    for c in "$ROOT"/csrc/core/*/*.c; do
        case $c in */testing/*) ;; *) objs+="$1/$(basename "${c%.c}").o " ;; esac
    done
    echo "$objs"
}
run_c_tests() {
    local out=$1
    shift
    local progs p fail=0
    mapfile -t progs < <(build_c_programs "$ROOT" "$out/bin" $CROSS_FLAGS) \
        || return 1
    [ ${#progs[@]} -ge 2 ] || { echo "run_c_tests: nothing built" >&2; return 1; }
    # a program that failed to build ends the list early (the build runs in
    # a process substitution, whose status is lost): every program must be
    # there, or the run fails
    local want
    want=$(c_program_sources "$ROOT" | wc -l)
    if [ ${#progs[@]} -ne "$want" ]; then
        echo "run_c_tests: ${#progs[@]} of $want programs built" >&2
        fail=1
    fi
    # the first program runs alone (wine creates its prefix and starts its
    # server there: two first calls at once race), the others one per CPU
    # at a time; the results are read in order
    local i
    for i in "${!progs[@]}"; do
        [ -e "${progs[$i]}.exe" ] && progs[$i]=${progs[$i]}.exe
    done
    _RUNNER=("$@")
    each_parallel "$out/runs" _run_with_runner "${progs[0]}"
    each_parallel "$out/runs" _run_with_runner "${progs[@]:1}"
    for p in "${progs[@]}"; do
        echo "--- $(basename "$p")"
        local log=$out/runs/$(basename "$p").out
        [ "$(cat "$out/runs/$(basename "$p").rc")" = 0 ] || fail=1
        grep -E 'FAIL|passed|OK|not tested|skipped|isa ' "$log" | grep -v '^  ' || true
        if ! c_output_ok "$log"; then
            fail=1
            tail -30 "$log" >&2
        fi
    done
    return $fail
}

_run_with_runner() { "${_RUNNER[@]}" "$1"; }

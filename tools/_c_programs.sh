# tools/_c_programs.sh -- sourced by valgrind.sh and sanitize.sh.
#
# build_c_programs SRC_ROOT OUT_DIR CFLAGS...
#   Builds the C test programs of the attnpy core, without Python:
#     * tools/c_smoke.c (this directory's workout of every core entry point)
#     * every tests/c/*.c that defines main() (the kernel's C tests); the
#       other tests/c/*.c files are linked into each of them as helpers.
#   Each is linked with csrc/attn_*.c (the pure C core; never module.c).
#   Prints the paths of the programs built, one per line, on stdout.

build_c_programs() {
    local src=$1 out=$2
    shift 2
    local cc=${CC:-cc}
    local core=("$src"/csrc/attn_*.c)
    local helpers=() mains=()
    if [ -d "$src/tests/c" ]; then
        local f
        for f in "$src"/tests/c/*.c; do
            [ -e "$f" ] || continue
            if grep -Eq '^[[:space:]]*int[[:space:]]+main[[:space:]]*\(' "$f"; then
                mains+=("$f")
            else
                helpers+=("$f")
            fi
        done
    fi
    mains=("$src/tools/c_smoke.c" "${mains[@]}")
    mkdir -p "$out"
    local m name
    for m in "${mains[@]}"; do
        name=$(basename "${m%.c}")
        "$cc" -std=c11 -Wall -Wextra -pthread "$@" -I"$src/csrc" \
            -I"$src/tests/c" -o "$out/$name" "$m" "${helpers[@]}" \
            "${core[@]}" -lm >&2
        echo "$out/$name"
    done
}

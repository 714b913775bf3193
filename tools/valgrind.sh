#!/usr/bin/env bash
# tools/valgrind.sh -- the attnpy C core's test programs under valgrind.
#
# Builds tools/c_smoke.c and the kernel's tests/c programs (see
# tools/_c_programs.sh) with -O1 -g into a temporary directory and runs each
# under valgrind memcheck. Any memory error, or any definitely / indirectly
# lost block, makes the script exit nonzero.
#
#   tools/valgrind.sh            # from anywhere; prints "valgrind.sh: OK"
#
# Needs: a C compiler (CC, default cc) and valgrind (apt-get install
# valgrind). Python is not involved.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/tools/_c_programs.sh"

if ! command -v valgrind >/dev/null; then
    echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-valgrind.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
start=$(date +%s)

mapfile -t programs < <(build_c_programs "$ROOT" "$OUT" -O1 -g)
status=0
for prog in "${programs[@]}"; do
    echo "valgrind.sh: running $(basename "$prog")"
    if ! valgrind -q --error-exitcode=1 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect --track-origins=yes \
            "$prog"; then
        echo "valgrind.sh: FAILED: $(basename "$prog")" >&2
        status=1
    fi
done
if [ "$status" -ne 0 ]; then
    exit "$status"
fi
echo "valgrind.sh: OK (${#programs[@]} programs, $(( $(date +%s) - start )) s)"

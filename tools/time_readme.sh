#!/usr/bin/env bash
# Times one of the README's two commands as a new user meets it: a fresh
# clone of this repository at COMMIT (default HEAD), a fresh venv (pip
# upgraded first, not timed), an empty pip cache, then the README's line run
# as it is there, its install part and the rest timed apart.
#
#   bash tools/time_readme.sh test [COMMIT]   # pip install -e ".[test]" && python -m pytest ...
#   bash tools/time_readme.sh main [COMMIT]   # pip install -e . && python -m attnpy
#
# Prints two lines: the commit and the command, then install / run / total
# seconds and the run's last output line. The budgets
# (docs/guide/testing.md): 60 s for main, 180 s for test, on a 2-CPU machine. Compare two commits by
# alternating them (A B B A): the machine's speed drifts.
set -uo pipefail
which=${1:-}
commit=${2:-HEAD}
case $which in
    test) pattern='^python -m pip install -e "\.\[test\]" && ' ;;
    main) pattern='^python -m pip install -e \. && python -m attnpy' ;;
    *) echo "usage: $0 test|main [COMMIT]" >&2; exit 2 ;;
esac
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$src" "$work/attnpy" && cd "$work/attnpy" \
    && git checkout -q "$commit" || exit 1
cmd=$(grep -m1 -E "$pattern" README.md) || {
    echo "no '$which' command in README.md at $commit" >&2; exit 1; }
python3 -m venv .venv && . .venv/bin/activate || exit 1
python -m pip install -q --upgrade pip >/dev/null 2>&1
export PIP_CACHE_DIR=$work/pip-cache
install=${cmd%% && *}
run=${cmd#* && }
t0=$(date +%s.%N)
eval "$install" >"$work/install.log" 2>&1
rc_install=$?
t1=$(date +%s.%N)
rc_run=-
if [ $rc_install -eq 0 ]; then
    eval "$run" >"$work/run.log" 2>&1
    rc_run=$?
else
    tail -20 "$work/install.log" >&2
fi
t2=$(date +%s.%N)
last=$(tail -1 "$work/run.log" 2>/dev/null)
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
printf '%s  %s\n  install %s s (exit %s)  run %s s (exit %s)  total %s s  | %s\n' \
    "$(git rev-parse --short HEAD)" "$cmd" \
    "$(secs "$t0" "$t1")" "$rc_install" \
    "$(secs "$t1" "$t2")" "$rc_run" \
    "$(secs "$t0" "$t2")" "$last"
[ "$rc_install" = 0 ] && [ "$rc_run" = 0 ]

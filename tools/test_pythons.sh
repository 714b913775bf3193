#!/usr/bin/env bash
# tools/test_pythons.sh -- the test suite under every supported CPython, each
# in a fresh virtual environment, against attnpy as a user installs it.
#
#   tools/test_pythons.sh [--wheels DIR] [VERSION ...] [-- PYTEST_ARGS ...]
#
#   PYTEST_ARGS replace the default selection, the whole suite
#   (tests README.md --pyargs attnpy), e.g. `-- -x tests/attention/test_api_basic.py`.
#   VERSION: 3.10 3.11 ... (default: every 3.10 - 3.13 found under
#   $PYENV_ROOT/versions, ~/.pyenv/versions by default, or on PATH as
#   python3.X). For each:
#   1. a fresh venv with attnpy and its test extra installed, as the
#      README's test command does (no torch, no model weights). attnpy
#      comes from
#      * --wheels DIR: DIR's prebuilt wheel for that version and this
#        machine (attnpy-*-cp3XY-*-<arch>.whl, e.g. from
#        tools/build_wheels.sh --out DIR): nothing is compiled here;
#      * otherwise the sdist (built once, `python -m build --sdist`), which
#        pip builds into a wheel with that Python;
#   2. the suite from a copy of the sources without attnpy/ and setup.py
#      (tests/, README.md, and the installed package's doctests through
#      --pyargs): `import attnpy` -- here and in the tests' child
#      processes, which run from the tree -- is the installed package.
# Exits nonzero when any version fails or when none is found.
# Env: KEEP=1 keeps the temporary directory; PIP_ARGS extra pip arguments.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
versions=()
wheels=""
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
        --wheels) wheels=$(cd "$2" && pwd); shift 2 ;;
        *) versions+=("$1"); shift ;;
    esac
done
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

# --- what to install, and the tests' tree ---------------------------------------
mkdir -p "$WORK/src"
if [ -n "$wheels" ]; then
    src=$WORK/src/attnpy
    mkdir -p "$src"
    tar -C "$ROOT" --exclude=./.git --exclude=./build --exclude=./dist \
        --exclude=./.venv --exclude='*.so' --exclude='__pycache__' \
        --exclude=./attnpy --exclude=./setup.py --exclude='*.egg-info' \
        -cf - . | tar -C "$src" -xf -
    echo "wheels: $wheels"
else
    py0=$(find_python "${versions[0]}")
    [ -n "$py0" ] || py0=python3
    "$py0" -m venv "$WORK/buildenv"
    "$WORK/buildenv/bin/python" -m pip install -q ${PIP_ARGS:-} --upgrade pip build
    (cd "$WORK" && "$WORK/buildenv/bin/python" -m build --sdist -o "$WORK/dist" \
        "$ROOT" >"$WORK/sdist.log" 2>&1) || { cat "$WORK/sdist.log" >&2; exit 1; }
    sdist=$(ls "$WORK"/dist/*.tar.gz)
    tar -C "$WORK/src" -xzf "$sdist"
    src=$(ls -d "$WORK"/src/*/)
    src=${src%/}
    rm -rf "$src/attnpy" "$src"/*.egg-info "$src/setup.py"
    echo "sdist: $(basename "$sdist")"
fi

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
    # the test extra, as the README's test command installs it
    if [ -n "$wheels" ]; then
        pkg=$(ls "$wheels"/attnpy-*-cp${v/./}-*"$(uname -m)".whl 2>/dev/null \
            | head -1 || true)
        if [ -z "$pkg" ]; then
            echo "=== Python $v: no wheel for it in $wheels" >&2
            summary+=("$v: NO WHEEL")
            fail=1
            continue
        fi
        echo "wheel: $(basename "$pkg")"
    else
        pkg=$sdist
    fi
    if ! "$env/bin/python" -m pip install -q ${PIP_ARGS:-} "$pkg[test]" \
            >"$WORK/pip-$v.log" 2>&1; then
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

#!/usr/bin/env bash
# tools/browser_tests.sh -- the interactive figures in a real browser.
#
#   tools/browser_tests.sh [extra pytest args...]
#   tools/browser_tests.sh --install    only the installs below (CI makes
#                                        them before its tracks run)
#
# Runs the tests marked `browser` (tests/widgets/test_widgets_browser.py):
# headless Chromium, driven by Playwright, against the pages that
# save_html writes (layout at 400/800/1200 px and on a 390-px phone, dark
# theme contrast, the accessibility tree), nbconvert's HTML of an executed
# notebook opened with the network cut, and the live widgets in
# JupyterLab (with a kernel restart and its dark theme), Notebook 7,
# Voila and marimo (run and edit), each started by the test on 127.0.0.1
# (free port, temporary directory). Screenshots of every state go to
# tests/widgets/_screenshots/ (ignored by git). Time: docs/guide/testing.md.
#
# Playwright drives the system's Chromium (no browser download):
# /usr/bin/chromium, or $ATTNPY_CHROMIUM. When it is missing and apt-get
# is there, it is installed (Debian/Ubuntu: the `chromium` package).
# The Python packages: pip install -e ".[browser]" (the front ends,
# nbconvert, playwright, ipykernel); installed here when one is missing. The extension must be built (in place or
# installed) for the Python that runs this ($PYTHON, default python3).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}
CHROMIUM=${ATTNPY_CHROMIUM:-/usr/bin/chromium}

if [ ! -x "$CHROMIUM" ]; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update && $SUDO apt-get install -y chromium
    fi
    if [ ! -x "$CHROMIUM" ]; then
        echo "browser_tests.sh: no Chromium at $CHROMIUM (set ATTNPY_CHROMIUM)" >&2
        exit 1
    fi
fi
export ATTNPY_CHROMIUM=$CHROMIUM

cd "$ROOT"
# the `browser` extra's packages, when missing (a fresh CI venv has the
# test extra only)
if ! "$PY" -c 'import anywidget, ipywidgets, jupyterlab, notebook, voila, marimo, nbconvert, nbclient, playwright, ipykernel' 2>/dev/null; then
    "$PY" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["browser"]))' \
        >"${TMPDIR:-/tmp}/attnpy-browser-reqs.txt"
    "$PY" -m pip install -q -r "${TMPDIR:-/tmp}/attnpy-browser-reqs.txt"
fi
[ "${1:-}" = --install ] && exit 0
exec "$PY" -m pytest -p no:cacheprovider -m browser tests/widgets "$@"

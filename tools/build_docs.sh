#!/usr/bin/env bash
# tools/build_docs.sh -- the documentation site, built and then checked in a
# real browser.
#
#   tools/build_docs.sh [PYTEST_ARGS ...]
#
#   1. the docs extra's packages (pyproject.toml) installed when missing,
#      Debian's chromium when /usr/bin/chromium is missing, attnpy's
#      extension built in place when `import attnpy` fails;
#   2. a fresh build, offline, every warning an error:
#        python -m sphinx -W -b html docs docs/_build/html
#      (docs/conf.py also fails it when a public name has no API page);
#   3. tests/docs: the API index covers attnpy.__all__, and the browser
#      tests (headless Chromium through Playwright, the site served on
#      127.0.0.1): front page, an API page, a notebook page, the search for
#      "attention"; screenshots in docs/_build/screenshots/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PYTHON:-python}

if ! "$PY" -c 'import sphinx, myst_nb, numpydoc, pydata_sphinx_theme, playwright, pytest' 2>/dev/null; then
    "$PY" - >"${TMPDIR:-/tmp}/attnpy-docs-reqs.txt" <<'PYEOF'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["docs"]))
PYEOF
    "$PY" -m pip install -q -r "${TMPDIR:-/tmp}/attnpy-docs-reqs.txt"
fi
. "$ROOT/tools/_cross.sh"   # need_tools
[ -x "${ATTNPY_CHROMIUM:-/usr/bin/chromium}" ] || need_tools chromium -- chromium
if ! "$PY" -c 'import attnpy' 2>/dev/null; then
    # setup.py by hand needs setuptools >= 77 (pyproject's PEP 639 license)
    "$PY" -c 'import setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' \
        2>/dev/null || "$PY" -m pip install -q "setuptools>=77" || exit 1
    "$PY" setup.py build_ext --inplace -q
fi

rm -rf docs/_build/html docs/api/generated
start=$(date +%s)
"$PY" -m sphinx -W -q -b html docs docs/_build/html
echo "build_docs.sh: site built in $(( $(date +%s) - start )) s: docs/_build/html/index.html"
# -m: the suite's addopts leave the browser marker out
ATTNPY_DOCS_HTML=docs/_build/html "$PY" -m pytest -q -p no:cacheprovider \
    -m "browser or not browser" tests/docs "$@"
echo "build_docs.sh: screenshots in docs/_build/screenshots/"

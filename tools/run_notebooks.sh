#!/usr/bin/env bash
# tools/run_notebooks.sh -- every examples/*.ipynb, run top to bottom in a
# fresh environment set up from the notebooks' own install lines.
#
#   tools/run_notebooks.sh [--wheels DIR] [notebook.ipynb ...]
#
# 1. A new virtual environment (no system packages) in build/nb-venv.
# 2. Every `pip install ...` line of the notebooks' markdown, run as
#    written, except that "attnpy[...]" installs this checkout (with the
#    same extras) instead of the release on PyPI: built from the source,
#    or with --wheels DIR the wheel tools/build_wheels.sh left there for
#    this Python and machine (.ci/run passes its own: no second build).
# 3. What runs a notebook, not what a notebook needs: nbclient and
#    ipykernel.
# 4. Each notebook executed by nbclient in that environment's kernel, in
#    a folder holding a copy of examples/ and nothing else (the notebooks
#    import examples/*.py; the checkout's attnpy/ must not shadow the
#    installed one); any error in any cell fails the run. The executed
#    copies go to build/notebooks/.
# A notebook that needs a package its install lines do not name fails here.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}
VENV=$ROOT/build/nb-venv
OUT=$ROOT/build/notebooks
cd "$ROOT"
WHEELS=""
if [ "${1:-}" = --wheels ]; then WHEELS=$2; shift 2; fi
if [ $# -gt 0 ]; then NOTEBOOKS=("$@"); else NOTEBOOKS=(examples/*.ipynb); fi

rm -rf "$VENV" "$OUT"
mkdir -p "$OUT"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# what "attnpy" means in the install lines: a wheel of this checkout, built
# once here (each line naming a source folder would build it again), or
# the one --wheels names
SOURCE=""
if [ -n "$WHEELS" ]; then
    tag=$("$VENV/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
    SOURCE=$(ls "$WHEELS"/attnpy-*-"$tag"-*"$(uname -m)"*.whl 2>/dev/null | grep -v musllinux | head -1 || true)
    [ -n "$SOURCE" ] || echo "run_notebooks.sh: no $tag $(uname -m) wheel in $WHEELS: building one"
fi
if [ -z "$SOURCE" ]; then
    "$VENV/bin/python" -m pip wheel -q --no-deps -w "$OUT/wheel" "$ROOT"
    SOURCE=$(ls "$OUT"/wheel/attnpy-*.whl | head -1)
fi
echo "run_notebooks.sh: attnpy from $SOURCE"

# the install lines, in the notebooks' order, each once
"$PY" - "${NOTEBOOKS[@]}" >"$OUT/install-lines.txt" <<'EOF'
import json, re, sys
seen = []
for path in sys.argv[1:]:
    for cell in json.load(open(path, encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).splitlines():
            line = line.strip()
            if re.match(r"pip install ", line) and line not in seen:
                seen.append(line)
print("\n".join(seen))
EOF
echo "run_notebooks.sh: the notebooks' install lines:"
sed 's/^/    /' "$OUT/install-lines.txt"
[ -s "$OUT/install-lines.txt" ] || { echo "no install line in the notebooks" >&2; exit 1; }
while read -r line; do
    # "attnpy[extras]" -> this checkout with those extras
    line=$(printf '%s' "$line" | sed -E "s#\"attnpy(\[[^]\"]*\])?\"#\"$SOURCE\1\"#g; s#(^| )attnpy( |$)#\1$SOURCE\2#g")
    eval "\"$VENV/bin/python\" -m $line" || { echo "run_notebooks.sh: failed: $line" >&2; exit 1; }
done <"$OUT/install-lines.txt"
"$VENV/bin/python" -m pip install -q nbclient ipykernel

export ATTNPY_CHECKOUT=$ROOT/attnpy
WORK=$OUT/work
mkdir -p "$WORK"
cp -r examples "$WORK/examples"
fail=0
for nb in "${NOTEBOOKS[@]}"; do
    t=$(date +%s)
    src=$(cd "$(dirname "$nb")" && pwd)/$(basename "$nb")
    if (cd "$WORK" && "$VENV/bin/python" - "$src" "$OUT/$(basename "$nb")") <<'EOF'
import os, sys
import nbclient, nbformat
import attnpy
assert not attnpy.__file__.startswith(os.environ["ATTNPY_CHECKOUT"]), attnpy.__file__
src, dst = sys.argv[1], sys.argv[2]
nb = nbformat.read(src, as_version=4)
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                 resources={"metadata": {"path": os.getcwd()}})
try:
    client.execute()
finally:
    nbformat.write(nb, dst)
EOF
    then
        echo "run_notebooks.sh: $nb ran ($(( $(date +%s) - t )) s)"
    else
        echo "run_notebooks.sh: $nb FAILED ($(( $(date +%s) - t )) s)"
        fail=1
    fi
done
n=${#NOTEBOOKS[@]}
if [ $fail -ne 0 ]; then echo "run_notebooks.sh: some notebooks failed"; exit 1; fi
echo "$n passed, 0 failed"

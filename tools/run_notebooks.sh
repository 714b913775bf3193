#!/usr/bin/env bash
# tools/run_notebooks.sh -- every examples/*.ipynb, run top to bottom in a
# fresh environment set up from the notebooks' own install lines.
#
#   tools/run_notebooks.sh [notebook.ipynb ...]
#
# 1. A new virtual environment (no system packages) in build/nb-venv.
# 2. Every `pip install ...` line of the notebooks' markdown, run as
#    written, except that "attnpy[...]" installs this checkout (with the
#    same extras) instead of the release on PyPI.
# 3. What runs a notebook, not what a notebook needs: nbclient and
#    ipykernel.
# 4. Each notebook executed by nbclient in that environment's kernel from
#    the repository root (the examples import examples/*.py); any error
#    in any cell fails the run. The executed copies go to build/notebooks/.
# A notebook that needs a package its install lines do not name fails here.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}
VENV=$ROOT/build/nb-venv
OUT=$ROOT/build/notebooks
cd "$ROOT"
if [ $# -gt 0 ]; then NOTEBOOKS=("$@"); else NOTEBOOKS=(examples/*.ipynb); fi

rm -rf "$VENV" "$OUT"
mkdir -p "$OUT"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip

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
    line=$(printf '%s' "$line" | sed -E "s#\"attnpy(\[[^]\"]*\])?\"#\"$ROOT\1\"#g; s#(^| )attnpy( |$)#\1$ROOT\2#g")
    eval "\"$VENV/bin/python\" -m $line" || { echo "run_notebooks.sh: failed: $line" >&2; exit 1; }
done <"$OUT/install-lines.txt"
"$VENV/bin/python" -m pip install -q nbclient ipykernel

fail=0
for nb in "${NOTEBOOKS[@]}"; do
    t=$(date +%s)
    if "$VENV/bin/python" - "$nb" "$OUT/$(basename "$nb")" <<'EOF'
import os, sys
import nbclient, nbformat
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

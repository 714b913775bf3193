"""csrc/core/NAMES.txt lists every C name the templates make by token
pasting, with the template line that makes it, so that grep finds
``item_avx2_f32``. The table is generated (tools/gen_names.py); this test
regenerates it with the C preprocessor and fails when it is stale."""
import os
import platform
import shutil
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "gen_names.py")

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64")
    or sys.platform == "win32"
    or not os.path.exists(TOOL)
    or shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]) is None,
    reason="the table is made from the x86-64 build with a C compiler, "
           "from a source checkout")


def test_names_table_is_current():
    r = subprocess.run([sys.executable, TOOL, "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout


def test_table_finds_the_templates_names():
    with open(os.path.join(ROOT, "csrc", "core", "NAMES.txt"),
              encoding="utf-8") as fh:
        rows = dict(line.split() for line in fh
                    if line.strip() and not line.startswith("#"))
    # one name of each kind of template: a kernel, a math function, a
    # row function, a DEFINE_ macro
    assert rows["item_avx2_f32"].startswith("csrc/core/attention/tile.h:")
    assert rows["exp_neg_avx512_f64"].startswith("csrc/core/simd/math.h:")
    assert rows["row_softmax_portw_f32"].startswith(
        "csrc/core/elementwise/softmax_tmpl.h:")
    assert rows["bwd_rows_f32"].startswith("csrc/core/attention/bwd.c:")
    for name, where in rows.items():
        path, line = where.rsplit(":", 1)
        with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
            n = len(fh.read().split("\n"))
        assert 1 <= int(line) <= n, (name, where)

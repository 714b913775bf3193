"""Code lines of the C core and the binding at one or more git revisions.

    python tools/count_lines.py [REV ...] [--files N]

For each revision (default: HEAD), the lines of csrc/core/ (without
csrc/core/testing/, the tests' naive oracles) and of csrc/python/ that
hold code: comments and blank lines left out. Read from git (``git
show REV:PATH``), so the working tree is not involved. ``--files N``
also lists the N largest files of the last revision.

Example, the size against an older commit::

    python tools/count_lines.py 8cfaf88 HEAD
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = (("core", "csrc/core/"), ("binding", "csrc/python/"))


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True,
                          capture_output=True, text=True).stdout


def code_lines(text):
    """Non-blank lines once /* */ and // comments are removed."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return sum(1 for line in text.splitlines() if line.strip())


def count(rev):
    """{part: code lines}, {path: code lines} of the C files at rev."""
    totals, files = dict.fromkeys(dict(PARTS), 0), {}
    for path in git("ls-tree", "-r", "--name-only", rev, "csrc").split():
        if not path.endswith((".c", ".h")) or path.startswith("csrc/core/testing/"):
            continue
        part = next((name for name, prefix in PARTS if path.startswith(prefix)), None)
        if part is None:
            continue
        n = code_lines(git("show", f"{rev}:{path}"))
        totals[part] += n
        files[path] = n
    return totals, files


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("revs", nargs="*", default=["HEAD"], metavar="REV")
    ap.add_argument("--files", type=int, default=0, metavar="N")
    args = ap.parse_args(argv)
    print(f"{'revision':<14}{'core':>8}{'binding':>9}{'total':>8}")
    files = {}
    for rev in args.revs:
        totals, files = count(rev)
        print(f"{rev:<14}{totals['core']:>8,}{totals['binding']:>9,}"
              f"{sum(totals.values()):>8,}")
    for path, n in sorted(files.items(), key=lambda x: -x[1])[:args.files]:
        print(f"{n:>6,}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

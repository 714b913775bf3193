"""tools/count_lines.py: what it counts as a code line (its totals read
git, which a copy of the tree without .git lacks: not tested here)."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "count_lines", os.path.join(ROOT, "tools", "count_lines.py"))
count_lines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(count_lines)


def test_comments_and_blank_lines_are_not_code():
    src = ("/* a comment\n   over two lines */\n\nint x; // trailing\n"
           "// a whole line\nint y = 1; /* inline */ int z;\n  \n}\n")
    assert count_lines.code_lines(src) == 3


"""No output, code or comment of the library names project issues or the
project's internal files: a user cannot look them up."""
import re
from pathlib import Path

import attnpy

PKG = Path(attnpy.__file__).resolve().parent
PATTERNS = [
    re.compile(r"\bissues?\s*#?\d+", re.I),          # an issue and its number
    re.compile(r"\bthe issue'?s?\b", re.I),           # "the issue's target"
    re.compile(r"(?<![\w.])\d{3}_(?![\d_])"),         # file IDs: 3 digits, "_"
    re.compile(r"\bseeds/"),
    re.compile(r"\b(DESIGN|BRIEF)\.md\b"),
]


def test_the_package_names_no_issues_or_internal_files():
    # the installed package, and the examples and docs of the tree the
    # tests run from (the wheel tests run them from a copy without attnpy/)
    root = Path(__file__).resolve().parents[2]
    files = sorted(PKG.rglob("*.py")) + sorted((root / "examples").glob(
        "*.py")) + sorted((root / "examples").glob("*.ipynb")) + [
        root / "docs" / "check_by_hand.md"]
    found = []
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if any(p.search(line) for p in PATTERNS):
                found.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_are_for():
    for bad in ("targets (project issue" + " 3)", "Issue" + " 12's targets",
                f"# {3:03d}_: given scaled scores", "(" + "seeds" + "/x)",
                "DESIGN" + ".md",
                "the issue's target"):
        assert any(p.search(bad) for p in PATTERNS), bad
    for fine in ("1_000_000", "S_KEYS = 1_000_000", "window_vs_causal512",
                 "an issue-free run"):
        assert not any(p.search(fine) for p in PATTERNS), fine


def test_the_command_lines_say_no_file_ids(capsys):
    from attnpy.teach.cli import cli
    assert cli(["--help"]) == 0
    text = capsys.readouterr().out
    assert not any(p.search(text) for p in PATTERNS), text

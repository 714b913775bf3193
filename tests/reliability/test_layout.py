"""The package keeps one job per room (ARCHITECTURE.md).

No Python or C file of the package over MAX_FILE lines, no function over
MAX_FUNC lines (docstrings aside), and only the binding folder includes
Python.h.
"""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_FILE = 700
MAX_FUNC = 120


def package_files(ext):
    for top in ("attnpy", "csrc"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if n.endswith(ext):
                    yield os.path.relpath(os.path.join(dirpath, n), ROOT)


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("rel", [f for e in (".py", ".c", ".h")
                                 for f in package_files(e)])
def test_file_size(rel):
    n = read(rel).count("\n")
    assert n <= MAX_FILE, f"{rel} has {n} lines (limit {MAX_FILE})"


def python_function_lengths(src):
    """(name, lines without its docstring) of every function in src."""
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                first = node.body[0]
                n -= first.end_lineno - first.lineno + 1
            yield node.name, n


def c_function_lengths(src):
    """(name, lines) of every top-level function body in C source: a line
    ending in ')' or '{' at column 0 context, whose body is brace-matched.
    Comments and strings are blanked first so braces in them do not count;
    macro bodies (template instantiations) are measured like functions."""
    src = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()),
                 src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    lines = src.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(?:static\s+|TF\s+|TI\s+)?[A-Za-z_][\w\s\*\(\),]*?"
                     r"\b(\w+)\s*\(", lines[i])
        if m and not lines[i].rstrip().endswith(";") and not lines[i].startswith("#"):
            # find the opening brace of the body within the signature lines
            j = i
            while j < len(lines) and "{" not in lines[j] and ";" not in lines[j]:
                j += 1
            if j < len(lines) and "{" in lines[j]:
                depth, k = 0, j
                while k < len(lines):
                    depth += lines[k].count("{") - lines[k].count("}")
                    if depth == 0:
                        break
                    k += 1
                yield m.group(1), k - i + 1
                i = k + 1
                continue
        i += 1


def test_function_sizes():
    long = []
    for rel in package_files(".py"):
        long += [f"{rel}: {name} ({n} lines)"
                 for name, n in python_function_lengths(read(rel)) if n > MAX_FUNC]
    for rel in list(package_files(".c")) + list(package_files(".h")):
        long += [f"{rel}: {name} ({n} lines)"
                 for name, n in c_function_lengths(read(rel)) if n > MAX_FUNC]
    assert not long, "functions over %d lines:\n  %s" % (MAX_FUNC, "\n  ".join(long))


def test_measurement_sees_long_functions():
    # the two measures above can fail: a 130-line function is reported
    body = "\n".join(f"    x{i} = {i}" for i in range(130))
    assert dict(python_function_lengths(f"def f():\n    'doc'\n{body}\n"))["f"] > MAX_FUNC
    cbody = "\n".join(f"    x += {i};" for i in range(130))
    assert dict(c_function_lengths(f"static int f(int x)\n{{\n{cbody}\n    return x;\n}}\n"))["f"] > MAX_FUNC


def test_only_the_binding_includes_python():
    for rel in list(package_files(".c")) + list(package_files(".h")):
        if re.search(r'#\s*include\s*[<"](Python\.h|numpy/)', read(rel)):
            assert rel.startswith(os.path.join("csrc", "python") + os.sep), rel

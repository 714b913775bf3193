"""The front end's files (shipped in the package) and the saved page.

A widget's ES module is ``common.js`` followed by the widget's own file;
a saved page adds ``compute.js`` (the same formulas as attnpy, in float64
JavaScript) and ``standalone.js`` (a stand-in for the kernel's model), and
inlines everything: no network, no kernel.
"""
import html
import json
import os
from importlib import resources

_FILES = resources.files(__package__)


def _read(name):
    return (_FILES / name).read_text(encoding="utf-8")


def esm(widget):
    """The ES module anywidget loads for `widget` ("playground", "matrix",
    "heads"): the shared helpers, the formulas (used whenever the kernel's
    numbers are not for the state drawn) and the figure."""
    return _read("common.js") + "\n" + _read("compute.js") + "\n" + _read(f"{widget}.js")


def css():
    """The figures' style sheet."""
    return _read("widgets.css")


def _script_json(value):
    # JSON inside <script>: "</" would end the element early
    return json.dumps(value).replace("</", "<\\/")


def page(widget, state, title):
    """The text of a self-contained HTML page showing `widget` in `state`."""
    code = esm(widget) + "\n" + _read("standalone.js")
    compute = {"playground": "computePlayground", "matrix": "computeMatrix",
               "heads": "computeNothing"}[widget]
    state = dict(state, _source="page")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
body {{ margin: 16px; background: #ffffff; }}
@media (prefers-color-scheme: dark) {{ body {{ background: #181818; }} }}
{css()}
</style>
</head>
<body>
<div id="attnpy-root"></div>
<script type="module">
const code = {_script_json(code)};
const state = {_script_json(state)};
const url = URL.createObjectURL(new Blob([code], {{type: "text/javascript"}}));
const mod = await import(url);
const model = mod.localModel(state, (s) => ({{_numbers: mod.{compute}(s)}}));
mod.default.render({{model, el: document.getElementById("attnpy-root")}});
</script>
</body>
</html>
"""


def write(path, widget, state, title):
    """Write :func:`page` to `path` (UTF-8) and return the path."""
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page(widget, state, title))
    return path

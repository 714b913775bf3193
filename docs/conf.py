"""Sphinx configuration for attnpy's documentation.

Build (offline, warnings are errors) from the repository root:

    python -m sphinx -W -b html docs docs/_build/html

attnpy is imported from the repository root (build the extension in place
first: ``python setup.py build_ext --inplace``) or from an installed wheel.
The API reference is generated from ``attnpy.__all__``: ``api/index.rst``
is written here at each build, one autosummary entry per public name, so a
new public name gets its page without editing the docs.
"""
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import attnpy  # noqa: E402

project = "attnpy"
author = "attnpy contributors"
copyright = "attnpy contributors"
release = version = attnpy.__version__

extensions = [
    "myst_nb",                      # Markdown pages and the notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb",
                 ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
templates_path = ["_templates"]

# the notebooks are shown with the outputs stored in them, never executed
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3
# pages link to files of the repository (examples/, tools/, benchmarks/):
# those are not documents of the site
# docs/check_by_hand.md is also a README-style section (it starts at "##")
suppress_warnings = ["myst.xref_missing", "myst.header"]

autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False
autosummary_ignore_module_all = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = "attnpy"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
# an explicit mode: with none, the theme's script logs a console error
# ("invalid theme mode") on a reader's first visit
html_context = {"default_mode": "light"}
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"

# --- the API index, generated from attnpy.__all__ ----------------------------
# Sections group the names a reader looks for together; a name of __all__
# that none of them lists goes under "More" (still with its own page).
SECTIONS = [
    ("Attention", ["attention", "scaled_dot_product_attention",
                   "attention_backward", "MultiHeadAttention"]),
    ("Softmax", ["softmax", "softmax_backward", "softmax_jacobian"]),
    ("Masks", ["causal_mask", "create_causal_mask", "padding_mask"]),
    ("Positions and heads", ["positional_encoding", "add_positional_encoding",
                             "rotary_embedding", "split_heads",
                             "combine_heads"]),
    ("Decoding", ["KVCache", "merge_attention"]),
    ("The encoder layer", ["TransformerEncoderLayer", "layer_norm",
                           "layer_norm_backward", "feed_forward",
                           "feed_forward_backward"]),
    # every element-wise activation, as attnpy._activations lists them
    ("Activations", list(attnpy._activations.__all__)),
    ("Checking by hand", ["explain", "AttentionTrace", "show"]),
    ("Threads", ["set_num_threads", "get_num_threads"]),
    ("The NumPy twins", ["reference"]),
]
# not a page of its own: a string, listed on the index page itself
NOT_PAGES = {"__version__"}


def public_names():
    return [n for n in attnpy.__all__ if n not in NOT_PAGES]


def api_index_text():
    names = public_names()
    listed = {n for _, group in SECTIONS for n in group}
    sections = [(t, [n for n in g if n in names]) for t, g in SECTIONS]
    sections.append(("More", [n for n in names if n not in listed]))
    lines = [
        ".. This file is written by docs/conf.py from attnpy.__all__.",
        "",
        "API reference",
        "=============",
        "",
        ".. currentmodule:: attnpy",
        "",
        "Every public name of ``attnpy`` (``attnpy.__all__``), one page each.",
        "``attnpy.__version__`` is the version string (%s)." % attnpy.__version__,
        "Optional front ends: :doc:`attnpy.dask <dask>`.",
        "",
    ]
    for title, group in sections:
        if not group:
            continue
        lines += [title, "-" * len(title), "", ".. autosummary::",
                  "   :toctree: generated", "   :recursive:", ""]
        lines += ["   " + n for n in group] + [""]
    lines += [".. toctree::", "   :hidden:", "", "   dask", ""]
    return "\n".join(lines)


def write_api_index(app, config):
    path = DOCS / "api" / "index.rst"
    text = api_index_text()
    path.parent.mkdir(exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def drop_empty_guide_glob(app, docname, source):
    """The index's "More guides" toctree globs guide/*.md, where pages are
    added over time; with none there, Sphinx would warn (an error under -W)."""
    if docname == "index" and not list((DOCS / "guide").glob("*.md")):
        start = source[0].find("```{toctree}\n:caption: More guides")
        if start >= 0:
            end = source[0].index("```", start + 3)
            source[0] = source[0][:start] + source[0][end + 3:]


def check_api_pages(app, exception):
    """Fail the build when a public name has no page of its own."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir) / "api" / "generated"
    missing = [n for n in public_names()
               if not (out / ("attnpy.%s.html" % n)).exists()]
    if missing:
        from sphinx.errors import ExtensionError
        raise ExtensionError("no API page for attnpy.%s" % ", attnpy.".join(missing))


def setup(app):
    app.connect("config-inited", write_api_index)
    app.connect("build-finished", check_api_pages)
    app.connect("source-read", drop_empty_guide_glob)

"""Every public name of attnpy gets a page in the API reference: the
index that docs/conf.py generates from attnpy.__all__ lists each one in an
autosummary table with :toctree: (one generated page per entry)."""
import importlib.util
import os
import re

import attnpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_conf():
    spec = importlib.util.spec_from_file_location(
        "attnpy_docs_conf", os.path.join(ROOT, "docs", "conf.py"))
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def autosummary_entries(text):
    """{name: has_toctree} for every entry of the text's autosummary blocks."""
    entries = {}
    for block in re.split(r"(?m)^\.\. ", text)[1:]:
        head, _, body = block.partition("\n")
        if head.strip() != "autosummary::":
            continue
        options = re.findall(r"(?m)^   :(\w+):", body)
        for line in body.splitlines():
            m = re.fullmatch(r"   ([A-Za-z_][\w.]*)", line)
            if m:
                entries[m.group(1)] = "toctree" in options
    return entries


def test_every_public_name_has_a_page():
    conf = load_conf()
    entries = autosummary_entries(conf.api_index_text())
    missing = [n for n in attnpy.__all__
               if n not in conf.NOT_PAGES and not entries.get(n)]
    assert missing == []
    # the one name without a page is the version string, stated on the index
    assert conf.NOT_PAGES == {"__version__"}
    assert attnpy.__version__ in conf.api_index_text()
    # nothing listed that is not public (a stale name would break the build)
    assert set(entries) <= set(attnpy.__all__)


def test_a_new_public_name_gets_a_page(monkeypatch):
    conf = load_conf()
    monkeypatch.setattr(attnpy, "__all__", attnpy.__all__ + ["brand_new"])
    entries = autosummary_entries(conf.api_index_text())
    assert entries.get("brand_new") is True


def test_public_names_have_docstrings():
    conf = load_conf()
    for name in conf.public_names():
        obj = getattr(attnpy, name)
        assert (obj.__doc__ or "").strip(), name

"""The documentation site's tests.

test_api_pages.py runs with the suite. The browser tests
(test_site_browser.py, marker ``browser``) need the built site: they run
when ATTNPY_DOCS_HTML names its folder, as tools/build_docs.sh does after
building it; otherwise they are deselected (and counted as such)."""
import os


def pytest_collection_modifyitems(config, items):
    if os.environ.get("ATTNPY_DOCS_HTML"):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    drop = [i for i in items if i.get_closest_marker("browser")
            and str(i.path).startswith(here)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [i for i in items if i not in drop]

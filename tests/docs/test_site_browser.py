"""The documentation site in a real browser (headless Chromium through
Playwright): the front page, an API page and a notebook page load without
console errors and show what they should, and the search page finds
`attention`. Each test saves a screenshot in docs/_build/screenshots/.

Needs the built site: ATTNPY_DOCS_HTML=<its folder> (tools/build_docs.sh
builds it and runs these). The site is served over HTTP on 127.0.0.1, as a
reader's browser would get it (the search page loads its index by script)."""
import functools
import http.server
import os
import threading

import pytest

import attnpy

pytestmark = pytest.mark.browser
# console errors, uncaught exceptions and failed requests fail a test
# (the page fixture, tests/conftest.py)
VIEWPORT = (1280, 900)
CHECK_REQUESTS = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOTS = os.path.join(ROOT, "docs", "_build", "screenshots")


@pytest.fixture(scope="module")
def site():
    """The base URL of the built site, served from a thread."""
    html = os.path.abspath(os.environ["ATTNPY_DOCS_HTML"])
    assert os.path.isfile(os.path.join(html, "index.html")), html
    handler = functools.partial(_QuietHandler, directory=html)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/" % server.server_address[1]
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def shoot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, name + ".png")
    page.screenshot(path=path, full_page=False)
    assert os.path.getsize(path) > 10_000     # a page, not a blank image
    return path


def test_front_page(page, site):
    page.goto(site + "index.html", wait_until="networkidle")
    assert "attnpy" in page.title()
    assert page.locator("h1").first.inner_text().strip().startswith("attnpy")
    # the picture is there and decoded
    img = page.locator("img[alt*='the cat sat']").first
    assert img.evaluate("i => i.complete && i.naturalWidth > 100")
    # the navigation leads to the guide, the notebooks and the API
    nav = page.locator("nav").all_inner_texts()
    text = " ".join(nav)
    for title in ("Quick tour", "Masks", "API reference", "Example notebooks"):
        assert title in text, title
    shoot(page, "index")
    assert page.errors == []


def test_api_page(page, site):
    page.goto(site + "api/generated/attnpy.attention.html",
              wait_until="networkidle")
    body = page.locator("main").inner_text()
    assert "attnpy.attention" in body
    for section in ("Parameters", "Returns", "Examples"):
        assert section in body, section
    shoot(page, "api-attention")
    assert page.errors == []


def test_every_public_name_has_a_page(page, site):
    page.goto(site + "api/index.html", wait_until="networkidle")
    hrefs = page.eval_on_selector_all("main a.reference.internal",
                                      "els => els.map(e => e.href.split('#')[0])")
    for name in attnpy.__all__:
        if name == "__version__":
            continue
        url = site + "api/generated/attnpy.%s.html" % name
        assert url in hrefs, name
    assert page.errors == []


def test_notebook_page(page, site):
    page.goto(site + "examples/attention_walkthrough.html",
              wait_until="networkidle")
    main = page.locator("main")
    assert main.locator(".cell").count() >= 10
    # the stored outputs are rendered (text, and at least one picture or table)
    assert main.locator(".cell_output").count() >= 5
    assert main.locator(".cell_output img, .cell_output table").count() >= 1
    shoot(page, "notebook-walkthrough")
    assert page.errors == []


def test_search_finds_attention(page, site):
    page.goto(site + "search.html?q=attention", wait_until="networkidle")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=15_000)
    assert results.count() >= 5
    # the function's own page comes first, and it links there
    first = results.first.locator("a").first
    assert first.inner_text().strip() == "attnpy.attention"
    assert first.get_attribute("href").split("#")[0].endswith(
        "api/generated/attnpy.attention.html")
    shoot(page, "search-attention")
    assert page.errors == []

"""Headless Chromium for the browser tests (tests/widgets, tests/docs),
through Playwright: one browser for the session (tests/conftest.py's
``browser`` fixture), and pages that record what went wrong in them.

The Chromium is /usr/bin/chromium or $ATTNPY_CHROMIUM (no browser
download: tools/browser_tests.sh installs the Debian one when missing)."""
import os

CHROMIUM = os.environ.get("ATTNPY_CHROMIUM", "/usr/bin/chromium")


def launch():
    """(playwright, browser): stop both with close(...)."""
    from playwright.sync_api import sync_playwright
    p = sync_playwright().start()
    try:
        return p, p.chromium.launch(executable_path=CHROMIUM)
    except BaseException:
        p.stop()
        raise


def close(p, browser):
    browser.close()
    p.stop()


def new_page(browser, width, height, requests=False, **options):
    """A page whose ``errors`` list records uncaught exceptions and console
    errors and, with ``requests``, failed requests and HTTP errors (each
    test asserts the list is empty); `options` go to Playwright's
    ``new_page`` (``color_scheme``, ``is_mobile``, ...)."""
    pg = browser.new_page(viewport={"width": width, "height": height}, **options)
    pg.errors = []
    # the stack says whose code threw (front ends have errors of their own)
    pg.on("pageerror", lambda e: pg.errors.append(f"uncaught: {e} {getattr(e, 'stack', '') or ''}"))
    pg.on("console", lambda m: m.type == "error"
          and pg.errors.append(f"console: {m.text}"))
    if requests:
        pg.on("requestfailed", lambda r: pg.errors.append(f"failed: {r.url}"))
        pg.on("response", lambda r: r.status >= 400
              and pg.errors.append(f"HTTP {r.status}: {r.url}"))
    return pg

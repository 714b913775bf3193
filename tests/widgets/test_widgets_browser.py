"""The figures in a real browser (headless Chromium, through Playwright):
the saved pages, and the live widgets in a JupyterLab server started here.
Run with tools/browser_tests.sh, or ``pytest -m browser tests/widgets``."""
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

import attnpy

from _checks import check_matrix, check_playground

pytestmark = pytest.mark.browser
# every JavaScript error fails a test (the page fixture, tests/conftest.py)
VIEWPORT = (1100, 1000)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_saved_playground(page, tmp_path):
    path = attnpy.playground().save_html(tmp_path / "playground.html")
    page.goto(f"file://{path}")
    check_playground(page, page.locator(".attnpy-playground"), "saved-playground")
    assert page.errors == []


def test_saved_matrix(page, tmp_path):
    path = attnpy.attention_matrix().save_html(tmp_path / "matrix.html")
    page.goto(f"file://{path}")
    check_matrix(page, page.locator(".attnpy-matrix"), "saved-matrix")
    assert page.errors == []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NOTEBOOK = {"cells": [
    {"cell_type": "code", "id": "playground", "metadata": {}, "outputs": [],
     "execution_count": None, "source": "import attnpy\npg = attnpy.playground()\npg"},
    {"cell_type": "code", "id": "matrix", "metadata": {}, "outputs": [],
     "execution_count": None, "source": "m = attnpy.attention_matrix()\nm"}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 (free port, random token, temp dir)."""
    home = tmp_path_factory.mktemp("lab")
    with open(home / "figures.ipynb", "w") as f:
        json.dump(NOTEBOOK, f)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, PYTHONPATH=ROOT,
               JUPYTER_RUNTIME_DIR=str(home / ".runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / ".settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / ".workspaces"))
    log = open(home / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > end or server.poll() is not None:
                    raise RuntimeError("JupyterLab did not start: "
                                       + (home / "server.log").read_text()[-3000:])
                time.sleep(0.3)
        yield f"{base}/lab/tree/figures.ipynb?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(home / ".runtime", ignore_errors=True)


def test_live_widgets_in_jupyterlab(lab, page):
    page.goto(lab)
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60000)
    page.get_by_text("| Idle").first.wait_for(timeout=60000)      # kernel ready
    figure = page.locator(".attnpy-playground [data-role=weight]").first
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    end = time.monotonic() + 90
    while not figure.is_visible():
        assert time.monotonic() < end, "the notebook's cells did not show the figure"
        # Lab may first ask which kernel to use: the notebook's own
        if accept.count() and accept.first.is_visible():
            accept.first.click()
        if page.locator(".jp-InputPrompt:text-is('[ ]:')").count():    # not run yet
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
        page.wait_for_timeout(1000)
    page.locator(".attnpy-matrix [data-role=cell]").first.wait_for(timeout=30000)
    news = page.locator(".jp-toast-button:text-is('No')")    # Lab's news question
    if news.count() and news.first.is_visible():
        news.first.click()
    check_playground(page, page.locator(".attnpy-playground"), "lab-playground")
    check_matrix(page, page.locator(".attnpy-matrix"), "lab-matrix")
    ours = [e for e in page.errors if "attnpy" in e or "anywidget" in e or "uncaught" in e]
    assert ours == [], page.errors

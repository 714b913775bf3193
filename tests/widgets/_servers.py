"""Front-end servers for the browser tests: a Jupyter server (JupyterLab and
Notebook 7 on one port), Voila and marimo, each on 127.0.0.1 at a free
port, in a temporary directory, stopped at the end."""
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(home):
    return dict(os.environ, PYTHONPATH=ROOT, JUPYTER_PLATFORM_DIRS="1",
                JUPYTER_RUNTIME_DIR=str(home / ".runtime"),
                JUPYTER_CONFIG_DIR=str(home / ".config"),
                JUPYTERLAB_SETTINGS_DIR=str(home / ".settings"),
                JUPYTERLAB_WORKSPACES_DIR=str(home / ".workspaces"))


class Server:
    """A subprocess serving on `port`; `url(path)` is a URL with the token."""

    def __init__(self, home, argv, port, token="", ready_path="/", timeout=90):
        self.home, self.port, self.token = home, port, token
        self.log_path = home / f"server-{port}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, cwd=home, env=server_env(home),
                                     stdout=self._log, stderr=subprocess.STDOUT)
        end = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url(ready_path), timeout=3).read()
                return
            except OSError:
                if time.monotonic() > end or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"{argv[2]} did not start: " + self.log_path.read_text()[-3000:])
                time.sleep(0.3)

    def url(self, path):
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}{path}" + (f"{sep}token={self.token}" if self.token else "")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()


def jupyter(home):
    """One Jupyter server: JupyterLab at /lab, Notebook 7 at /notebooks."""
    port, token = free_port(), secrets.token_hex(16)
    return Server(home, [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                         f"--port={port}", "--ServerApp.port_retries=0",
                         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}"]
                  + (["--allow-root"] if AS_ROOT else []), port, token, "/api/status")


def voila(home, notebook):
    port = free_port()
    return Server(home, [sys.executable, "-m", "voila", "--no-browser", f"--port={port}",
                         "--Voila.ip=127.0.0.1", "--VoilaConfiguration.file_allowlist=['.*']",
                         str(notebook)], port, "", "/", timeout=120)


def marimo(home, app, mode="run"):
    """marimo serving `app` ("run": the app; "edit": the editor)."""
    port = free_port()
    return Server(home, [sys.executable, "-m", "marimo", mode, str(app), "--headless",
                         "--host", "127.0.0.1", "--port", str(port), "--no-token"],
                  port, "", "/health", timeout=120)

"""Start JupyterLab from the project's .venv on a free localhost port, and always stop it.

:func:`running_jupyterlab` is a context manager: token auth on, no browser of its own, its root
a folder the caller gives (a temporary copy of notebooks/, so the repository is not modified),
every Jupyter config/data/runtime/settings/workspace folder a fresh temporary one (nothing read
from or written to the user's home), and ``--allow-root`` since CI runs as root. On exit, even
after a failure, the server's whole process tree (kernels included) is terminated, then killed.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: JupyterLab user settings for the test server (a fresh settings folder, not the user's):
#: every cell stays in the DOM (no virtual scrolling), and JupyterLab asks nobody for news.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


def project_python() -> str:
    """The project's interpreter: .venv/bin/python (the environment users open the workbook in)."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    return str(venv_python) if venv_python.exists() else sys.executable


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class JupyterLab:
    """A running test server."""

    base_url: str  # http://127.0.0.1:PORT
    token: str
    root_dir: Path
    log_path: Path
    pid: int
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _startup_timeout_s: float = 90

    def url(self, path: str) -> str:
        """``base_url/path`` with the token as a query parameter."""
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str, *, method: str = "GET", timeout_s: float = 5) -> object:
        """A JSON REST call to the server (token in the header)."""
        req = urllib.request.Request(
            f"{self.base_url}/{path.lstrip('/')}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """End every session and its kernel (between tests, so kernels do not pile up)."""
        for session in self.api("api/sessions") or []:
            try:
                self.api(f"api/sessions/{session['id']}", method="DELETE", timeout_s=15)
            except (urllib.error.URLError, OSError):
                pass

    def wait_ready(self) -> None:
        """Wait until the server answers its REST API (or fail with its log)."""
        _wait_ready(self, self._proc, self._startup_timeout_s)

    def log_tail(self, n_chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return ""


def _die_with_parent() -> None:
    """In the server's process, before exec: ask Linux for SIGTERM when pytest dies, even by
    SIGKILL (a CI timeout), so the server and, through its own shutdown, its kernels never
    outlive the tests. Elsewhere a no-op."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the fixture's finally still stops it
        pass


def _write_settings(folder: Path) -> None:
    for rel, value in LAB_SETTINGS.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


@contextmanager
def running_jupyterlab(
    root_dir: Path,
    *,
    log_path: Path,
    startup_timeout_s: float = 90,
    python: str | None = None,
    wait: bool = True,
    extra_args: tuple[str, ...] = (),
) -> Iterator[JupyterLab]:
    """Run ``jupyter lab`` on ``root_dir`` for the duration of the ``with`` block.
    ``extra_args`` go to ``jupyter lab`` as well (``--LabApp.default_url=…``, as open-workbook.sh).

    With ``wait=False`` the block starts as soon as the process is launched (do other work, then
    call the server's ``wait_ready()``)."""
    port = free_port()
    token = secrets.token_hex(16)
    home = Path(tempfile.mkdtemp(prefix="k3-e2e-jupyter-"))
    for sub in ("config", "data", "runtime", "settings", "workspaces"):
        (home / sub).mkdir()
    _write_settings(home / "settings")
    env = dict(os.environ)
    env.update(
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        PYTHONDONTWRITEBYTECODE="1",
        MPLBACKEND="Agg",
    )
    env.pop("JUPYTER_PATH", None)
    env.pop("JUPYTER_CONFIG_PATH", None)
    cmd = [
        python or project_python(),
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--allow-root",
        # window.jupyterapp: the tests read the kernel's state and the cells' execution counts
        # from it (they still click the menus as a user does).
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=",
        *extra_args,
    ]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w")
    # Own process group, so stopping it reaches every child that stays in the group.
    proc = subprocess.Popen(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=str(root_dir),
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    server = JupyterLab(
        base_url=f"http://127.0.0.1:{port}",
        token=token,
        root_dir=Path(root_dir),
        log_path=log_path,
        pid=proc.pid,
        _proc=proc,
        _startup_timeout_s=startup_timeout_s,
    )
    try:
        if wait:
            server.wait_ready()
        yield server
    finally:
        stop_process_tree(proc)
        log.close()
        _rmtree_quiet(home)


def _wait_ready(server: JupyterLab, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(
                f"jupyter lab exited with {proc.returncode} before it answered; log:\n{server.log_tail()}"
            )
        try:
            server.api("api/status", timeout_s=2)
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"jupyter lab did not answer on {server.base_url} within {timeout_s:g} s; log:\n{server.log_tail()}"
            )
        time.sleep(0.25)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (kernels run in their own sessions, outside its group)."""
    try:
        import psutil  # ipykernel depends on it
    except ImportError:  # pragma: no cover
        return []
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def stop_process_tree(proc: subprocess.Popen, *, grace_s: float = 10) -> None:
    """SIGTERM the server (it shuts its kernels down), then SIGKILL whatever is left of its
    process group and of every process that was below it."""
    children = _descendants(proc.pid)
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in children):
        time.sleep(0.1)
    _signal_all([p for p in children if _alive(p)], signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _rmtree_quiet(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)

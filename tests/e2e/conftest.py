"""Fixtures for the browser tests: headless Debian Chromium driven by Playwright, a JupyterLab
server on a temporary copy of notebooks/, a request log per page, and screenshots.

Every test here is marked ``browser``. Without Debian's chromium or the ``playwright`` Python
package they SKIP, saying what to install (``bash scripts/install-browser.sh``), so
``scripts/test.sh`` still passes on a machine without them.

Artifacts (screenshots, request logs, the JupyterLab log) go to ``test-artifacts/e2e/<test>/``,
which git ignores.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .checks import is_local_url

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
INSTALL_HINT = "run `bash scripts/install-browser.sh` (apt-get install chromium; pip install playwright)"

#: Debian's chromium, headless, as root, with every background connection off (this machine's
#: network is closed: without these flags Chromium tries Google's hosts at every start).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--no-default-browser-check",
]


def chromium_path() -> str | None:
    """Debian's chromium binary, or None. ``$K3_CHROMIUM``, when set, is the only candidate."""
    override = os.environ.get("K3_CHROMIUM")
    for candidate in [override] if override else [shutil.which("chromium"), "/usr/bin/chromium"]:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def missing_browser_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if chromium_path() is None:
        where = os.environ.get("K3_CHROMIUM") or "/usr/bin/chromium"
        return f"Debian's chromium is not installed (no {where}): {INSTALL_HINT}"
    try:
        import playwright.sync_api  # noqa: F401 — only whether it imports
    except ImportError:
        return f"the Python package `playwright` is not installed in this environment: {INSTALL_HINT}"
    return None


# ------------------------------------------------------------------------------------ browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module (each test gets its own context, or the module's
    shared JupyterLab page); closed when the module's tests are done, so nothing lingers
    while the rest of the suite runs."""
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        # Playwright's own browser download is never used: we test Debian's chromium.
        b = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


class NetworkLog:
    """Every request a browser context makes, and the ones that were not allowed (aborted).

    ``allow(url)`` decides; a disallowed request is recorded and aborted (routing), so a test
    never depends on whether this machine happens to reach the internet. :meth:`reset` starts a
    new log (one per test on a shared page).
    """

    def __init__(self, allow: Callable[[str], bool]) -> None:
        self.allow = allow
        self.reset()

    def reset(self) -> None:
        self.requests: list[dict] = []
        self.blocked: list[str] = []
        self.websockets: list[str] = []

    def attach(self, context: Any) -> None:
        context.on(
            "request",
            lambda r: self.requests.append(
                {"url": r.url, "method": r.method, "type": r.resource_type, "t": round(time.monotonic(), 3)}
            ),
        )
        context.route("**/*", self._route)

        def on_page(page: Any) -> None:
            page.on("websocket", lambda ws: self.websockets.append(ws.url))

        context.on("page", on_page)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if self.allow(url):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort("internetdisconnected")

    def outside(self) -> list[str]:
        """Every URL requested (or opened as a websocket) that was not allowed."""
        urls = [r["url"] for r in self.requests] + self.websockets + self.blocked
        return sorted({u for u in urls if not self.allow(u)})

    def save(self, path: Path) -> None:
        path.write_text(
            json.dumps(
                {
                    "requests": self.requests,
                    "websockets": self.websockets,
                    "blocked": self.blocked,
                    "outside": self.outside(),
                },
                indent=1,
            )
        )


class Artifacts:
    """Screenshots and logs of one test, numbered in the order taken."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.n = 0

    def shot(self, page: Any, step: str, *, full_page: bool = False, locator: Any = None) -> Path:
        self.n += 1
        path = self.folder / f"{self.n:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', step)}.png"
        try:
            if locator is not None:
                locator.screenshot(path=str(path))
            else:
                page.screenshot(path=str(path), full_page=full_page)
        except Exception as exc:  # a screenshot must never hide the test's own failure
            path.with_suffix(".txt").write_text(f"screenshot failed: {exc}\n")
        return path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any):
    report = yield
    setattr(item, f"_report_{report.when}", report)
    return report


def _failed(request: pytest.FixtureRequest) -> bool:
    rep = getattr(request.node, "_report_call", None)
    return rep is None or rep.failed


@pytest.fixture
def artifacts(request: pytest.FixtureRequest) -> Artifacts:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")
    folder = ARTIFACTS / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return Artifacts(folder)


def new_page(
    browser: Any, *, allow: Callable[[str], bool], offline: bool = False
) -> tuple[Any, Any, NetworkLog, list[str]]:
    """A fresh context and page with a request log and a console log."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    net = NetworkLog(allow)
    net.attach(context)
    if offline:
        context.set_offline(True)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    return context, page, net, console


def _finish(
    request: pytest.FixtureRequest, artifacts: Artifacts, page: Any, net: NetworkLog, console: list[str]
) -> None:
    if _failed(request):
        artifacts.shot(page, "failure")
    net.save(artifacts.folder / "requests.json")
    (artifacts.folder / "console.txt").write_text("\n".join(console) + "\n")


@pytest.fixture
def offline_page(browser: Any, artifacts: Artifacts, request: pytest.FixtureRequest):
    """A page with networking off: only file://, data: and blob: URLs load; every other
    request is logged and aborted."""
    context, page, net, console = new_page(
        browser,
        offline=True,
        allow=lambda u: is_local_url(u, allow_file=True) and not u.startswith(("http:", "https:", "ws:", "wss:")),
    )
    try:
        yield page, net
    finally:
        _finish(request, artifacts, page, net, console)
        context.close()


# ------------------------------------------------------------------------------------ JupyterLab


@pytest.fixture(scope="session")
def workbook_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary copy of the repository's notebooks/ (plus the e2e fixture notebooks), laid
    out like the repository (data/ linked beside it), so running cells never modifies the
    checkout."""
    from .fixture_notebook import write_fixture_notebook

    top = tmp_path_factory.mktemp("workbook")
    nb_dir = top / "notebooks"
    src = ROOT / "notebooks"
    if src.is_dir():
        shutil.copytree(src, nb_dir, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    else:
        nb_dir.mkdir()
    for sibling in ("data",):
        if (ROOT / sibling).exists():
            (top / sibling).symlink_to(ROOT / sibling, target_is_directory=True)
    write_fixture_notebook(nb_dir)
    write_fixture_notebook(nb_dir, renderer="html", stem="e2e-fixture-cdn-renderer")
    return nb_dir


class LabSession:
    """JupyterLab and one browser page on it, shared by the JupyterLab tests (the app loads
    once). Only loopback requests are allowed; anything else is logged and aborted."""

    def __init__(self, server: Any, context: Any, page: Any, net: NetworkLog, console: list[str]) -> None:
        self.server, self.context, self.page, self.net, self.console = server, context, page, net, console

    def load_app(self) -> None:
        from . import lab

        lab.load_app(self.page, self.server)

    def clean_up(self) -> None:
        """Between tests: shut every kernel down and close every tab (reloading the app if that
        fails), so the next test starts from an empty JupyterLab."""
        from . import lab

        self.server.shutdown_kernels()
        try:
            lab.close_all(self.page)
        except Exception:
            self.load_app()


@pytest.fixture(scope="module")
def lab_session(workbook_copy: Path, request: pytest.FixtureRequest) -> Iterator[LabSession]:
    """JupyterLab from .venv on a free localhost port (token auth on, root = the temporary
    copy), and a page with the app loaded. The server's process tree is killed when the
    module's tests are done, pass or fail (and the server gets SIGTERM if pytest itself dies)."""
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    from .servers import running_jupyterlab

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with running_jupyterlab(workbook_copy, log_path=ARTIFACTS / "jupyterlab.log", wait=False) as server:
        browser = request.getfixturevalue("browser")  # starts while the server boots
        server.wait_ready()
        context, page, net, console = new_page(browser, allow=lambda u: is_local_url(u))
        try:
            session = LabSession(server, context, page, net, console)
            session.load_app()
            yield session
        finally:
            context.close()


@pytest.fixture
def lab_page(lab_session: LabSession, artifacts: Artifacts, request: pytest.FixtureRequest):
    """The shared JupyterLab page for one test, and the requests made since the previous test
    (the first test's log includes loading the app); afterwards its kernels are shut down and
    its tabs closed."""
    try:
        yield lab_session.page, lab_session.net
    finally:
        _finish(request, artifacts, lab_session.page, lab_session.net, lab_session.console)
        lab_session.net.reset()
        lab_session.console.clear()
        lab_session.clean_up()

"""The workbook opens on its start page, rendered (issue 24): JupyterLab started the way
``scripts/open-workbook.sh`` starts it (its ``--dry-run`` prints the command and writes the settings
override that opens Markdown as "Markdown Preview") lands on ``README.md`` shown as a page — a
heading, the notebooks table, working links — not as raw Markdown in a text editor; a
double-click on the glossary opens it rendered too.

Screenshots: test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from .checks import is_local_url
from .conftest import ARTIFACTS, ROOT, _finish, missing_browser_reason, new_page

pytestmark = pytest.mark.browser

VIEWER = ".jp-MarkdownViewer:not(.lm-mod-hidden) .jp-RenderedMarkdown"


def open_workbook_lab_args() -> tuple[str, ...]:
    """The ``--LabApp.*`` arguments open-workbook.sh passes to ``jupyter lab`` (its dry run also
    writes the settings override into this environment's JupyterLab, as a real start does)."""
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "open-workbook.sh"), "--dry-run", "--no-browser"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    command = shlex.split(r.stdout.strip().splitlines()[-1])
    return tuple(a for a in command if a.startswith("--LabApp."))


@pytest.fixture(scope="module")
def start_page_lab(workbook_copy, browser):
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    from .servers import running_jupyterlab

    args = open_workbook_lab_args()
    assert any(a.startswith("--LabApp.default_url=") for a in args), args
    with running_jupyterlab(workbook_copy, log_path=ARTIFACTS / "jupyterlab-start-page.log", extra_args=args) as server:
        context, page, net, console = new_page(browser, allow=lambda u: is_local_url(u))
        try:
            yield server, page, net, console
        finally:
            context.close()


def test_workbook_opens_on_the_rendered_start_page(start_page_lab, artifacts, request):
    server, page, net, console = start_page_lab
    try:
        # the server's root URL, as a browser opened by `jupyter lab` visits it
        page.goto(server.url("/"), wait_until="domcontentloaded")
        page.wait_for_function("() => !!(window.jupyterapp && window.jupyterapp.shell)", timeout=90_000)
        heading = page.locator(f"{VIEWER} h1").first
        heading.wait_for(state="visible", timeout=60_000)
        artifacts.shot(page, "start-page")
        assert "start here" in heading.inner_text()
        assert page.evaluate("() => window.jupyterapp.shell.currentWidget?.context?.path") == "README.md"
        # rendered, not raw: a table of the notebooks with links, and no "# " or "| --- |" text shown
        links = page.locator(f"{VIEWER} table a[href*='.ipynb']")
        assert links.count() >= 9, f"{links.count()} notebook links in the start page's table"
        assert page.locator(f"{VIEWER} a[href*='glossary.md']").count() >= 1
        text = page.locator(VIEWER).first.inner_text()
        assert not re.search(r"^# |\|---\|", text, re.M), text[:300]
        assert page.locator(".jp-FileEditor:not(.lm-mod-hidden)").count() == 0
        # a double-click on another Markdown file opens it rendered too
        item = page.locator(
            ".jp-FileBrowser .jp-DirListing-item",
            has=page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^glossary\.md$")),
        ).first
        item.wait_for(state="visible", timeout=30_000)
        item.dblclick()
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget?.context?.path === 'glossary.md'", timeout=30_000
        )
        glossary = page.locator(f"{VIEWER} h1", has_text="Glossary").first
        glossary.wait_for(state="visible", timeout=30_000)
        artifacts.shot(page, "glossary")
        assert page.locator(f"{VIEWER} strong", has_text="KV cache").count() >= 1
        assert net.outside() == [], f"requests left localhost: {net.outside()}"
    finally:
        _finish(request, artifacts, page, net, console)

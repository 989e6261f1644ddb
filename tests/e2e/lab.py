"""Driving a notebook in JupyterLab with Playwright as a user does: open it, Run → Run All
Cells, read what the page shows, turn a widget.

State is read from the page (and, for "is the kernel idle / did every cell run", from
``window.jupyterapp``, which the test server exposes); actions are menu clicks, key presses and
select boxes, never kernel calls.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

#: The current notebook panel, its kernel, and per code cell: execution count, source empty?
_NOTEBOOK_STATE_JS = r"""
() => {
  const app = window.jupyterapp;
  const panel = app && app.shell && app.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return null;
  const ctx = panel.sessionContext;
  const kernel = ctx.session && ctx.session.kernel;
  const cells = [];
  panel.content.widgets.forEach((cell, i) => {
    const m = cell.model;
    if (m.type !== 'code') return;
    const prompt = cell.node.querySelector('.jp-InputPrompt');
    cells.push({index: i, count: m.executionCount, empty: !m.sharedModel.getSource().trim(),
                prompt: prompt ? prompt.textContent.trim() : '',
                errors: m.outputs ? Array.from({length: m.outputs.length}, (_, j) => m.outputs.get(j))
                          .filter((o) => o.type === 'error').map((o) => {
                             const j = o.toJSON(); return `${j.ename}: ${j.evalue}`; }) : []});
  });
  return {path: ctx.path, ready: ctx.isReady, kernel: kernel ? kernel.status : null,
          connection: kernel ? kernel.connectionStatus : null, cells: cells};
}
"""

#: What a cell's outputs show, controls left out: text and chart sources. Changing a widget
#: must change this (the readout of a slider that was moved does not count).
_FIGURES_JS = r"""
(cellNode) => {
  const clone = cellNode.querySelector('.jp-Cell-outputWrapper, .jp-OutputArea')?.cloneNode(true);
  if (!clone) return {text: '', charts: []};
  const controls = '.widget-slider, .widget-dropdown, .widget-select, .widget-select-multiple, ' +
    '.widget-toggle-buttons, .widget-radio, .widget-text, .widget-textarea, .widget-checkbox, ' +
    '.widget-toggle-button, .widget-button, .widget-readout';
  clone.querySelectorAll(controls).forEach((e) => e.remove());
  const charts = [...clone.querySelectorAll('img, svg, canvas')].map((e) =>
    e.tagName === 'IMG' ? e.getAttribute('src') : e.tagName === 'svg' ? e.outerHTML : 'canvas');
  return {text: clone.textContent.replace(/\s+/g, ' ').trim(), charts: charts};
}
"""


@dataclass(frozen=True)
class Control:
    """A widget control found in the page."""

    kind: str  # "slider", "dropdown", "toggle-buttons"
    label: str  # its description text
    value: str  # what it shows now
    index: int  # its position among controls of its kind in the notebook


def notebook_state(page: Any) -> dict | None:
    return page.evaluate(_NOTEBOOK_STATE_JS)


def wait_kernel_ready(page: Any, *, timeout_s: float = 90) -> None:
    """Wait until the open notebook's kernel is started, connected and idle."""
    page.wait_for_function(
        """() => { const p = window.jupyterapp?.shell?.currentWidget; const k = p?.sessionContext?.session?.kernel;
                   return !!(p?.sessionContext?.isReady && k && k.status === 'idle' && k.connectionStatus === 'connected'); }""",
        timeout=timeout_s * 1000,
    )


def load_app(page: Any, server: Any, *, timeout_s: float = 90) -> None:
    """Load JupyterLab on a reset workspace (no tab of an earlier run restored)."""
    page.goto(server.url("lab?reset"), wait_until="domcontentloaded")
    page.wait_for_function("() => !!(window.jupyterapp && window.jupyterapp.shell)", timeout=timeout_s * 1000)
    page.wait_for_selector(".jp-FileBrowser .jp-DirListing-content", timeout=timeout_s * 1000)


def open_notebook(page: Any, server: Any, name: str, *, timeout_s: float = 90) -> None:
    """Open ``name`` (a file in the server's root) by double-clicking it in the file browser,
    as a user does, and wait for its kernel. Loads the app first if the page is elsewhere."""
    if not page.url.startswith(server.base_url) or not page.evaluate("() => !!window.jupyterapp"):
        load_app(page, server, timeout_s=timeout_s)
    item = page.locator(
        ".jp-FileBrowser .jp-DirListing-item",
        has=page.locator(".jp-DirListing-itemText", has_text=re.compile(rf"^{re.escape(name)}$")),
    ).first
    item.wait_for(state="visible", timeout=timeout_s * 1000)
    item.dblclick()
    page.wait_for_function(
        "(name) => window.jupyterapp.shell.currentWidget?.context?.path === name", arg=name, timeout=timeout_s * 1000
    )
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", timeout=timeout_s * 1000)
    wait_kernel_ready(page, timeout_s=timeout_s)


def close_all(page: Any) -> None:
    """Save every open document (they are in the temporary copy) and close every tab, so that
    no "unsaved changes" dialog appears."""
    page.evaluate("""async () => {
      const app = window.jupyterapp;
      for (const w of Array.from(app.shell.widgets('main'))) {
        if (w.context && w.context.model.dirty) { await w.context.save(); }
      }
      await app.commands.execute('application:close-all');
    }""")
    page.wait_for_function("() => Array.from(window.jupyterapp.shell.widgets('main')).length === 0", timeout=15_000)


def click_menu(page: Any, menu: str, item: str) -> None:
    """Click ``menu`` in JupyterLab's menu bar, then ``item`` in it."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{re.escape(menu)}$")).first.click()
    entry = page.locator(
        ".lm-Menu-item:not(.lm-mod-disabled) .lm-Menu-itemLabel", has_text=re.compile(rf"^{re.escape(item)}$")
    ).first
    entry.wait_for(state="visible", timeout=10_000)
    entry.click()


def run_all_cells(page: Any, *, timeout_s: float = 180) -> dict:
    """Run → Run All Cells, then wait until the kernel is idle and every code cell has run or
    one failed (a failure stops the run). Returns :func:`notebook_state`'s last reading."""
    click_menu(page, "Run", "Run All Cells")
    deadline = time.monotonic() + timeout_s
    idle_since = None
    while True:
        state = notebook_state(page)
        code = [c for c in state["cells"] if not c["empty"]] if state else []
        busy = not state or state["kernel"] != "idle" or any("*" in c["prompt"] for c in code)
        done = bool(code) and (all(c["count"] is not None for c in code) or any(c["errors"] for c in code))
        if not busy and done:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 0.5:  # idle for a moment: no queued cell follows
                return state
        else:
            idle_since = None
        if time.monotonic() > deadline:
            raise TimeoutError(f"Run All Cells did not finish within {timeout_s:g} s: {state}")
        time.sleep(0.2)


def wait_idle(page: Any, *, timeout_s: float = 60) -> None:
    """Wait until the kernel is idle and no output is pending for a moment."""
    deadline = time.monotonic() + timeout_s
    idle_since = None
    while time.monotonic() < deadline:
        state = notebook_state(page)
        if state and state["kernel"] == "idle":
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 0.7:
                return
        else:
            idle_since = None
        time.sleep(0.1)
    raise TimeoutError(f"kernel not idle within {timeout_s:g} s")


def outputs_text(page: Any) -> str:
    """The visible text of the open notebook's outputs (not its code or markdown, which may
    well mention "model not found" when they explain the trap)."""
    return page.evaluate("""() => [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell-outputArea')].map((e) => e.innerText).join('\\n')""")


def widget_problems(page: Any, *, settle_s: float = 10) -> list[str]:
    """Lines of the outputs that say a widget did not render, after giving slow widgets up to
    ``settle_s`` to leave their "Loading widget..." state."""
    from .checks import widget_errors

    deadline = time.monotonic() + settle_s
    while True:
        found = widget_errors(outputs_text(page))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.25)


def error_outputs(page: Any) -> list[str]:
    """Tracebacks and error outputs shown in the open notebook."""
    return page.evaluate(r"""() => [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
        .map((e) => e.textContent).filter((t) => /Traceback|^\w*(Error|Exception)\b/m.test(t))
        .map((t) => t.trim().split('\n').slice(-3).join(' | '))""")


def controls(page: Any) -> list[Control]:
    """The widget controls the open notebook shows: sliders, dropdowns, toggle buttons."""
    found = page.evaluate(r"""() => {
      const nb = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
      const out = [];
      const label = (el) => (el.querySelector(':scope > .widget-label')?.textContent || '').trim();
      const kinds = {slider: '.widget-slider', dropdown: '.widget-dropdown', 'toggle-buttons': '.widget-toggle-buttons'};
      for (const [kind, sel] of Object.entries(kinds)) {
        nb.querySelectorAll(sel).forEach((el, i) => {
          let value = '';
          if (kind === 'slider') value = el.querySelector('.widget-readout')?.textContent.trim() || '';
          if (kind === 'dropdown') value = el.querySelector('select')?.value || '';
          if (kind === 'toggle-buttons') value = el.querySelector('button.mod-active')?.textContent.trim() || '';
          out.push({kind, label: label(el), value, index: i});
        });
      }
      return out;
    }""")
    return [Control(**c) for c in found]


def find_control(
    page: Any, label_pattern: str, kinds: tuple[str, ...] = ("slider", "dropdown", "toggle-buttons")
) -> Control | None:
    """The first control whose description matches ``label_pattern`` (a regex, case-insensitive)."""
    rx = re.compile(label_pattern, re.I)
    for c in controls(page):
        if c.kind in kinds and rx.search(c.label):
            return c
    return None


_KIND_SELECTOR = {
    "slider": ".widget-slider",
    "dropdown": ".widget-dropdown",
    "toggle-buttons": ".widget-toggle-buttons",
}


def control_locator(page: Any, control: Control) -> Any:
    return page.locator(f".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook {_KIND_SELECTOR[control.kind]}").nth(
        control.index
    )


def figures(page: Any, control: Control) -> dict:
    """What the outputs of the cell holding ``control`` show, controls left out."""
    cell = control_locator(page, control).locator(
        "xpath=ancestor::div[contains(concat(' ', normalize-space(@class), ' '), ' jp-Cell ')][1]"
    )
    return cell.evaluate(_FIGURES_JS)


def change_control(page: Any, control: Control) -> str:
    """Set ``control`` to another value as a user would; returns the new value."""
    loc = control_locator(page, control)
    loc.scroll_into_view_if_needed()
    if control.kind == "dropdown":
        select = loc.locator("select")
        values = select.evaluate("(s) => [...s.options].map((o) => o.value)")
        i = values.index(control.value) if control.value in values else -1
        new = values[i + 1] if i + 1 < len(values) else values[i - 1]
        select.select_option(new)
        return new
    if control.kind == "toggle-buttons":
        button = loc.locator("button:not(.mod-active)").first
        new = button.inner_text().strip()
        button.click()
        return new
    handle = loc.locator(".noUi-handle").first
    readout = loc.locator(".widget-readout")
    try:
        position = float(handle.get_attribute("aria-valuenow") or "nan")
        selection = position != float(control.value.replace(",", ""))
    except ValueError:
        selection = True
    if selection:
        # a selection slider (only the values it offers, e.g. deployable GPU counts): the handle's
        # position is an index, not the value; move it one step with the arrow keys, as a keyboard user does
        at_end = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        handle.focus()
        page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
        page.wait_for_timeout(300)
        return readout.inner_text().strip()
    # slider: type a new value into its readout, as a user who clicks the number does
    lo = float(handle.get_attribute("aria-valuemin") or 0)
    hi = float(handle.get_attribute("aria-valuemax") or 0)
    now = float(control.value.replace(",", "") or lo)
    new = now * 2 if now * 2 <= hi else max(lo, now / 2)
    text = str(int(new)) if float(new).is_integer() else f"{new:g}"
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    return text


def wait_figures_change(page: Any, control: Control, before: dict, *, timeout_s: float = 30) -> dict:
    """Poll until the cell's figures differ from ``before`` and the kernel is idle again."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = figures(page, control)
        if now != before and now["text"]:
            wait_idle(page)
            return figures(page, control)
        time.sleep(0.2)
    return figures(page, control)

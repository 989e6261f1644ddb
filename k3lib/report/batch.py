"""Many reports: one per scenario of a YAML file (or a list of mappings), and an
``index.html`` comparing them side by side."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB
from k3lib.report.html import REPORT_CSS, context_text, esc, html_table, usd_text, verdict_badge
from k3lib.report.run import REPORT_NOTEBOOK, ReportError, ReportResult, run_report
from k3lib.report.scenarios import check_scenario, load_scenario_file

if TYPE_CHECKING:
    from tqdm.auto import tqdm as Tqdm


def safe_filename(name: str, *, taken: Iterable[str] = (), max_len: int = 60) -> str:
    """A file stem from any text: ASCII letters, digits, ``-`` and ``_`` only; never empty,
    never one of ``taken`` (``-2``, ``-3`` … appended).

    >>> safe_filename("<script>alert(1)</script>")
    'script-alert-1-script'
    >>> safe_filename("Guide 000: 6× H100", taken={"guide-000-6-h100"})
    'guide-000-6-h100-2'
    """
    import unicodedata

    text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii").lower()
    stem = re.sub(r"[^a-z0-9_]+", "-", text).strip("-_")[:max_len].strip("-_") or "scenario"
    if stem in {"index", "con", "prn", "aux", "nul"}:
        stem = f"scenario-{stem}"
    taken = set(taken)
    out, i = stem, 1
    while out in taken:
        i += 1
        out = f"{stem}-{i}"
    return out


def run_batch(
    scenarios: str | Path | Sequence[Mapping[str, Any]],
    out_dir: str | Path,
    *,
    progress: bool = True,
    notebook: str | Path = REPORT_NOTEBOOK,
    runner: Callable[..., ReportResult] | None = None,
    keep_notebook: bool = False,
) -> list[ReportResult]:
    """One report per scenario into ``out_dir``, then ``out_dir/index.html`` comparing them
    (and with ``keep_notebook`` each executed notebook, ``.ipynb``, next to its report).

    A file is parsed with bounds (:mod:`k3lib.report.scenarios`; a hostile or malformed
    file raises :class:`~k3lib.report.scenarios.ScenarioFileError`). A scenario that fails
    (a field of the wrong type, a bad value, a failing cell) gets a row saying why; the
    others still get their reports. Returns one :class:`ReportResult` per scenario.
    ``progress``: a progress bar on stderr when it is a terminal (never in a pipe, a log or CI).
    """
    if runner is None:
        from k3lib.report.run import require_report_modules

        require_report_modules()  # one line naming k3lib[reports], before anything is read or written

    from k3lib.views.notebook import ParameterError

    base_dir = Path.cwd()
    if isinstance(scenarios, (str, Path)):
        defaults, items = load_scenario_file(scenarios)
        base_dir = Path(scenarios).resolve().parent  # a model_path in the file is relative to the file
    else:
        defaults, items = {}, list(scenarios)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runner = runner or run_report
    results: list[ReportResult] = []
    taken: set[str] = {"index"}
    bar: Tqdm[Any] | _NoBar
    if progress:
        from tqdm.auto import tqdm

        # disable=None: tqdm shows the bar only when stderr is a terminal.
        bar = tqdm(items, desc="reports", unit="scenario", disable=None)
    else:
        bar = _NoBar(items)
    for i, item in enumerate(bar, 1):
        t0 = time.perf_counter()
        raw_name = item.get("name") if isinstance(item, Mapping) else None
        name = str(raw_name) if isinstance(raw_name, (str, int, float)) and raw_name != "" else f"scenario {i}"
        try:
            params = check_scenario(item, i, defaults)
            name = str(params.pop("name"))
            params["scenario"] = name
            if str(params.get("model_path") or "").strip():  # the kernel runs in notebooks/: make it absolute
                params["model_path"] = str((base_dir / str(params["model_path"]).strip()).expanduser().resolve())
            stem = safe_filename(name, taken=taken)
            taken.add(stem)
            bar.set_postfix_str(stem[:30])
            kept: dict[str, Any] = {"keep_notebook": True} if keep_notebook else {}  # a custom runner need not know it
            res = runner(params, out_dir / f"{stem}.html", notebook=notebook, **kept)
            res.scenario = name
        except (ParameterError, K3InputError, ReportError) as exc:
            res = ReportResult(scenario=name, error=str(exc))
        res.seconds = time.perf_counter() - t0
        results.append(res)
    write_index(results, out_dir / "index.html")
    return results


class _NoBar(list):
    """The progress bar's interface, silent (``progress=False``: no tqdm import)."""

    def set_postfix_str(self, _text: str) -> None:
        pass


def _index_row(r: ReportResult) -> dict[str, str]:
    link = f'<a href="{esc(r.html_path.name)}">{esc(r.scenario)}</a>' if r.html_path else esc(r.scenario)
    if r.error:
        return {
            "scenario": link,
            "verdict": verdict_badge("error"),
            "configuration": "",
            "GPUs": "",
            "cost": "",
            "fullest GPU: needed / available (GiB)": "",
            "headroom (GiB)": "",
            "max context": "",
            "tokens/s": "",
            "notes": f"<strong>error:</strong> {esc(r.error)}",
        }
    f = r.figures or {}
    ctx = f["context_tokens"]
    ctx_text = f"{ctx // 1024}K" if ctx % 1024 == 0 else f"{ctx:,}"
    return {
        "scenario": link,
        "verdict": verdict_badge(f["verdict"]),
        "configuration": esc(f"{f['model']} · {f['weights']} · KV {f['kv_dtype']} · {ctx_text} · batch {f['batch']}"),
        "GPUs": esc(
            f"{f['gpus']}× {f['gpu_name']}, TP={f['tp']} × PP={f['pp']}"
            + (f" ({f['nodes']} nodes)" if f["nodes"] > 1 else "")
        ),
        "cost": esc(usd_text(f["cost_usd"])),
        "fullest GPU: needed / available (GiB)": esc(
            f"{f['per_gpu_total_bytes'] / GiB:,.1f} / {f['per_gpu_available_bytes'] / GiB:,.1f}"
        ),
        "headroom (GiB)": esc(f"{f['headroom_bytes'] / GiB:,.1f} over all GPUs"),
        "max context": esc(context_text(f["max_context_tokens"]) if f["max_context_tokens"] else "none fits"),
        "tokens/s": esc(
            f"{f['tokens_per_s']:,.1f} ({f.get('tokens_per_s_basis') or 'basis not given'})"
            if f["tokens_per_s"] is not None
            else "—"
        ),
        "notes": esc(f["reason"]),
    }


def write_index(results: Sequence[ReportResult], path: str | Path) -> Path:
    """``index.html``: the scenarios side by side (verdict, GPUs, cost, the fullest GPU,
    max context, tokens/s), each linked to its report; a failed scenario's row says why."""
    path = Path(path)
    rows = [_index_row(r) for r in results]
    table = html_table(rows, raw=rows[0].keys() if rows else ())
    ok = sum(1 for r in results if r.ok)
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Deployment reports</title>
<style>body {{ font-family: system-ui, sans-serif; margin: 2em; }} {REPORT_CSS}</style></head>
<body><h1>Deployment reports</h1>
<p>{ok} of {len(results)} scenarios reported. GiB = 2<sup>30</sup> bytes; K = 1,024 tokens;
cost = GPU count × catalogue price (data/hardware.csv), “—” where no price is known.</p>
{table}
</body></html>
"""
    path.write_text(doc, encoding="utf-8")
    return path

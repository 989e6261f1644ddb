"""The explorers' callbacks: plain, tested functions that turn widget values into a chart or
a table (presentation, on top of :mod:`k3lib.studies`; the studies never import this module).
Bad input raises one :class:`~k3lib.core.errors.K3InputError` naming the field (the explorers
show that line instead of a chart), or a one-row frame naming it (:func:`checklist_frame`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.layout import Layout, check_tp, choose_layout
from k3lib.core.models import get_model
from k3lib.core.units import GB, GiB, parse_positive_int
from k3lib.studies.checklist import run_checklist
from k3lib.studies.offload import OffloadPlan, plan_offload
from k3lib.studies.parallel import distribute, per_gpu_long
from k3lib.studies.solver import CHEATSHEET_GPUS, _hw, checklist_assumptions, format_context
from k3lib.views.charts_parallel import per_gpu_stacked_bar, time_per_token_bar
from k3lib.views.params import parameter_errors


def layout_figure(
    *,
    model: str = "kimi-k3",
    gpu: str = "h200",
    gpus: int = 8,
    nodes: int = 1,
    tp: int = 8,
    pp: int = 1,
    ep: int = 1,
    weights: str = "native",
    kv_dtype: str = "bf16",
    context: object = "256K",
    batch: int = 1,
):
    """The explorer's callback: a stacked bar per GPU (stage) whose title carries the
    verdict. ``gpus`` must equal TP × PP (× DP where EP > TP)."""
    n = parse_positive_int(gpus, "gpus")
    tp_i = check_tp(get_model(model), tp)
    pp_i = parse_positive_int(pp, "pp")
    if n % (tp_i * pp_i):
        raise K3InputError("gpus", f"{n} GPUs is not a multiple of TP {tp_i} × PP {pp_i}", "TP × PP × DP")
    dp = n // (tp_i * pp_i)
    plan = distribute(
        model=model,
        gpu=gpu,
        layout=Layout(tp=tp_i, pp=pp_i, dp=dp, ep=ep, nodes=nodes),
        weights=weights,
        kv_dtype=kv_dtype,
        context=context,
        batch=batch,
    )
    return per_gpu_stacked_bar(per_gpu_long(plan), title=plan.verdict())


def offload_figure(
    *,
    gpu: str = "rtx-4090-48gb",
    ram: object = "1536GiB",
    ram_bandwidth: object = None,
    expert_layers_on_gpu: int = 0,
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    context: object = 8192,
    kv_dtype: str = "bf16",
    host: object = None,
):
    """The explorer's callback: a bar of milliseconds per token by device (GPU vs RAM),
    titled with the verdict (tokens/s only when the plan loads) and where the host
    bandwidth comes from (``host`` from data/hosts.csv, ``ram_bandwidth``, or guide 004's
    70 GB/s stated as an assumption). On a unified-memory machine the RAM controls do not
    apply (one pool, read at its own bandwidth) and the title says so."""
    import pandas as pd

    from k3lib.core.hardware import get_gpu

    unified = get_gpu(gpu).unified_memory
    p = plan_offload(
        model=model,
        weights=weights,
        gpu=gpu,
        ram=None if unified else ram,
        ram_bandwidth=None if unified else ram_bandwidth,
        host=None if unified else host,
        expert_layers_on_gpu=expert_layers_on_gpu,
        context=context,
        kv_dtype=kv_dtype,
    )
    df = pd.DataFrame(
        [
            {"where": t.name, "ms per token": t.seconds_per_step * 1e3, "GB read per token": t.read_bytes_per_step / GB}
            for t in p.tiers
        ]
    )
    basis = ("unified memory: RAM, RAM BW and host do not apply — " if unified else "") + p.ram_bandwidth_basis
    return time_per_token_bar(df, title=f"{p.verdict()} — host memory: {basis}")


def offload_validate(**params: Any) -> OffloadPlan:
    """The notebook's parameter check: :func:`plan_offload`, with a bad value stopping
    the notebook as one line, ``parameter <name>: <what is wrong>``."""
    with parameter_errors():
        return plan_offload(**params)


def node_layout(*, model: Any, gpu: Any, gpus: object, nodes: object = None) -> Layout:
    """The layout of ``gpus`` GPUs over ``nodes`` nodes (None or 0: automatic) by the one
    layout rule (:func:`k3lib.core.layout.choose_layout`), after refusing what no one can
    build: more GPUs in one node than this GPU's nodes hold (16 H100s in 1 node: an H100
    node holds 8), or GPUs that do not spread evenly over the nodes. The refusal names
    ``nodes``. (A view-layer guard: ``choose_layout`` itself takes an explicit node count
    as given and would answer TP=16 in one node.)

    >>> node_layout(model="kimi-k3", gpu="h200", gpus=16, nodes=2).describe()
    'TP=8 × PP=2 over 2 nodes'
    >>> node_layout(model="kimi-k3", gpu="h100", gpus=16, nodes=1)
    Traceback (most recent call last):
    ...
    k3lib.core.errors.K3InputError: nodes: 16 GPUs in 1 node, but a h100-sxm node holds 8 (allowed: 2 or more nodes of at most 8 GPUs each)
    """
    from k3lib.core.hardware import get_gpu
    from k3lib.core.search import gpus_per_node_of

    spec = get_model(model)
    hw = get_gpu(gpu) if isinstance(gpu, str) else gpu
    n = parse_positive_int(gpus, "gpus")
    m = None if nodes in (None, 0, "0", "") else parse_positive_int(nodes, "nodes")
    per_node = gpus_per_node_of(hw)
    if m is not None:
        if n % m:
            raise K3InputError(
                "nodes", f"{n} GPUs cannot be spread evenly over {m} nodes", "a divisor of the GPU count"
            )
        if n // m > per_node:
            least = -(-n // per_node)
            raise K3InputError(
                "nodes",
                f"{n} GPUs in {m} node{'s' if m > 1 else ''}, but a {hw.id} node holds {per_node}",
                f"{least} or more nodes of at most {per_node} GPUs each",
            )
    return choose_layout(spec, gpus=n, nodes=m, gpus_per_node=per_node)


@dataclass(frozen=True)
class LaunchChoice:
    """What to launch on one engine: the configuration (``None`` when nothing up to the
    search limit loads), whether it is on the user's own GPUs (``status`` ``"fits"``) or the
    cheapest configuration that loads (``"cheapest"``), its command, and one headline.
    A command is only ever given for a configuration that loads."""

    engine: str
    status: str
    headline: str
    configuration: Any = None
    command: Any = None
    engine_reason: str = ""

    @property
    def loads(self) -> bool:
        return self.configuration is not None


def _verified(cfg, *, engine: str):
    """(plan, command, engine reason) for a solver configuration, or None when it does not
    load: its plan (the engine's plan where the solver verified one) must fit with exactly the
    configuration's layout, and for vLLM, vLLM's own estimate at the ``--gpu-memory-utilization``
    the command prints must fit too (a guard while plans and commands are being unified)."""
    from k3lib.studies import commands

    plan = cfg.plan()
    if not plan.fits or (plan.layout.tp, plan.layout.pp, plan.layout.nodes) != (cfg.tp, cfg.pp, cfg.nodes):
        return None
    if engine == "vllm" and get_model(cfg.model).kind != "profile":  # a guide profile: its guide's policy
        from k3lib.engines import estimate_for_engine

        cmd = commands.vllm_command(plan)
        u_text = cmd.value("--gpu-memory-utilization")
        assert u_text is not None  # vllm_command always writes the flag
        u = float(u_text)
        est = estimate_for_engine(
            "vllm",
            model=cfg.model,
            gpu=cfg.gpu,
            gpus=cfg.gpus,
            tp=cfg.tp,
            pp=cfg.pp,
            context=cfg.context_tokens,
            batch=cfg.batch,
            kv_dtype=cfg.kv_dtype,
            weights=cfg.weights,
            gpu_memory_utilization=u,
        )
        return (plan, cmd, est.reason) if est.fits else None
    if engine == "vllm":
        return plan, commands.vllm_command(plan), ""
    return plan, commands.llama_server_command(plan), ""


def launch_choice(
    *,
    model: Any,
    gpu: Any,
    gpus: object,
    context: object,
    nodes: object = None,
    kv_dtype: str = "fp8",
    batch: object = 1,
    engine: str = "vllm",
    assumptions=None,
    max_gpus: int = 64,
) -> LaunchChoice:
    """The configuration to launch on ``engine`` and its command, never a command for a
    layout that does not load: the best configuration on the user's GPUs (the solver,
    :func:`k3lib.studies.checklist.best_configuration`) if it loads; otherwise the cheapest
    deployable count that loads, labelled as such; otherwise none (and no command).
    "Loads" means the plan of exactly that layout fits and, for vLLM, vLLM's own estimate
    at the printed ``--gpu-memory-utilization`` fits too. ``nodes`` is checked by
    :func:`node_layout` (16 H100s in one node is refused, not planned as TP=16).

    >>> c = launch_choice(model="kimi-k3", gpu="h100", gpus=8, context="256K")
    >>> c.status, c.configuration.gpus, c.command.value("--tensor-parallel-size")
    ('cheapest', 32, '8')
    """
    from k3lib.core.hardware import get_gpu
    from k3lib.core.search import candidate_gpu_counts
    from k3lib.studies.checklist import best_configuration

    spec = get_model(model)
    hw = get_gpu(gpu) if isinstance(gpu, str) else gpu
    n = parse_positive_int(gpus, "gpus")
    lay = node_layout(model=spec, gpu=hw, gpus=n, nodes=nodes)
    kw = dict(
        model=spec, gpu=hw, context=context, batch=batch, engine=engine, kv_dtypes=(kv_dtype,), assumptions=assumptions
    )
    where = lay.describe()
    own = best_configuration(gpus=n, nodes=lay.nodes, **kw)
    checked = _verified(own, engine=engine) if own is not None else None
    if own is not None and checked is not None:
        plan, cmd, why = checked
        return LaunchChoice(engine, "fits", f"Loads on your {n}× {hw.id} ({where}): {own.label}.", own, cmd, why)
    miss = (
        f"Nothing loads on your {n}× {hw.id} ({where}) with {engine} at "
        f"{format_context(own.context_tokens if own else _ctx(context))}"
    )
    if own is not None:
        miss += f" (the solver's {own.label} does not load as launched)"
    for count in candidate_gpu_counts(spec, hw, max_gpus=max(max_gpus, n)):
        if count <= n:
            continue
        cfg = best_configuration(gpus=count, **kw)
        checked = _verified(cfg, engine=engine) if cfg is not None else None
        if cfg is not None and checked is not None:
            plan, cmd, why = checked
            return LaunchChoice(
                engine,
                "cheapest",
                f"{miss}. Cheapest configuration that loads (not your inventory): {cfg.label}.",
                cfg,
                cmd,
                why,
            )
    return LaunchChoice(
        engine, "none", f"{miss}, nor on any deployable count up to {max(max_gpus, n)} {hw.id}: no command."
    )


def _ctx(context: object) -> int:
    from k3lib.core.units import parse_context_tokens

    return parse_context_tokens(context, "context")


def checklist_frame(
    *,
    model: str,
    gpu: str,
    gpus: object,
    context: object,
    overhead_per_gpu_gib: float | None = None,
    kv_dtype: str = "fp8",
    nodes: object = None,
):
    """The interactive form's callback: inventory in, one row per step out (a DataFrame
    with step, title, figure, reason), plus a row for the recommended configuration.
    Bad input gives a one-row frame naming the field instead of raising; so does a node
    count no one can build (:func:`node_layout`). The last row is :func:`launch_choice`:
    the configuration that loads on these GPUs, or the cheapest one that does, labelled.

    >>> checklist_frame(model="kimi-k3@guide-000", gpu="h100", gpus=6, context="256K")["figure"].iloc[0]
    'real budget 432.0 GiB'
    >>> checklist_frame(model="kimi-k3", gpu="h100", gpus=16, nodes=1, context="256K")["figure"].iloc[0]
    'nodes'
    """
    import pandas as pd

    try:
        a = None
        if overhead_per_gpu_gib is not None:
            try:
                oh = float(overhead_per_gpu_gib)
            except (TypeError, ValueError):
                raise K3InputError("overhead_per_gpu_gib", f"{overhead_per_gpu_gib!r} is not a number") from None
            if not math.isfinite(oh) or oh < 0:
                raise K3InputError("overhead_per_gpu_gib", f"{overhead_per_gpu_gib!r} must be ≥ 0")
            a = checklist_assumptions(int(round(oh * GiB)))
        lay = node_layout(model=model, gpu=gpu, gpus=gpus, nodes=nodes)  # 16 GPUs in one 8-GPU node: refused
        c = run_checklist(
            model=model, gpu=gpu, gpus=gpus, context=context, nodes=lay.nodes, kv_dtype=kv_dtype, assumptions=a
        )
        choice = launch_choice(
            model=model, gpu=gpu, gpus=gpus, nodes=lay.nodes, context=context, kv_dtype=kv_dtype, assumptions=a
        )
    except K3InputError as exc:
        return pd.DataFrame([{"step": 0, "title": "input error", "figure": exc.field, "reason": str(exc)}])
    df = c.to_frame()
    title = {"fits": "Recommended", "cheapest": "Cheapest that loads (more GPUs)", "none": "Recommended"}
    cfg = choice.configuration
    rec = {"step": 8, "title": title[choice.status], "figure": cfg.label if cfg else "none", "reason": choice.headline}
    return pd.concat([df, pd.DataFrame([rec])], ignore_index=True)


def checklist_form(
    *,
    model: str = "kimi-k3",
    gpu: str = "h100-sxm",
    gpus: int = 8,
    nodes: int = 1,
    context: str = "256K",
    overhead_per_gpu_gib: float = 8.0,
    models: Sequence[str] = ("kimi-k3", "kimi-k3@guide-000"),
    gpu_choices: Sequence[str] = CHEATSHEET_GPUS,
    contexts: Sequence[str] = ("32K", "64K", "128K", "256K", "512K", "1M"),
):
    """An ipywidgets form (thin layer over :func:`checklist_frame`): change any input and
    the table of answers updates. Returns the widget box; ``box.children[-1]`` is the
    HTML output. Needs ipywidgets (imported lazily)."""
    import ipywidgets as w

    style = {"description_width": "9em"}
    inputs = dict(
        model=w.Dropdown(options=list(dict.fromkeys([model, *models])), value=model, description="model", style=style),
        gpu=w.Dropdown(options=list(dict.fromkeys([gpu, *gpu_choices])), value=gpu, description="GPU", style=style),
        gpus=w.IntSlider(value=int(gpus), min=1, max=32, description="GPUs", style=style),
        nodes=w.IntSlider(value=int(nodes), min=1, max=4, description="nodes", style=style),
        context=w.Dropdown(
            options=list(dict.fromkeys([context, *contexts])), value=context, description="target context", style=style
        ),
        overhead_per_gpu_gib=w.FloatText(
            value=float(overhead_per_gpu_gib), description="overhead/GPU (GiB)", style=style
        ),
    )
    out = w.HTML()

    def update(_change=None) -> None:
        values = {k: v.value for k, v in inputs.items()}
        per_node = _hw(values["gpu"]).gpus_per_node
        if values["gpus"] > values["nodes"] * per_node:  # more GPUs than the nodes hold: add nodes (it re-runs)
            inputs["nodes"].max = max(inputs["nodes"].max, -(-values["gpus"] // per_node))
            inputs["nodes"].value = -(-values["gpus"] // per_node)
            return
        if get_model(values["model"]).kind != "profile":
            values["overhead_per_gpu_gib"] = None  # a real architecture: k3lib's measured rule, as `estimate`
        df = checklist_frame(**values)
        out.value = df.to_html(index=False, escape=True)

    for widget in inputs.values():
        widget.observe(update, names="value")
    update()
    return w.VBox([*inputs.values(), out])

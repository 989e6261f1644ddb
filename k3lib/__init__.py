"""k3lib: how much GPU memory a large language model needs, and where it goes.

Layers, each importing only from the ones above it in this list (``tests/test_import_graph.py`` checks it,
and that no module imports itself round a circle):

* :mod:`k3lib.core` — pure computation, bytes inside: ``units``, ``errors``, ``data``,
  ``precisions``, ``hardware``, ``architecture``, ``models``, ``checkpoints``, ``memory``
  (the four components, each once, array-aware), ``layout`` (TP/PP/DP/EP over nodes, ONE
  valid-TP rule, deployable layouts), ``plan`` (THE per-GPU number: stage shares, the fullest
  GPU), ``sweep`` (the same functions over arrays), ``search`` (fewest GPUs, longest context)
* :mod:`k3lib.loaders` — config.json, GGUF, safetensors → a loaded model with exact bytes; a model by name or path
* :mod:`k3lib.engines` — vLLM, llama.cpp, SGLang, transformers: the engines' own deltas
* :mod:`k3lib.serving` — step time, communication, concurrency and cost of a plan; the offload model
* :mod:`k3lib.studies` — the solver, the checklist steps, cheat sheets, offload, commands
* :mod:`k3lib.guides` — the two guides' claims and their audit
* :mod:`k3lib.views` — tables, charts, widgets and notebook parameters (presentation only)
* :mod:`k3lib.report` — parameterized deployment reports; :mod:`k3lib.cli` — ``k3plan``
"""

from k3lib.core.errors import DoesNotSplitError, K3InputError, UnknownNameError

__all__ = ["K3InputError", "UnknownNameError", "DoesNotSplitError", "make_plan", "get_model", "get_gpu"]
__version__ = "0.1.0"


def __getattr__(name: str):  # lazy: no import-time I/O
    if name == "make_plan":
        from k3lib.core.plan import make_plan

        return make_plan
    if name == "get_model":
        from k3lib.core.models import get_model

        return get_model
    if name == "get_gpu":
        from k3lib.core.hardware import get_gpu

        return get_gpu
    raise AttributeError(name)

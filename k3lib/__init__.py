"""k3lib: how much GPU memory a large language model needs, and where it goes.

The core is pure functions over frozen dataclasses, bytes inside:

* :mod:`k3lib.units` — GB (10^9) vs GiB (2^30), context and size parsing
* :mod:`k3lib.precisions` — weight formats and KV-cache dtypes
* :mod:`k3lib.architecture` / :mod:`k3lib.hf_config` — shapes → parameters and KV bytes
* :mod:`k3lib.models` — the built-in library and the guides' published profiles
* :mod:`k3lib.hardware` — GPUs and unified-memory machines
* :mod:`k3lib.components` — weights, KV cache, activation, overhead
* :mod:`k3lib.plan` — a model on hardware → a :class:`~k3lib.plan.Plan`
"""
from .errors import DoesNotSplitError, K3InputError, UnknownNameError

__all__ = ["K3InputError", "UnknownNameError", "DoesNotSplitError", "make_plan", "get_model", "get_gpu"]
__version__ = "0.1.0"


def __getattr__(name: str):  # lazy: no import-time I/O
    if name == "make_plan":
        from .plan import make_plan
        return make_plan
    if name == "get_model":
        from .models import get_model
        return get_model
    if name == "get_gpu":
        from .hardware import get_gpu
        return get_gpu
    raise AttributeError(name)

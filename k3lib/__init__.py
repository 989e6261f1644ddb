"""k3lib: how much GPU memory a large language model needs, and where it goes.

The core is pure functions over frozen dataclasses, bytes inside:

* :mod:`k3lib.core.units` — GB (10^9) vs GiB (2^30), context and size parsing
* :mod:`k3lib.core.precisions` — weight formats and KV-cache dtypes
* :mod:`k3lib.core.architecture` / :mod:`k3lib.loaders.hf_config` — shapes → parameters and KV bytes
* :mod:`k3lib.core.models` — the built-in library and the guides' published profiles
* :mod:`k3lib.core.hardware` — GPUs and unified-memory machines
* :mod:`k3lib.core.memory` — weights, KV cache, activation, overhead
* :mod:`k3lib.core.plan` — a model on hardware → a :class:`~k3lib.core.plan.Plan`
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

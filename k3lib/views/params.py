"""One typed, bounded model of the plan parameters shared by the CLI, the API, the
widgets and papermill notebooks, and the one error they all show.

:class:`PlanParameters` (pydantic v2) holds what :func:`~k3lib.core.plan.make_plan`
needs. Counts, contexts and sizes go through :mod:`k3lib.core.units` (ASCII digits only,
physical bounds: GPUs ≤ 4,096, context ≤ 2^24 tokens, batch ≤ 2^16, sizes ≤ 10 PB), so
``"٨"``, ``"1e6"`` or ``10**30`` fail the same way everywhere. Names (model, GPU,
weights, KV dtype, engine) are strings of at most 200 printable characters; unknown
names are left to the libraries that know them (:class:`~k3lib.core.errors.UnknownNameError`).
An unknown parameter is an error too, never ignored.

Every failure is a :class:`~k3lib.core.errors.K3InputError` naming the field; the
notebooks and widgets show it as :class:`ParameterError`, whose whole text is
``parameter <field>: <what is wrong> (allowed: …)`` — the CLI prints the same text after
``k3plan: error:``.

>>> p = PlanParameters.parse(model="llama-3.1-70b", gpus="8", context="128K", activation="10GiB")
>>> p.gpus, p.context, p.activation
(8, 131072, 10737418240)
>>> PlanParameters.parse(gpus="٨")
Traceback (most recent call last):
...
k3lib.core.errors.K3InputError: gpus: '٨' is not a whole number: only ASCII digits 0-9 are read (allowed: a whole number ≥ 1, at most 4,096)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from k3lib.core.errors import K3InputError
from k3lib.core.units import parse_context_tokens, parse_positive_int, parse_size_bytes

if TYPE_CHECKING:
    from k3lib.loaders import LoadedModel

MAX_NAME_CHARS = 200


class ParameterError(Exception):
    """A notebook/widget/report parameter is invalid; IPython shows it as one line (no traceback).

    ``field`` is the parameter's name (None for an error that names none)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field

    def _render_traceback_(self) -> list[str]:  # IPython hook: print only the message
        return [f"ParameterError: {self}"]


def parameter_error(exc: Exception) -> ParameterError:
    """The one wrapper: a :class:`K3InputError` → ``parameter <field>: …``; a ``TypeError``
    (an unknown keyword) → ``parameter error: …``."""
    if isinstance(exc, K3InputError):
        return ParameterError(f"parameter {exc}", exc.field)
    return ParameterError(f"parameter error: {exc}")


@contextlib.contextmanager
def parameter_errors() -> Iterator[None]:
    """``with parameter_errors(): …`` turns K3InputError/TypeError into one :class:`ParameterError`."""
    try:
        yield
    except (K3InputError, TypeError) as exc:
        raise parameter_error(exc) from None


def _unset(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, str) and value.strip().lower() == "auto")
    )


def _name(value: Any, field: str) -> Any:
    if not isinstance(value, str):
        return value  # a ModelSpec/GPUSpec object from the API
    text = value.strip()
    if not text or len(text) > MAX_NAME_CHARS or not text.isprintable():
        raise K3InputError(field, f"{value[:40]!r} is not a name", f"1 to {MAX_NAME_CHARS} printable characters")
    return text


class PlanParameters(BaseModel):
    """The validated plan parameters; integers are tokens, counts and bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    model: Any = "kimi-k3"
    weights: str | None = None
    kv_dtype: str = "bf16"
    context: int = 262144
    batch: int = 1
    gpu: Any = "h100-sxm"
    gpus: int = 8
    nodes: int | None = None
    tp: int | None = None
    pp: int | None = None
    activation: int | None = None
    overhead_per_gpu: int | None = None
    overhead_total: int | None = None
    memory_basis: Literal["marketed", "usable"] | None = None
    engine: str | None = None
    gpu_memory_utilization: float | None = None

    @field_validator("model", "gpu", "weights", "kv_dtype", "engine", mode="before")
    @classmethod
    def _names(cls, v: Any, info) -> Any:
        if v is None and info.field_name in ("weights", "engine"):
            return None
        return _name(v, info.field_name)

    @field_validator("context", mode="before")
    @classmethod
    def _context(cls, v: Any) -> int:
        return parse_context_tokens(v, "context")

    @field_validator("batch", "gpus", mode="before")
    @classmethod
    def _counts(cls, v: Any, info) -> int:
        return parse_positive_int(v, info.field_name)

    @field_validator("nodes", "tp", "pp", mode="before")
    @classmethod
    def _optional_counts(cls, v: Any, info) -> int | None:
        return None if _unset(v) else parse_positive_int(v, info.field_name)

    @field_validator("activation", "overhead_per_gpu", "overhead_total", mode="before")
    @classmethod
    def _sizes(cls, v: Any, info) -> int | None:
        return None if _unset(v) else parse_size_bytes(v, info.field_name)

    @field_validator("memory_basis", mode="before")
    @classmethod
    def _basis(cls, v: Any) -> str | None:
        if _unset(v):
            return None
        if v not in ("marketed", "usable"):
            raise K3InputError("memory_basis", f"{v!r} is not a memory basis", "marketed or usable")
        return v

    @field_validator("gpu_memory_utilization", mode="before")
    @classmethod
    def _util(cls, v: Any) -> float | None:
        if _unset(v) or v == 0:
            return None
        allowed = "a fraction in (0, 1], e.g. 0.9"
        try:
            f = float(v) if not isinstance(v, bool) and (not isinstance(v, str) or v.isascii()) else None
        except ValueError:
            f = None
        if f is None or not 0 < f <= 1:
            raise K3InputError("gpu_memory_utilization", f"{v!r} is not a fraction", allowed)
        return f

    @classmethod
    def parse(cls, **params: Any) -> PlanParameters:
        """Validate keyword parameters; raises one :class:`K3InputError` naming the first bad field."""
        try:
            return cls.model_validate(params)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, K3InputError):
                raise cause from None
            field = ".".join(str(x) for x in err["loc"]) or "parameters"
            if err["type"] == "extra_forbidden":
                raise K3InputError(field, "is not a parameter", ", ".join(cls.model_fields)) from None
            raise K3InputError(field, f"{err.get('input')!r}: {err['msg'].lower()}") from None

    def assumptions(self):
        """The :class:`~k3lib.core.plan.Assumptions` these parameters override."""
        from k3lib.core.plan import Assumptions

        return Assumptions(
            activation_bytes=self.activation,
            overhead_per_gpu_bytes=self.overhead_per_gpu,
            overhead_total_bytes=self.overhead_total,
            memory_basis=self.memory_basis,
        )

    def plan_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`~k3lib.core.plan.make_plan` (engine settings excluded)."""
        return dict(
            model=self.model,
            gpu=self.gpu,
            gpus=self.gpus,
            weights=self.weights,
            kv_dtype=self.kv_dtype,
            context=self.context,
            batch=self.batch,
            nodes=self.nodes,
            tp=self.tp,
            pp=self.pp,
            assumptions=self.assumptions(),
        )


def model_source(model: Any, model_path: object = "") -> Any:
    """The model a notebook plans: the architecture read from ``model_path`` (a ``config.json``,
    a GGUF file or a safetensors folder, :func:`k3lib.loaders.load_path`) when it is set,
    else ``model``: a built-in id, or a Hugging Face repository id ``org/name`` (``org/name/FILE.gguf``)
    resolved by :func:`k3lib.loaders.load_hub` from the local hub cache (then the network). A path
    or a repository that does not load stops the notebook with ``parameter model_path: …`` /
    ``parameter model: …`` — the file the user named is the model planned, or an error.

    >>> model_source("kimi-k3", "")
    'kimi-k3'
    >>> model_source("kimi-k3", "/no/such/config.json")
    Traceback (most recent call last):
    ...
    k3lib.views.params.ParameterError: parameter model_path: /no/such/config.json: no such file or folder
    """
    load: Callable[[str], LoadedModel]
    if model_path is None or (isinstance(model_path, str) and not model_path.strip()):
        from k3lib.loaders import is_repo_spec

        if not is_repo_spec(model):
            return model
        from k3lib.loaders import load_hub

        source, name, load = "model", model.strip(), load_hub
    else:
        from k3lib.loaders import load_path

        source, name, load = "model_path", str(model_path).strip(), load_path
    try:
        loaded = load(name)
        return loaded.require_architecture()
    except K3InputError as exc:
        text = str(exc)
        text = text.split(": ", 1)[1] if exc.field and text.startswith(f"{exc.field}: ") else text
        raise ParameterError(f"parameter {source}: {text}", source) from None


__all__ = ["PlanParameters", "ParameterError", "parameter_error", "parameter_errors", "MAX_NAME_CHARS", "model_source"]

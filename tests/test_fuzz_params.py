"""The one parameter model (issue 14): the same named error from the API (PlanParameters),
the notebooks (notebook.validate → ParameterError), the widgets and the CLI."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3lib.cli import main
from k3lib.core.errors import K3InputError
from k3lib.views.notebook import ParameterError, validate
from k3lib.views.params import PlanParameters


@pytest.mark.parametrize(
    "key, value, flag",
    [
        ("gpus", "99999999999999999999999", "--gpus"),
        ("gpus", "٨", "--gpus"),
        ("gpus", "1e6", "--gpus"),
        ("batch", "٨٨٨٨", "--batch"),
        ("batch", str(2**16 + 1), "--batch"),
        ("context", "999999999999999999999", "--context"),
        ("context", "0", "--context"),
        ("tp", "0", "--tp"),
        ("activation", "1e30GB", "--activation"),
        ("overhead_per_gpu", "-8GiB", "--overhead-per-gpu"),
    ],
)
def test_same_text_in_api_notebook_and_cli(capsys, key, value, flag):
    with pytest.raises(K3InputError) as api:
        PlanParameters.parse(**{key: value})
    assert api.value.field in (key, key.replace("_", "-"))
    with pytest.raises(ParameterError) as nb:
        validate(**{key: value})
    assert str(nb.value) == f"parameter {api.value}"
    assert main(["estimate", f"{flag}={value}"]) == 2
    err = capsys.readouterr().err
    # the CLI spells the field as its flag (overhead-per-gpu), the API as its keyword; the rest is identical
    assert err == f"k3plan: error: {str(api.value).replace(key, flag[2:], 1)}\n"


def test_widget_shows_the_same_line():
    from k3lib.views.widgets import explorer_update

    df, chart, message = explorer_update(
        model="kimi-k3", weights="native", kv_dtype="bf16", context="256K", gpu="h100-sxm", gpus="٨", batch=1
    )
    assert df is None and chart is None
    with pytest.raises(K3InputError) as api:
        PlanParameters.parse(gpus="٨")
    assert message == f"parameter {api.value}"


def test_unknown_and_engine_parameters_are_errors_not_ignored():
    with pytest.raises(ParameterError, match=r"^parameter gpu_count: is not a parameter"):
        validate(gpu_count=8)
    with pytest.raises(ParameterError, match=r"^parameter gpu_memory_utilization: "):
        validate(gpu_memory_utilization=0.9)
    with pytest.raises(K3InputError, match=r"^gpu_memory_utilization: "):
        PlanParameters.parse(gpu_memory_utilization=2)


def test_parsed_values_are_exact():
    p = PlanParameters.parse(
        gpus="1,024",
        context="128K",
        batch=4,
        activation="10GB",
        overhead_total="48GiB",
        tp="auto",
        nodes="",
        memory_basis="usable",
    )
    assert (p.gpus, p.context, p.batch, p.activation, p.overhead_total, p.tp, p.nodes) == (
        1024,
        131072,
        4,
        10 * 10**9,
        48 * 2**30,
        None,
        None,
    )


@settings(max_examples=80, deadline=1000, derandomize=True)
@given(
    key=st.sampled_from(["gpus", "batch", "context", "nodes", "tp", "pp", "activation", "overhead_per_gpu"]),
    value=st.one_of(st.text(max_size=12), st.integers(-(2**70), 2**70), st.floats(), st.none(), st.booleans()),
)
def test_any_value_parses_or_names_its_field(key, value):
    try:
        p = PlanParameters.parse(**{key: value})
    except K3InputError as exc:
        assert exc.field == key and "\n" not in str(exc)
        return
    got = getattr(p, key)
    assert got is None or (isinstance(got, int) and 0 <= got <= 10**16)


@pytest.mark.parametrize(
    "key",
    [
        "gpus",
        "batch",
        "context",
        "nodes",
        "tp",
        "pp",
        "activation",
        "overhead_per_gpu",
        "ram",
        "ram_bandwidth",
        "gpu_memory_utilization",
        "model",
        "gpu",
        "engine",
    ],
)
@pytest.mark.parametrize("value", ["99999999999999999999999", "٨", "1e6", "-1", "17M", "1e30GB", [1], {"a": 1}])
def test_papermill_report_parameters_fail_with_one_line(key, value):
    """The report's papermill parameters (k3lib.report.parameters.configure) take the same path."""
    from k3lib.report.parameters import configure

    with pytest.raises((ParameterError, K3InputError)) as exc:  # every value here is wrong for every key
        configure(**{key: value})
    assert "\n" not in str(exc.value) and key.split("_")[0] in str(exc.value), str(exc.value)

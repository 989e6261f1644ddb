"""The real-llama.cpp tier needs llama-cpp-python (scripts/install-llamacpp.sh builds it). Outside
CI a machine without it skips the tier with that reason; in CI (CI=true) its absence fails."""

from __future__ import annotations

import importlib.util
import os

import pytest

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.llamacpp)


@pytest.fixture(scope="session")
def tier_models(tmp_path_factory):
    """Every family's GGUF and the quantized variants, built once per session by llama.cpp."""
    if not HAVE_LLAMA:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("llama-cpp-python is not installed: scripts/install-llamacpp.sh should have built it")
        pytest.skip("llama-cpp-python is not installed (bash scripts/install-llamacpp.sh builds it)")
    from .models import build_all

    return build_all(tmp_path_factory.mktemp("llamacpp-tier"))

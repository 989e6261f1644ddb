#!/usr/bin/env bash
# The real-llama.cpp test tier (tests/llamacpp, marker `llamacpp`) needs llama.cpp itself. PyPI has
# llama-cpp-python only as a source distribution, whose build compiles the llama.cpp it vendors
# (0.3.36 vendors ggml-org/llama.cpp@0c1e57098). This script builds it into .venv once; pip keeps
# the built wheel in its cache, so a second run takes seconds.
#
# Speed: the tier measures buffer sizes, not speed, so the build uses -O0 (no optimisation),
# no native CPU variants and no OpenMP; see README ("The real-engine tier") for the measured time.
# K3_SKIP_LLAMACPP=1 skips the build; the tier then skips with its reason (outside CI).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# the version pinned in pyproject.toml's `llamacpp` extra (one place to change it)
version="$(sed -n 's/^ *"llama-cpp-python==\([0-9.]*\)".*/\1/p' pyproject.toml | head -1)"
if [[ -z "$version" ]]; then
    echo "install-llamacpp.sh: no llama-cpp-python pin in pyproject.toml's llamacpp extra" >&2
    exit 1
fi
if [[ "${K3_SKIP_LLAMACPP:-0}" == "1" ]]; then
    echo "install-llamacpp.sh: K3_SKIP_LLAMACPP=1, not building llama.cpp" >&2
    exit 0
fi
if .venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('llama_cpp_python') != '$version')" 2>/dev/null; then
    exit 0
fi
echo "install-llamacpp.sh: building llama-cpp-python $version from source (one time, several minutes)" >&2
start=$(date +%s)
CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
-DCMAKE_C_FLAGS_RELEASE=-O0 -DCMAKE_CXX_FLAGS_RELEASE=-O0" \
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    .venv/bin/python -m pip install --quiet "llama-cpp-python==$version"
echo "install-llamacpp.sh: built in $(( $(date +%s) - start )) s" >&2

#!/usr/bin/env bash
# Run every check in one pytest invocation:
#   - tests/                 unit tests (pytest),
#   - k3lib/                 the doctests in k3lib's docstrings (--doctest-modules),
#   - notebooks/*.ipynb      each notebook run top to bottom and its stored outputs compared
#                            (nbval-lax: every cell must run without error; cells marked `# NBVAL_CHECK_OUTPUT` have their stored output compared).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k units -m 'not browser'`.
# Arguments that name an existing file or folder replace the default paths above.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/setup-env.sh
# Debian's chromium for the browser tests (tests/e2e, marker `browser`). Without it, or without
# root for apt-get, those tests skip with their reason and everything else still runs.
if [[ "${K3_SKIP_BROWSER_INSTALL:-0}" != "1" ]]; then
    bash scripts/install-browser.sh || echo "test.sh: browser set-up failed; browser tests will skip" >&2
fi

# llama.cpp itself for the real-engine tier (tests/llamacpp, marker `llamacpp`): built once from
# llama-cpp-python's source distribution. Without it the tier skips with its reason, except in CI
# (CI=true), where its absence fails the tier.
if [[ "${K3_SKIP_LLAMACPP:-0}" != "1" ]]; then
    bash scripts/install-llamacpp.sh || echo "test.sh: llama.cpp build failed; the llamacpp tier will skip (fail in CI)" >&2
fi

export MPLBACKEND=Agg
export JUPYTER_PLATFORM_DIRS=1
export PYTHONDONTWRITEBYTECODE=1

# Default paths, each only where it exists (empty folders are not in a fresh clone).
paths=()
user_paths=0
for arg in "$@"; do
    if [[ "$arg" != -* && -e "$arg" ]]; then user_paths=1; fi
done
if [[ "$user_paths" == "0" ]]; then
    [[ -d tests ]] && paths+=(tests)
    # Doctests need k3lib to be a package (its modules use relative imports).
    [[ -f k3lib/__init__.py ]] && paths+=(k3lib)
    shopt -s nullglob
    notebooks=(notebooks/*.ipynb)
    shopt -u nullglob
    if ((${#notebooks[@]})); then
        paths+=("${notebooks[@]}")
    else
        echo "test.sh: no notebooks/*.ipynb yet; running the Python tests only" >&2
    fi
fi

# --nbval-current-env: run notebooks in this .venv's kernel, whatever kernelspec they name.
nbval=(--nbval-lax --nbval-current-env)
if [[ -f tests/nbval_sanitize.cfg ]]; then
    nbval+=(--nbval-sanitize-with tests/nbval_sanitize.cfg)
fi

set +e
.venv/bin/python -m pytest --doctest-modules "${nbval[@]}" "${paths[@]}" "$@"
rc=$?
set -e

if [[ "$rc" == "5" ]]; then
    # pytest's 5 means "no tests collected": nothing failed, there was just nothing to run yet.
    echo "test.sh: pytest collected no tests (exit 5); treating that as success" >&2
    exit 0
fi
exit "$rc"

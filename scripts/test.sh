#!/usr/bin/env bash
# Run the static checks (ruff check, ruff format --check, mypy), then every test in one pytest invocation:
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

# Static checks first, configured in pyproject.toml ([tool.ruff], [tool.mypy]): lint, formatting,
# types (strict on k3lib.core and k3lib.loaders). Each runs even when one before it failed, so one
# run reports them all; any failure fails the test command after pytest has run too.
# K3_SKIP_STATIC=1 skips them (pytest only).
static_rc=0
if [[ "${K3_SKIP_STATIC:-0}" != "1" ]]; then
    static_paths=()
    for p in k3lib tests scripts; do [[ -e "$p" ]] && static_paths+=("$p"); done
    step() {
        local name="$1"; shift
        local t0=$SECONDS
        if "$@"; then
            echo "test.sh: $name passed ($((SECONDS - t0)) s)" >&2
        else
            echo "test.sh: $name FAILED: $*" >&2
            static_rc=1
        fi
    }
    step "ruff check" .venv/bin/ruff check "${static_paths[@]}"
    step "ruff format --check" .venv/bin/ruff format --check "${static_paths[@]}"
    step "mypy" .venv/bin/python -m mypy
fi

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
    rc=0
fi
if [[ "$rc" == "0" && "$static_rc" != "0" ]]; then
    echo "test.sh: pytest passed but a static check failed (ruff/mypy above)" >&2
    rc=1
fi
exit "$rc"

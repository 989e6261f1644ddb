#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv and install k3lib into it,
# editable, with its test extra: `pip install -e '.[test]'` from pyproject.toml. The test extra
# includes the notebooks extra (JupyterLab, widgets, Altair, exports) and the reports extra
# (papermill …), so scripts/open-workbook.sh and scripts/test.sh both get all they need.
#
# Idempotent: a second run with an unchanged pyproject.toml only checks and returns.
# Needs Python 3.11 with venv and pip; set PYTHON=/path/to/python3.11 to choose one.
# Set K3_FORCE_INSTALL=1 to reinstall even when nothing changed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

venv="$root/.venv"
stamp="$venv/.k3-installed"

log() { printf 'setup-env: %s\n' "$*" >&2; }

is_py311() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; }

pick_python() {
    local candidate
    for candidate in ${PYTHON:-} python3.11 python3 python; do
        if command -v "$candidate" >/dev/null 2>&1 && is_py311 "$candidate"; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

# A venv that no longer runs (its Python moved or was upgraded) is rebuilt.
if [[ -d "$venv" ]] && ! is_py311 "$venv/bin/python"; then
    log "existing .venv is broken or not Python 3.11; recreating it"
    rm -rf "$venv"
fi

if [[ ! -x "$venv/bin/python" ]]; then
    if ! python="$(pick_python)"; then
        log "error: Python 3.11 not found (tried \$PYTHON, python3.11, python3, python)"
        exit 1
    fi
    log "creating .venv with $(command -v "$python") ($("$python" -V 2>&1))"
    if ! "$python" -m venv "$venv"; then
        log "error: '$python -m venv' failed; on Debian/Ubuntu install python3.11-venv"
        rm -rf "$venv"
        exit 1
    fi
fi

# What decides whether to reinstall: the dependency list and the interpreter.
want="$(cat pyproject.toml; "$venv/bin/python" -VV)"
want_hash="$(printf '%s' "$want" | "$venv/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"

if [[ "${K3_FORCE_INSTALL:-0}" != "1" && -f "$stamp" && "$(cat "$stamp")" == "$want_hash" ]] \
    && "$venv/bin/python" -c 'import importlib.metadata as m; m.distribution("k3lib")' 2>/dev/null; then
    log ".venv is up to date"
    exit 0
fi

start=$SECONDS
export PIP_DISABLE_PIP_VERSION_CHECK=1
log "upgrading pip"
"$venv/bin/python" -m pip install --quiet --upgrade pip
log "installing k3lib (editable) with its test extra (= notebooks + reports + test tools); the first time takes a few minutes"
"$venv/bin/python" -m pip install --quiet -e '.[test]'
printf '%s\n' "$want_hash" >"$stamp"
log "done in $((SECONDS - start)) s: $("$venv/bin/python" -V) in .venv"

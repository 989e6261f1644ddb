#!/usr/bin/env bash
# Install what the browser tests (pytest -m browser, tests/e2e/) need, idempotently:
#   - Debian's `chromium` package (/usr/bin/chromium), via apt-get;
#   - the `playwright` Python package in .venv (from PyPI; it drives that chromium through
#     `executable_path`). Playwright's own browser download (`playwright install`) is never
#     run: it fails on machines without open internet, and the Debian build is what we test.
#
# A second run with everything present only checks and returns (no apt-get update).
# Needs root (or sudo) for apt-get; CI runs as root. Run after scripts/setup-env.sh, or let
# this script call it (it does, so .venv exists).
# Without this script the browser tests skip with a reason; scripts/test.sh still passes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf 'install-browser: %s\n' "$*" >&2; }

# The Python driver's requirement; keep in step with pyproject.toml's `test` extra if it lists it.
playwright_req="${K3_PLAYWRIGHT_REQ:-playwright>=1.40}"

bash scripts/setup-env.sh

if command -v chromium >/dev/null 2>&1; then
    log "chromium present: $(chromium --version 2>/dev/null || echo '?')"
else
    sudo=()
    if [[ "$(id -u)" != "0" ]]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            log "error: chromium is missing and installing it needs root (apt-get install -y chromium)"
            exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    log "apt-get update"
    "${sudo[@]}" apt-get update -qq
    log "apt-get install -y chromium"
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
    log "installed: $(chromium --version 2>/dev/null || echo '?')"
fi

if .venv/bin/python -c 'import playwright.sync_api' 2>/dev/null; then
    log "playwright present in .venv: $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("playwright"))')"
else
    log "pip install '$playwright_req' into .venv"
    PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install --quiet "$playwright_req"
fi

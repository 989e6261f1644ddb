#!/usr/bin/env bash
# Open the workbook: make sure .venv is ready, copy the notebooks into workbook/ (git-ignored),
# and start JupyterLab there. Your session's edits, outputs and widget state are saved in
# workbook/, so the tracked notebooks/ (which the tests compare) stay clean in `git status`.
# A notebook already in workbook/ is kept (it holds your work); `--fresh` copies them all again.
# Extra arguments go to `jupyter lab`, e.g. `bash scripts/open-workbook.sh --no-browser --port 8890`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/setup-env.sh   # k3lib[test], which includes k3lib[notebooks]: JupyterLab, widgets, Altair

fresh=0
args=()
for arg in "$@"; do
    if [[ "$arg" == "--fresh" ]]; then fresh=1; else args+=("$arg"); fi
done

mkdir -p workbook
shopt -s nullglob
for src in notebooks/*.ipynb notebooks/README.md; do
    dst="workbook/$(basename "$src")"
    if [[ "$fresh" == "1" || ! -e "$dst" ]]; then
        cp "$src" "$dst"
    elif [[ "$src" -nt "$dst" ]]; then
        echo "open-workbook: $dst is older than $src (kept: it may hold your work; --fresh replaces it)" >&2
    fi
done
shopt -u nullglob

export JUPYTER_PLATFORM_DIRS=1
extra=()
if [[ "$(id -u)" == "0" ]]; then
    extra+=(--allow-root)  # JupyterLab refuses to run as root without it (containers, CI boxes)
fi
exec .venv/bin/jupyter lab workbook/ "${extra[@]}" "${args[@]+"${args[@]}"}"

#!/usr/bin/env bash
# Open the workbook: make sure .venv is ready, copy the notebooks into workbook/ (git-ignored),
# and start JupyterLab there. Your session's edits, outputs and widget state are saved in
# workbook/, so the tracked notebooks/ (which the tests compare) stay clean in `git status`.
# A notebook already in workbook/ is kept (it holds your work); `--fresh` copies them all again.
# Extra arguments go to `jupyter lab`, e.g. `bash scripts/open-workbook.sh --no-browser --port 8890`.
# Lab opens on workbook/README.md (the series index), rendered: a settings override in this
# environment's JupyterLab (overrides.d/k3-workbook.json: Markdown opens in "Markdown Preview",
# also on a double-click) and `--LabApp.default_url=/lab/tree/README.md`.
# `--dry-run` prepares workbook/ and the settings, prints the `jupyter lab` command, and exits
# (no environment setup, no server).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

fresh=0
dry=0
args=()
for arg in "$@"; do
    case "$arg" in
        --fresh) fresh=1 ;;
        --dry-run) dry=1 ;;
        *) args+=("$arg") ;;
    esac
done

if [[ "$dry" == "0" ]]; then
    bash scripts/setup-env.sh   # k3lib[test], which includes k3lib[notebooks]: JupyterLab, widgets, Altair
fi

mkdir -p workbook
shopt -s nullglob
for src in notebooks/*.ipynb notebooks/*.md; do
    dst="workbook/$(basename "$src")"
    if [[ "$fresh" == "1" || ! -e "$dst" ]]; then
        cp "$src" "$dst"
    elif [[ "$src" -nt "$dst" ]]; then
        echo "open-workbook: $dst is older than $src (kept: it may hold your work; --fresh replaces it)" >&2
    fi
done
shopt -u nullglob

export JUPYTER_PLATFORM_DIRS=1

# Markdown opens rendered (JupyterLab's default for .md is the text editor). overrides.d holds
# defaults only: a user's own settings still win, and a user's overrides.json is left alone.
settings_dir="$(.venv/bin/python -c 'import os; from jupyterlab.commands import get_app_dir; print(os.path.join(get_app_dir(), "settings"))')"
mkdir -p "$settings_dir/overrides.d"
cat > "$settings_dir/overrides.d/k3-workbook.json" <<'JSON'
{
  "@jupyterlab/docmanager-extension:plugin": {
    "defaultViewers": {"markdown": "Markdown Preview"}
  }
}
JSON

extra=(--LabApp.default_url=/lab/tree/README.md)
if [[ "$(id -u)" == "0" ]]; then
    extra+=(--allow-root)  # JupyterLab refuses to run as root without it (containers, CI boxes)
fi
cmd=(.venv/bin/jupyter lab workbook/ "${extra[@]}" "${args[@]+"${args[@]}"}")
if [[ "$dry" == "1" ]]; then
    echo "settings: $settings_dir/overrides.d/k3-workbook.json"
    echo "${cmd[*]}"
    exit 0
fi
exec "${cmd[@]}"

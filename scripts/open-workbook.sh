#!/usr/bin/env bash
# Open the workbook: make sure .venv is ready, then start JupyterLab on notebooks/.
# Extra arguments go to `jupyter lab`, e.g. `bash scripts/open-workbook.sh --no-browser --port 8890`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/setup-env.sh

export JUPYTER_PLATFORM_DIRS=1
extra=()
if [[ "$(id -u)" == "0" ]]; then
    extra+=(--allow-root)  # JupyterLab refuses to run as root without it (containers, CI boxes)
fi
exec .venv/bin/jupyter lab notebooks/ "${extra[@]}" "$@"

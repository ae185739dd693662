#!/usr/bin/env bash
# Set up (fast when already done) and run the whole test suite: unit, integration with the real
# models, Chroma and PyMuPDF, and the browser end-to-end tests. Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh" --test
cd "$ROOT"
export HF_HUB_OFFLINE=1
exec .venv/bin/python -m pytest "$@"

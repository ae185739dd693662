#!/usr/bin/env bash
# Set up (fast when already done) and start the app on 127.0.0.1 with the embedded defaults.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
export HF_HUB_OFFLINE=1
exec .venv/bin/streamlit run app.py --server.address 127.0.0.1 --server.port "${PORT:-8501}" "$@"

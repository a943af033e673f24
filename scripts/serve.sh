#!/usr/bin/env bash
# Builds the lab and serves it on http://127.0.0.1:${PORT:-8080}/ (a static folder: works offline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Trunk runs wasm-opt from npm's binaryen (node_modules/.bin).
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
trunk build --release --offline
port="${PORT:-8080}"
echo "InferScale Lab: http://127.0.0.1:${port}/  (Ctrl-C to stop)"
exec python3 -m http.server --bind 127.0.0.1 --directory dist "$port"

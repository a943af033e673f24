#!/usr/bin/env bash
# Saves screenshots of the lab's main views to docs/screenshots/ (builds first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Trunk runs wasm-opt from npm's binaryen (node_modules/.bin).
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
trunk build --release --offline
node tests/e2e/screenshots.mjs

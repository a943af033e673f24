#!/usr/bin/env bash
# The project's one test command: set-up, then every test. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

echo "== native tests (unit + integration)"
log=$(mktemp)
cargo test --locked 2>&1 | tee "$log"
read -r passed failed < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } } END { print p + 0, f + 0 }' "$log")
rm -f "$log"

echo "== the core builds for wasm32 (no CLI, no IO)"
cargo build --locked --lib --release --target wasm32-unknown-unknown --no-default-features

echo "== closed-form checks (inferscale validate)"
cargo run --locked --release --quiet -- validate

echo "== benchmark (inferscale bench; figures, not assertions)"
cargo run --locked --release --quiet -- bench

echo
echo "tests: ${passed} passed, ${failed} failed"

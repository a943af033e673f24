#!/usr/bin/env bash
# The project's one test command: set-up, then every test. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

echo "== native tests (unit + integration)"
cargo test --locked 2>&1

echo "== closed-form checks (inferscale validate)"
cargo run --locked --release --quiet -- validate

echo "== benchmark (inferscale bench; figures, not assertions)"
cargo run --locked --release --quiet -- bench

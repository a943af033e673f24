#!/usr/bin/env bash
# The project's one test command: set-up, then every test — native, the wasm build, and the lab end to end in
# headless Chromium. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Trunk runs wasm-opt from npm's binaryen (node_modules/.bin).
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

echo "== formatting (rustfmt.toml): cargo fmt --check"
cargo fmt --all --check

echo "== native tests (core, worker protocol, UI table; unit + integration)"
log=$(mktemp)
# --show-output: passing tests' printed figures (the fuzz test's case count, the module order) reach the log.
cargo test --locked --workspace -- --show-output 2>&1 | tee "$log"
fuzz=$(grep -a '^fuzz:' "$log" || echo "fuzz: (no count printed)")
read -r passed failed < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } } END { print p + 0, f + 0 }' "$log")

echo "== lints: native, and the browser crates' wasm-only code"
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo clippy --locked --target wasm32-unknown-unknown -p inferscale-www -p inferscale-worker -- -D warnings

echo "== the core builds for wasm32 alone (no CLI, no IO)"
cargo build --locked --lib --release --target wasm32-unknown-unknown --no-default-features

echo "== the lab: trunk build --release (offline)"
trunk build --release --offline
ls -l dist/*.wasm | awk '{ print $5, $9 }'
for f in dist/*.wasm; do printf '%s gzip: %s bytes\n' "$f" "$(gzip -9c "$f" | wc -c)"; done

echo "== end to end in headless Chromium"
# The container's build step (deploy/Containerfile runs exactly this).
cargo build --locked --release --bin inferscale
node --test tests/e2e/ 2>&1 | tee "$log"
read -r e2e_pass e2e_fail < <(awk '/^# pass / { p = $3 } /^# fail / { f = $3 } END { print p + 0, f + 0 }' "$log")
rm -f "$log"
passed=$((passed + e2e_pass)); failed=$((failed + e2e_fail))

echo "== scale-out: the Kubernetes manifests against the Job schema, and a study sharded on a real Slurm"
if kubernetes-validate --strict deploy/k8s/*.yaml; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
if bash tests/slurm/run.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

echo "== closed-form checks (inferscale validate)"
cargo run --locked --release --quiet -- validate

echo "== benchmark (inferscale bench; figures, not assertions)"
cargo run --locked --release --quiet -- bench

echo
echo "$fuzz"
echo "tests: ${passed} passed, ${failed} failed"
[ "$failed" = 0 ]

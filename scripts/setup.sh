#!/usr/bin/env bash
# Installs what the project's build and tests need, idempotently: each step checks first, so a machine that
# has everything passes in about a second. A fresh machine takes ~15 minutes (Trunk and wasm-bindgen-cli
# compile from crates.io). Nothing downloads a prebuilt binary: crates.io, Debian's packages and npm only.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
export PATH="$HOME/.cargo/bin:$PATH"

# Rust and its wasm32 target.
if ! need cargo; then
  echo "setup: cargo is missing; install Rust (rustup) first" >&2
  exit 1
fi
if need rustup && ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi

# rustfmt and clippy: the test command checks formatting and lints.
if need rustup; then
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi

# Trunk 0.21.14 (0.22 needs a newer rustc than 1.95).
if ! trunk --version 2>/dev/null | grep -q "^trunk 0.21.14$"; then
  cargo install trunk --version 0.21.14 --locked
fi

# wasm-bindgen-cli at exactly Cargo.lock's wasm-bindgen (else Trunk tries to download one).
wbg=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if ! wasm-bindgen --version 2>/dev/null | grep -q " ${wbg}$"; then
  cargo install wasm-bindgen-cli --version "$wbg"
fi

# The crates of Cargo.lock, so that `trunk build --offline` finds every one on a fresh machine.
cargo fetch --locked --quiet

# Chromium and its driver for the end-to-end tests (Debian's packages).
if ! need chromium || ! need chromedriver; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
  else
    echo "setup: chromium and chromium-driver are missing (apt-get install chromium chromium-driver)" >&2
    exit 1
  fi
fi

# The scale-out tests: a single-node Slurm (Debian's slurm-wlm and munge, started and stopped by
# tests/slurm/run.sh) and the Kubernetes manifests' schema check (kubernetes-validate from PyPI: it carries the
# Job schema, so the check runs offline).
if ! need slurmctld || ! need slurmd || ! need munged; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge
  else
    echo "setup: slurm-wlm and munge are missing (apt-get install slurm-wlm munge)" >&2
    exit 1
  fi
fi
if ! kubernetes-validate --version 2>/dev/null | grep -qx "1.37.0"; then
  python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate==1.37.0
fi

# npm packages at package-lock.json's versions: playwright-core (never `playwright install`: it downloads a
# browser; the tests use /usr/bin/chromium) and binaryen's wasm-opt (Debian's v108 breaks the page).
if ! cmp -s package-lock.json node_modules/.inferscale-lock 2>/dev/null; then
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.inferscale-lock
fi

echo "setup: $(cargo --version); $(trunk --version); wasm-bindgen $wbg; $(chromium --version 2>/dev/null | head -1); playwright-core $(node -p "require('./node_modules/playwright-core/package.json').version"); $(node_modules/.bin/wasm-opt --version)"

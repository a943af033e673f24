#!/usr/bin/env bash
# Installs what the project's build and tests need, idempotently: each step checks first, so a machine that
# has everything passes in about a second. Today: the Rust toolchain and its wasm32 target; the browser lab's
# tools (Trunk, wasm-bindgen-cli, Chromium, Playwright) join this script with the lab.
set -euo pipefail

need() { command -v "$1" >/dev/null 2>&1; }

if ! need cargo; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  elif need rustup; then
    rustup default stable
  else
    echo "setup: cargo is missing and rustup is not installed; install Rust (https://rustup.rs) first" >&2
    exit 1
  fi
fi
echo "setup: $(cargo --version)"

# The core also builds for the browser (wasm32); the target is a rustup component.
if need rustup && ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi

#!/usr/bin/env bash
# Rebuild the bundles of docs/validation.md from inference-sim/training (github.com/inference-sim/training,
# commit ed5c1d26; it carries no licence, so its files are not copied here — only the figures `import` reads).
# Each run keeps its directory, so `import` applies the run's config.yaml to its stage reports.
# Usage: scripts/public-series.sh PATH-TO-A-CLONE-OF-inference-sim/training
set -euo pipefail
src="$1"; here="$(cd "$(dirname "$0")/.." && pwd)"; tmp="$(mktemp -d)"
for d in "$src"/default_args/*/results; do
  exp="$(basename "$(dirname "$d")" | cut -d- -f3-)"
  mkdir -p "$tmp/$exp"
  cp "$d"/stage_*_lifecycle_metrics.json "$d/config.yaml" "$tmp/$exp/"
  for f in "$tmp/$exp"/stage_*_lifecycle_metrics.json; do mv "$f" "${f%_lifecycle_metrics.json}.json"; done
done
cd "$tmp"
for m in llama-2-7b-tp1:llama-2-7b llama-2-70b:llama-2-70b codellama-34b:codellama-34b mixtral-8x7b:mixtral-8x7b; do
  IFS=: read -r prefix name <<< "$m"
  cargo run --quiet --release --manifest-path "$here/Cargo.toml" -- import "$prefix"*/stage_*.json > "$here/tests/data/public/$name.bundle.json"
done
cargo run --quiet --release --manifest-path "$here/Cargo.toml" -- validation "$here/tests/data/public/validation.json" --out "$here/docs/validation.md"

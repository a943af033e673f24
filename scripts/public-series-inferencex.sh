#!/usr/bin/env bash
# Rebuild the InferenceX bundles of docs/validation.md (tests/data/public/inferencex/) from InferenceX's
# dashboard data: `packages/app/cypress/fixtures/api/benchmarks.json` of InferenceX-app (github.com/vngcloud/
# InferenceX-app, commit 528c4146, a fork of SemiAnalysisAI/InferenceX-app; GPL-3.0, so its file is not copied
# here — only the figures `import` reads). Each row is one InferenceX CI run (its run_url is in the case's notes).
# Kept: SGLang serving DeepSeek-R1 FP8 on one 8-GPU node (TP 8, no speculative decoding, not disaggregated) on
# H200, MI300X, MI325X and MI355X: every ISL/OSL and concurrency the file has. Each row is written to its own file
# (`<gpu>-<isl>k<osl>k-c<conc>.json`, `-<date>` added where one configuration ran twice), hashed into SHA256SUMS,
# and imported into one bundle per GPU.
# Usage: scripts/public-series-inferencex.sh PATH-TO-benchmarks.json [OUT-FOLDER GPU...]
#   (default: tests/data/public/inferencex h200 mi300x mi325x mi355x; the Blackwell set frozen apart, for a
#   fit judged on runs no one has looked at: tests/data/public/inferencex-blackwell b200 b300)
set -euo pipefail
src="$1"; here="$(cd "$(dirname "$0")/.." && pwd)"; tmp="$(mktemp -d)"
out="$here/${2:-tests/data/public/inferencex}"
shift $(( $# > 1 ? 2 : 1 ))
gpus=("$@"); [ ${#gpus[@]} -gt 0 ] || gpus=(h200 mi300x mi325x mi355x)
mkdir -p "$out"
python3 - "$src" "$tmp" "${gpus[@]}" <<'PY'
import json, sys, collections
rows = json.load(open(sys.argv[1]))
keep = [r for r in rows if r["framework"] == "sglang" and r["model"] == "dsr1" and r["precision"] == "fp8"
        and r.get("spec_method") == "none" and not r["disagg"] and not r["is_multinode"] and r["decode_tp"] == 8
        and r["hardware"] in sys.argv[3:]]
name = lambda r: f'{r["hardware"]}-{r["isl"] // 1024}k{r["osl"] // 1024}k-c{r["conc"]}'
seen = collections.Counter(name(r) for r in keep)
for r in keep:
    n = name(r) + (f'-{r["date"]}' if seen[name(r)] > 1 else "")
    with open(f"{sys.argv[2]}/{n}.json", "w") as f:
        json.dump(r, f, sort_keys=True)
PY
cd "$tmp"
sha256sum -- *.json > "$out/SHA256SUMS"
for gpu in "${gpus[@]}"; do
  cargo run --quiet --release --manifest-path "$here/Cargo.toml" -- import "$gpu"-*.json > "$out/$gpu.bundle.json"
done
(cd "$out" && sha256sum -- *.bundle.json >> SHA256SUMS)

#!/usr/bin/env bash
# No-slower check: builds REV (default: cfe7268, where issue 11's reshape started) in a worktree and the
# working tree, then runs `inferscale bench` on each, alternately, ROUNDS times (default 6), so both see the
# same machine state. Prints the 100k-request 75 %-load median of every round and the ratio of the medians;
# with CASE `agent`, the agent-session benchmark's median wall time instead (its turns/wall-s inverted); with
# CASE `preempt`, the CPU seconds of one run of scenarios/kv-pressure.json (vLLM preempting all the time: the
# path the lazy step ends leave most often).
#   bash scripts/bench-compare.sh [REV] [ROUNDS] [CASE: 75 | agent | preempt]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-cfe7268}
rounds=${2:-6}
case_=${3:-75}
[[ $case_ =~ ^(75|agent|preempt)$ ]] || { echo "bench-compare.sh: CASE must be 75, agent or preempt (got $case_)" >&2; exit 2; }
base=$(mktemp -d)/base
git worktree add --detach "$base" "$rev" >/dev/null
trap 'git worktree remove --force "$base"' EXIT
(cd "$base" && CARGO_TARGET_DIR="$base/target" cargo build --locked --release --quiet --bin inferscale)
cargo build --locked --release --quiet --bin inferscale
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# The median wall time, from the req/wall-s figure (printed to more digits than the seconds).
at75() { "$1" bench | awk '/^75 % of (saturation|drain rate)/ { for (i = 1; i <= NF; i++) { if ($(i + 1) == "req") n = $i; if ($(i + 1) == "req/wall-s") { printf "%.5f\n", n / $i; exit } } }'; }
# The agent benchmark's median wall time, from its turns and turns/wall-s.
agent() { "$1" bench | awk '/^agent sessions/ { for (i = 1; i <= NF; i++) { if ($(i + 1) == "turns") t = $i; if ($(i + 1) == "turns/wall-s") { printf "%.5f\n", t / $i; exit } } }'; }
# One run of the preempting scenario: its user CPU seconds (the run is single-threaded).
preempt() { local TIMEFORMAT=%U; { time "$1" run scenarios/kv-pressure.json >/dev/null 2>&1; } 2>&1; }
measure() { case $case_ in agent) agent "$1" ;; preempt) preempt "$1" ;; *) at75 "$1" ;; esac; }
: >"$base/old"; : >"$base/new"
for i in $(seq "$rounds"); do
    o=$(measure "$base/target/release/inferscale"); n=$(measure target/release/inferscale)
    echo "round $i: $rev ${o} s, this tree ${n} s"
    echo "$o" >>"$base/old"; echo "$n" >>"$base/new"
done
o=$(median <"$base/old"); n=$(median <"$base/new")
case $case_ in
agent) what="agent sessions, 10k sessions" ;;
preempt) what="kv-pressure.json, CPU seconds" ;;
*) what="75 %% load, 100k requests" ;;
esac
awk -v o="$o" -v n="$n" -v r="$rev" -v w="$what" 'BEGIN { printf w ", median of rounds: %s %.5f s, this tree %.5f s, ratio %.3f (target <= 1.05)\n", r, o, n, n / o }'

#!/usr/bin/env bash
# Submit a study as a Slurm job array of N shards and a merge job that runs once every shard succeeded.
#   deploy/slurm/submit.sh N STUDY SCENARIO OUT_DIR [PARAMS_JSON]
# INFERSCALE (default: inferscale on PATH) is the binary every node runs; OUT_DIR must be on a file system all
# nodes share. Prints the merge job's id; the report is OUT_DIR/report.json (FORMAT=md or csv for others).
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 N STUDY SCENARIO OUT_DIR [PARAMS_JSON]" >&2
  exit 2
fi
n=$1 study=$2 scenario=$(realpath "$3") out=$(realpath -m "$4") params=${5:-'{}'}
case $n in '' | *[!0-9]*) echo "N: a whole number of shards, 1 … 10000 (got '$n')" >&2; exit 2 ;; esac
# Decimal whatever its leading zeros (bash's arithmetic, here and in merge.sbatch, reads 010 as octal 8 and
# refuses 08), and its length bounded before any comparison can overflow.
n=${n#"${n%%[!0]*}"}
if [ ${#n} -gt 5 ] || [ "${n:-0}" -lt 1 ] || [ "$n" -gt 10000 ]; then echo "N: 1 … 10000 (got $1)" >&2; exit 2; fi
bin=$(command -v "${INFERSCALE:-inferscale}") || { echo "INFERSCALE: no inferscale binary" >&2; exit 2; }
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
export INFERSCALE=$bin STUDY=$study SCENARIO=$scenario OUT_DIR=$out PARAMS=$params SHARDS=$n FORMAT=${FORMAT:-json}
array=$(sbatch --parsable --chdir="$out" --array="0-$((n - 1))" --export=ALL "$here/shard.sbatch")
array=${array%%;*}
sbatch --parsable --chdir="$out" --dependency="afterok:$array" --kill-on-invalid-dep=yes --export=ALL "$here/merge.sbatch"

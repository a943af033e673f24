#!/usr/bin/env bash
# The scale-out test on a real Slurm: a single-node cluster on this machine (munged, slurmctld, slurmd, all
# started here in a scratch directory and stopped on exit), the shipped deploy/slurm/submit.sh for a fleet
# study in 4 shards, then the merged report must equal the unsharded one byte for byte. A cluster that does not
# come up fails the test, saying why; it never skips.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$PWD/target/release/inferscale
[ -x "$bin" ] || { echo "slurm: build the CLI first (cargo build --release)" >&2; exit 1; }
for c in munged slurmctld slurmd sbatch squeue scontrol; do
  command -v "$c" >/dev/null || { echo "slurm: $c is missing (apt-get install slurm-wlm munge)" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/inferscale-slurm.XXXXXX)
chmod 755 "$dir"
stop() {
  [ -f "$dir/slurmd.pid" ] && kill "$(cat "$dir/slurmd.pid")" 2>/dev/null || true
  [ -f "$dir/slurmctld.pid" ] && kill "$(cat "$dir/slurmctld.pid")" 2>/dev/null || true
  [ -f "$dir/munged.pid" ] && kill "$(cat "$dir/munged.pid")" 2>/dev/null || true
  sleep 1
}
fail() {
  echo "slurm: $*" >&2
  for f in slurmctld.log slurmd.log munged.log; do [ -f "$dir/$f" ] && { echo "--- $f" >&2; tail -20 "$dir/$f" >&2; }; done
  stop
  exit 1
}
trap stop EXIT

# munge: its own key and socket here, so the machine's munge (if any) is untouched.
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/out"
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munge.seed" \
  || fail "munged did not start"

node=$(slurmd -C | head -1)
host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
export SLURM_CONF=$dir/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=inferscale-test
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
$node State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -i || fail "slurmctld did not start"
slurmd || fail "slurmd did not start"
for _ in $(seq 60); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
  case $state in idle | mixed | allocated) break ;; esac
  sleep 1
done
case ${state:-} in idle | mixed | allocated) ;; *) fail "the node never became idle (state '${state:-none}')" ;; esac
echo "slurm: single-node cluster up ($(sinfo -h -o '%N %c CPUs %T'))"

scenario=$dir/scenario.json
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["workload"]["requests"] = 400; json.dump(s, open(sys.argv[2], "w"))' scenarios/default.json "$scenario"
params='{"target_rps": 8, "repetitions": 2, "devices": ["a100-80g", "h100-sxm", "l40s"], "layouts": [{"kind": "colocated"}, {"kind": "pd", "prefill": 1, "decode": 1}]}'
start=$(date +%s)
merge=$(INFERSCALE=$bin deploy/slurm/submit.sh 4 fleet "$scenario" "$dir/out" "$params") || fail "submit failed"
echo "slurm: submitted 4 shards and merge job $merge"
for _ in $(seq 600); do
  [ -z "$(squeue -h 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h)" ] || fail "jobs still queued after 10 minutes: $(squeue -h)"
[ -f "$dir/out/report.json" ] || fail "no merged report; the jobs' output: $(cat "$dir"/out/*.out 2>/dev/null | tail -20)"
"$bin" study fleet "$scenario" --params "$params" --out "$dir/whole.json"
cmp "$dir/out/report.json" "$dir/whole.json" || fail "the merged report differs from the unsharded one"
runs=$(for i in 0 1 2 3; do python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["runs"]))' "$dir/out/part-$i.json"; done | paste -sd' ')
echo "slurm: 4 shards ($runs runs) merged on Slurm equal the unsharded fleet report byte for byte ($(($(date +%s) - start)) s)"
stop
trap - EXIT
rm -rf "$dir"

#!/usr/bin/env bash
# Scale-out through a real single-node Slurm (Debian's slurm-wlm + munge): submits a job array of CPU
# shards plus the dependent merge job with scripts/slurm/submit.sh, waits (bounded), and checks that
# the merged point set equals an unsharded run of the same sweep (keys and statuses, not timings).
# Exits 77 (skipped) only when Slurm cannot be installed or started, saying why. Every daemon this
# test starts is stopped on exit.
source "$(dirname "$0")/lib.sh"
source_dir="${ATTNPROF_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"

skip() { echo "SKIP: $*"; exit 77; }

# 1. Slurm and munge, installed here if missing (scripts/setup.sh installs them in CI).
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  [[ $(id -u) -eq 0 ]] || skip "slurm-wlm/munge are not installed and this user cannot install them"
  echo "installing slurm-wlm and munge"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge \
      >"$scratch/apt.log" 2>&1; then
    skip "apt-get install slurm-wlm munge failed: $(tail -n 1 "$scratch/apt.log")"
  fi
fi
[[ $(id -u) -eq 0 ]] || skip "starting slurmctld/slurmd as configured here needs root"

# 2. munge: reuse a running one, else start it (as the munge user, as Debian's unit does).
started_munged=""
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [[ -s /etc/munge/munge.key ]] || mungekey --create >/dev/null 2>&1 ||
    skip "no munge key and mungekey --create failed"
  mkdir -p /run/munge && chown munge:munge /run/munge
  su -s /bin/sh munge -c /usr/sbin/munged >"$scratch/munged.log" 2>&1 ||
    skip "munged did not start: $(tail -n 1 "$scratch/munged.log")"
  started_munged=yes
  cleanup_hooks+=('[[ -n "$started_munged" && -s /run/munge/munged.pid ]] && kill "$(cat /run/munge/munged.pid)"')
  for _ in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null 2>&1 || skip "munge does not authenticate after starting munged"
fi

# 3. A private slurm.conf: its own ports, state, spool, pid and log files inside the scratch folder.
host="$(hostname -s)"
conf_dir="$scratch/slurm"
mkdir -p "$conf_dir"/{state,spool,log}
mem_mib=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024))
cat >"$conf_dir/slurm.conf" <<CONF
ClusterName=attnproftest
SlurmctldHost=${host}
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=${conf_dir}/state
SlurmdSpoolDir=${conf_dir}/spool
SlurmctldPidFile=${conf_dir}/slurmctld.pid
SlurmdPidFile=${conf_dir}/slurmd.pid
SlurmctldLogFile=${conf_dir}/log/slurmctld.log
SlurmdLogFile=${conf_dir}/log/slurmd.log
ReturnToService=2
JobCompType=jobcomp/none
NodeName=${host} CPUs=$(nproc) RealMemory=${mem_mib} State=UNKNOWN
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$conf_dir/slurm.conf"

stop_daemon() {
  local pidfile="$1" pid
  [[ -s "$pidfile" ]] || return 0
  pid="$(cat "$pidfile")"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
# Registered before the start, so a half-started pair is stopped too; put first so that the Slurm
# daemons stop before munged (if this test started it).
cleanup_hooks=("scancel --quiet --user=root 2>/dev/null; stop_daemon '$conf_dir/slurmd.pid'; stop_daemon '$conf_dir/slurmctld.pid'" "${cleanup_hooks[@]}")

slurmctld -c >"$scratch/slurmctld.out" 2>&1 || skip "slurmctld did not start: $(tail -n 2 "$conf_dir/log/slurmctld.log" 2>/dev/null)"
slurmd -c >"$scratch/slurmd.out" 2>&1 || skip "slurmd did not start: $(tail -n 2 "$conf_dir/log/slurmd.log" 2>/dev/null)"
for _ in $(seq 1 100); do
  state="$(sinfo -h -n "$host" -o %t 2>/dev/null | head -n 1)"
  [[ "$state" == idle* ]] && break
  sleep 0.2
done
[[ "$state" == idle* ]] || skip "the Slurm node did not become idle (state '$state'): $(tail -n 2 "$conf_dir/log/slurmd.log" 2>/dev/null)"
echo "slurm: node $host idle"

# 4. The sweep as a 3-task array + merge job, and the same sweep unsharded for comparison.
out="$scratch/out"
ATTNPROF_BIN="$attnprof" "$source_dir/scripts/slurm/submit.sh" -n 3 -o "$out" --cpu -- \
  --axes "$tiny_axes" "${fast[@]}" >"$scratch/submit.log" 2>&1 || fail "submit.sh failed: $(cat "$scratch/submit.log")"
cat "$scratch/submit.log"
merge_id="$(sed -n 's/.*merge=\([0-9]*\).*/\1/p' "$scratch/submit.log")"
[[ -n "$merge_id" ]] || fail "no merge job id in submit.sh's output"

"$attnprof" sweep --axes "$tiny_axes" "${fast[@]}" --out "$scratch/all" >"$scratch/all.log" 2>&1 ||
  fail "unsharded sweep failed: $(tail -n 5 "$scratch/all.log")"

deadline=$((SECONDS + 200))
while ((SECONDS < deadline)); do
  [[ -z "$(squeue -h 2>/dev/null)" ]] && break
  sleep 1
done
if [[ -n "$(squeue -h 2>/dev/null)" ]]; then
  squeue
  fail "jobs still queued or running after 200 s"
fi
[[ -s "$out/results.json" ]] || fail "the merge job wrote no results.json: $(cat "$out"/logs/*.out 2>/dev/null | tail -n 20)"
for k in 1 2 3; do [[ -s "$out/shard-$k/results.json" ]] || fail "shard $k wrote no results"; done
grep -q "shard 3/3" "$out/logs/shard-2.out" || fail "array task 2 did not run shard 3/3"
[[ -s "$out/report.html" && -s "$out/summary.md" ]] || fail "the merge job rendered no reports"
diff <(point_set "$scratch/all/results.json") <(point_set "$out/results.json") ||
  fail "the merged shards differ from the unsharded run"
echo "slurm: ok (3 shards + merge job $merge_id)"

#!/usr/bin/env bash
# The Slurm launch recipe on a real, private Slurm across network-namespace hosts: munged,
# slurmctld on host 0 and one slurmd on each of hosts 1 and 2 (each in its own UTS namespace, so it
# has its node's host name), all with a test-local slurm.conf. `sbatch --nodes=2
# scripts/launch/slurm_nodes.sbatch` runs one keyed `thinwire node` per host and the coordinator in
# the batch step; the run ends with the final rows (steps, losses, bytes) of the same layout on
# threads, the nodes and their key folders are gone afterwards, and a run that fails fails the job.
# Usage: slurm_launch_test.sh PATH_TO_THINWIRE
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../app/harness.sh"
script="$(realpath "$here/../../scripts/launch/slurm_nodes.sbatch")"
source "$here/netns.sh"
netns_require
for c in munged slurmctld slurmd sbatch sinfo unshare; do
  command -v "$c" > /dev/null || { echo "SKIP: no $c (Debian's slurmctld, slurmd, slurm-client and munge)" >&2; exit 77; }
done

chmod 755 "$work"  # munged wants its socket's folders searchable by all
at_exit netns_cleanup
log_globs=("*.log" "job-*.out" "shared/thinwire-job-*/nodes/*.log")
log_lines=8
t0=$SECONDS
netns_hosts 3

# ---- munge and Slurm, all inside the namespaces ------------------------------------------------
mkdir -m 755 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge/munge.key"
on_host 0 munged -F -f --socket="$work/munge/sock" --key-file="$work/munge/munge.key" \
  --log-file="$work/munged.log" --pid-file="$work/munge/pid" --seed-file="$work/munge/seed" > /dev/null 2>&1 &
for _ in $(seq 1 50); do [ -S "$work/munge/sock" ] && break; sleep 0.1; done
[ -S "$work/munge/sock" ] || fail "munged did not come up"

mkdir -p "$work/slurm/state" "$work/slurm/spool/tw-h1" "$work/slurm/spool/tw-h2" "$work/tmp" "$work/shared"
: > "$work/slurm/plugstack.conf"
printf 'CgroupPlugin=cgroup/v1\n' > "$work/slurm/cgroup.conf"  # never used: proctrack/linuxproc, task/none
export SLURM_CONF="$work/slurm/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=twtest
SlurmctldHost=tw-h0($(host_ip 0))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
PlugStackConfig=$work/slurm/plugstack.conf
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
StateSaveLocation=$work/slurm/state
SlurmdSpoolDir=$work/slurm/spool/%n
SlurmctldPidFile=$work/slurm/slurmctld.pid
SlurmdPidFile=$work/slurm/slurmd-%n.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd-%n.log
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=tw-h1 NodeAddr=$(host_ip 1) CPUs=$(nproc) State=UNKNOWN
NodeName=tw-h2 NodeAddr=$(host_ip 2) CPUs=$(nproc) State=UNKNOWN
PartitionName=tw Nodes=tw-h1,tw-h2 Default=YES MaxTime=INFINITE State=UP
CONF
on_host 0 unshare --uts sh -c "hostname tw-h0 && exec slurmctld -D -f '$SLURM_CONF'" > "$work/slurmctld.out" 2>&1 &
for i in 1 2; do
  on_host "$i" unshare --uts sh -c "hostname tw-h$i && exec slurmd -D -f '$SLURM_CONF'" > "$work/slurmd$i.out" 2>&1 &
done
for _ in $(seq 1 100); do
  [ "$(on_host 0 sinfo -h -o '%t %D' 2> /dev/null)" = "idle 2" ] && break
  sleep 0.3
done
[ "$(on_host 0 sinfo -h -o '%t %D' 2> /dev/null)" = "idle 2" ] || fail "Slurm did not get two idle nodes: $(on_host 0 sinfo 2>&1)"

# ---- the run: the layout on threads has the mode the job replaces ------------------------------
micro_corpus "$work/shared/data/corpus"
mkdir -p "$work/tdata" && cp -r "$work/shared/data/corpus" "$work/tdata/corpus"
{ micro_tables; cat <<TOML
[outer]
replicas = 2
inner_steps = 10
algorithm = "diloco"
[network]
profile = "home-20m"
[cluster]
mode = "threads"
TOML
} > "$work/shared/experiment.toml"

submit() {  # extra arguments go to the script; prints the job's output file
  local out rc
  set +e
  out="$(cd "$work/shared" && on_host 0 env TMPDIR="$work/tmp" sbatch --wait --parsable --nodes=2 \
    -o "$work/job-%j.out" "$script" --thinwire "$tw" --data-root data "$@" 2> "$work/sbatch.log")"
  rc=$?
  set -e
  echo "$rc $work/job-${out%%;*}.out"
}
read -r rc job_out < <(submit experiment.toml)
[ "$rc" -eq 0 ] || fail "the Slurm job failed (sbatch exit $rc): $(cat "$work/sbatch.log")"
grep -q "thinwire run exited 0" "$job_out" || fail "the job did not run thinwire to the end: $(tail -20 "$job_out")"
jobdir="$(ls -d "$work"/shared/thinwire-job-*)"
layout="$jobdir/layout.toml"
grep -q "\"tcp://$(host_ip 1):5555\"" "$layout" && grep -q "\"tcp://$(host_ip 2):5555\"" "$layout" \
  || fail "the job's layout does not name a node on each host: $(cat "$layout")"
[ "$(grep -c '^\[cluster\]' "$layout")" -eq 1 ] && grep -q '^mode = "remote"' "$layout" \
  || fail "the job's layout has not exactly one remote [cluster]: $(cat "$layout")"
for i in 0 1; do
  grep -qF "\"$(tail -1 "$jobdir/nodes/$i.pub")\"" "$layout" || fail "task $i's public key is not in the layout"
done
! grep -rqi "secret" "$jobdir" --include='*.pub' || fail "a secret key reached the shared job folder"
[ -z "$(ls -A "$work/tmp")" ] || fail "key folders left behind in the tasks' TMPDIR: $(ls -A "$work/tmp")"
for i in 1 2; do
  for p in $(ip netns pids "$(host_ns "$i")"); do
    ! grep -q "thinwire" "/proc/$p/cmdline" 2> /dev/null || ps -o stat= -p "$p" | grep -q '^Z' \
      || fail "a thinwire process (pid $p) still runs on host $i after the job"
  done
done

"$tw" --db "$work/threads.db" run "$work/shared/experiment.toml" --data-root "$work/tdata" > "$work/threads.out" 2>&1 \
  || fail "the threads run failed: $(tail -20 "$work/threads.out")"
rows_of() { awk '$1 ~ /^replica-/ && NF == 10 {print $1, $2, $3, $4, $5, $6, $7, $8}' "$1"; }
[ "$(rows_of "$work/threads.out" | wc -l)" -eq 2 ] || fail "no final table in the threads run: $(cat "$work/threads.out")"
[ "$(rows_of "$job_out")" = "$(rows_of "$work/threads.out")" ] \
  || fail "the Slurm run differs from threads: $(rows_of "$job_out") vs $(rows_of "$work/threads.out")"

# A run that fails fails the job, and the nodes still stop.
read -r rc bad_out < <(submit experiment.toml -- --set no.such_key=1)
[ "$rc" -ne 0 ] || fail "a job whose run failed exited 0: $(tail -10 "$bad_out")"
grep -q "thinwire run exited [1-9]" "$bad_out" || fail "the failed job did not say how the run ended: $(tail -10 "$bad_out")"
[ -z "$(ls -A "$work/tmp")" ] || fail "the failed job left key folders: $(ls -A "$work/tmp")"
echo "slurm_launch_test: OK in $((SECONDS - t0))s ($(rows_of "$job_out" | tr '\n' ';'))"

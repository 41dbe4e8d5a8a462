#!/usr/bin/env bash
# End-to-end test on a real SLURM: as root on a fresh Debian machine, install SLURM, munge and the accounting
# daemon (slurmdbd with a local MariaDB) from the distribution's packages, start a one-node cluster on this
# host (2 CPUs), run a reduced figure through `snakemake --executor slurm` (the official
# snakemake-executor-plugin-slurm, installed with `pip install -e '.[slurm]'`), check in `sacct` that the jobs went
# through sbatch, and compare the figure's Parquet with a local run's (bit-identical values).
#
#   sudo tests/cluster/slurm_e2e.sh            # exit 0 = passed, 1 = failed, 77 = skipped (reason printed)
#
# Environment: PYTHON (default .venv/bin/python, created if missing), E2E_DIR (work folder, default a temporary
# one), E2E_KEEP=1 leaves the daemons running. Accounting is required: the executor asks `sacct` for job states.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
start=$(date +%s)
skip() { echo "SLURM e2e: SKIPPED: $*"; exit 77; }
fail() { echo "SLURM e2e: FAILED: $*"; exit 1; }
step() { echo "== [$(( $(date +%s) - start ))s] $*"; }

[ "$(id -u)" = 0 ] || skip "must run as root (installs packages and starts daemons)"
command -v apt-get >/dev/null || skip "no apt-get (not a Debian-like system)"

# -- 1. packages ---------------------------------------------------------------------------------------------
step "install slurmctld slurmd slurmdbd slurm-client munge mariadb-server"
PKGS="slurmctld slurmd slurmdbd slurm-client munge mariadb-server"
if ! dpkg -s $PKGS >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -q >/tmp/slurm_e2e_apt.log 2>&1 || skip "apt-get update failed (no package mirror?): $(tail -1 /tmp/slurm_e2e_apt.log)"
    timeout 600 apt-get install -y -q $PKGS >>/tmp/slurm_e2e_apt.log 2>&1 || skip "apt-get install failed: $(tail -1 /tmp/slurm_e2e_apt.log)"
fi
for b in slurmctld slurmd slurmdbd munged sbatch sacct mariadbd; do
    command -v $b >/dev/null || [ -x /usr/sbin/$b ] || skip "$b missing after install"
done
export PATH="/usr/sbin:$PATH"

# -- 2. Python environment with the executor plugin ---------------------------------------------------------
PY=${PYTHON:-$REPO/.venv/bin/python}
if [ ! -x "$PY" ]; then python3 -m venv "$REPO/.venv" || skip "cannot create a venv"; PY=$REPO/.venv/bin/python; fi
step "pip install -e '.[slurm]'"
"$PY" -m pip install -q -e "$REPO[slurm]" >/tmp/slurm_e2e_pip.log 2>&1 || skip "pip install '.[slurm]' failed: $(tail -1 /tmp/slurm_e2e_pip.log)"
BIN=$(dirname "$PY")

# -- 3. configuration and daemons ---------------------------------------------------------------------------
HOST=$(hostname -s)
MEM=$(awk '/MemTotal/ {print int($2/1024) - 512}' /proc/meminfo)
W=${E2E_DIR:-$(mktemp -d /tmp/dpbench-slurm-e2e.XXXXXX)}
mkdir -p "$W" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /run/mysqld
chown munge:munge /run/munge; chown mysql:mysql /run/mysqld 2>/dev/null || true
step "start munge, mariadb, slurmdbd, slurmctld, slurmd on $HOST (2 CPUs, ${MEM} MB); work dir $W"
# Every daemon this script starts is stopped again at exit (unless E2E_KEEP=1 or E2E_SETUP_ONLY=1): SLURM's by
# their pid files, MariaDB by mariadb-admin shutdown, munged by its pid file; daemons found running are left alone.
STARTED=""        # pid files of the SLURM daemons and munged this script started
MARIADB_STARTED=0
cleanup() {
    for f in $STARTED; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
    if [ "$MARIADB_STARTED" = 1 ]; then timeout 60 mariadb-admin shutdown >/dev/null 2>&1 || pkill -x mariadbd; fi
    [ -n "${MUNGE_PID_FILE:-}" ] && [ -s "$MUNGE_PID_FILE" ] && kill "$(cat "$MUNGE_PID_FILE")" 2>/dev/null
    true
}
[ "${E2E_KEEP:-0}" = 1 ] || [ "${E2E_SETUP_ONLY:-0}" = 1 ] || trap cleanup EXIT
[ -s /etc/munge/munge.key ] || mungekey --create --force
chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
if ! pgrep -x munged >/dev/null; then
    runuser -u munge -- /usr/sbin/munged || fail "munged did not start"
    MUNGE_PID_FILE=/run/munge/munged.pid
fi
munge -n | unmunge >/dev/null || fail "munge round trip failed"

if ! pgrep -x mariadbd >/dev/null && ! pgrep -x mysqld >/dev/null; then
    [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >/dev/null 2>&1
    (mysqld_safe --user=mysql >/var/log/slurm/mysqld_safe.log 2>&1 &)
    MARIADB_STARTED=1
fi
for _ in $(seq 60); do mariadb -e "select 1" >/dev/null 2>&1 && break; sleep 1; done
mariadb -e "select 1" >/dev/null 2>&1 || fail "MariaDB did not start"
mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db; CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'dpbench-e2e'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"

cat >/etc/slurm/slurmdbd.conf <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=dpbench-e2e
StorageLoc=slurm_acct_db
EOF
chown slurm:slurm /etc/slurm/slurmdbd.conf; chmod 600 /etc/slurm/slurmdbd.conf
cat >/etc/slurm/slurm.conf <<EOF
ClusterName=dpbench
SlurmctldHost=$HOST
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
MpiDefault=none
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=2 RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
chown -R slurm:slurm /var/spool/slurmctld /var/log/slurm
start_daemon() {  # $1 = daemon, $2 = its pid file
    pgrep -x "$1" >/dev/null && return 0
    "$1" || return 1
    STARTED="$STARTED $2"
}
start_daemon slurmdbd /run/slurmdbd.pid || fail "slurmdbd did not start: $(tail -3 /var/log/slurm/slurmdbd.log)"
for _ in $(seq 30); do sacctmgr -n show cluster >/dev/null 2>&1 && break; sleep 1; done
sacctmgr -i add cluster dpbench >/dev/null 2>&1 || true
sacctmgr -i add account dpbench Cluster=dpbench Description=e2e Organization=dpbench >/dev/null 2>&1 || true
sacctmgr -i add user root Account=dpbench DefaultAccount=dpbench >/dev/null 2>&1 || true
start_daemon slurmctld /run/slurmctld.pid || fail "slurmctld did not start: $(tail -3 /var/log/slurm/slurmctld.log)"
start_daemon slurmd /run/slurmd.pid || fail "slurmd did not start: $(tail -3 /var/log/slurm/slurmd.log)"
for _ in $(seq 60); do sinfo -h -o %T 2>/dev/null | grep -q -E "^idle" && break; sleep 1; done
sinfo -h -o "%N %T %c %m" | grep -q idle || fail "node not idle: $(sinfo -h -o '%N %T %E' 2>&1)"
sinfo
echo "cluster running: $(sinfo -h -o '%N %T %c CPUs %m MB')"
[ "${E2E_SETUP_ONLY:-0}" = 1 ] && { echo "cluster up"; exit 0; }

# -- 4. the same reduced figure, locally and through SLURM ------------------------------------------------------
# smoke grids, three series of Fig. 2a, 3 repetitions; through SLURM with shards of ~6 CPU-seconds (several jobs
# per series), locally unsharded: the Parquet files must be identical.
write_config() {  # $1 = run name, $2 = sharding on/off
    cat <<EOF
results_dir: $W/$1/results
figures_dir: $W/$1/figures
cache_dir: $W/$1/results/cache
group_series: false
sharding: {enabled: $2, max_cpu_minutes: 0.1}
data: {cache_dir: $W/data, mnist_source: substitute}
studies:
  vdm2020:
    repetitions: 3
    figures:
      fig2a: {methods: [loss_perturbation, subsample_aggregate, non_private]}
EOF
}
write_config local false >"$W/local.yaml"
write_config slurm true >"$W/slurm.yaml"
step "local run (no sharding)"
"$BIN/snakemake" "$W/local/figures/vdm2020/fig2a.png" --cores 2 --configfile config/smoke.yaml "$W/local.yaml" \
    >"$W/local.log" 2>&1 || fail "local run failed: $(tail -20 "$W/local.log")"
step "SLURM run (workflow profile slurm, sharded)"
t=$(date +%s)
sub_start=$(date +%Y-%m-%dT%H:%M:%S)
"$BIN/snakemake" "$W/slurm/figures/vdm2020/fig2a.png" --workflow-profile workflow/profiles/slurm --jobs 4 --max-threads 2 \
    --slurm-init-seconds-before-status-checks 5 --configfile config/smoke.yaml "$W/slurm.yaml" >"$W/slurm.log" 2>&1 \
    || fail "snakemake --executor slurm failed: $(tail -30 "$W/slurm.log")"
echo "SLURM run: $(( $(date +%s) - t ))s"

# -- 5. checks ----------------------------------------------------------------------------------------------------
step "sacct: jobs submitted by this run"
sacct -X -a -S "$sub_start" -n -P -o JobID,JobName,Partition,AllocCPUS,State,ExitCode,Elapsed | tee "$W/sacct.txt"
n_done=$(grep -c "|COMPLETED|0:0|" "$W/sacct.txt")
n_bad=$(grep -v -c "|COMPLETED|0:0|" "$W/sacct.txt")
[ "$n_done" -ge 2 ] || fail "expected at least 2 COMPLETED jobs in sacct, found $n_done"
[ "$n_bad" = 0 ] || fail "$n_bad job(s) in sacct did not complete"
grep -q "rule series_shard" "$W/slurm.log" || fail "no shard job ran through SLURM"
step "compare results and figure inputs"
"$PY" - "$W/local/results/vdm2020/fig2a" "$W/slurm/results/vdm2020/fig2a" <<'EOF' || fail "results differ"
import sys
from pathlib import Path

from dpbench.shards import assert_same_results

a, b = map(Path, sys.argv[1:])
names = sorted(p.name for p in a.glob("*.parquet"))
assert names and names == sorted(p.name for p in b.glob("*.parquet")), (names, list(b.glob("*.parquet")))
for n in names:
    assert_same_results(a / n, b / n)
print(f"identical: {len(names)} series Parquet files ({', '.join(names)})")
EOF
[ -s "$W/slurm/figures/vdm2020/fig2a.png" ] || fail "figure missing"

# -- 6. a job cancelled with scancel: sacct says "CANCELLED by <uid>"; the run must treat it as failed, retry it
# once (the profile's retries: 1) and finish with the same results (dpbench/slurm_compat.py), not poll forever.
step "SLURM run with scancel of its first job and of its first shard job"
write_config cancel true >"$W/cancel.yaml"
cancel_start=$(date +%Y-%m-%dT%H:%M:%S)
t=$(date +%s)
timeout -k 10 420 "$BIN/snakemake" "$W/cancel/figures/vdm2020/fig2a.png" --workflow-profile workflow/profiles/slurm \
    --jobs 4 --max-threads 2 --slurm-init-seconds-before-status-checks 5 --configfile config/smoke.yaml \
    "$W/cancel.yaml" >"$W/cancel.log" 2>&1 &
smk=$!
cancelled=""
for _ in $(seq 600); do   # up to 300 s: cancel the first job seen (the dataset job), then the first shard job
    kill -0 $smk 2>/dev/null || break
    n=$(echo "$cancelled" | wc -w)
    id=$(squeue -h -o "%i|%k" 2>/dev/null | awk -F'|' -v n="$n" '(n == 0) || ($2 ~ /series_shard/) {print $1}' \
         | grep -v -x -F -f <(printf '%s\n' $cancelled NONE) | head -1)
    if [ -n "$id" ]; then
        what=$(squeue -h -j "$id" -o "%k %T" 2>/dev/null)
        scancel "$id" && cancelled="$cancelled $id" && echo "scancel $id ($what)"
    fi
    [ "$(echo "$cancelled" | wc -w)" -ge 2 ] && break
    sleep 0.5
done
wait $smk; rc=$?
echo "SLURM run with scancel: exit $rc after $(( $(date +%s) - t ))s; cancelled:$cancelled"
{ [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && fail "the run hung after scancel (killed at 420 s): $(tail -20 "$W/cancel.log")"
[ -n "$cancelled" ] || fail "no job was seen to cancel"
sacct -X -a -S "$cancel_start" -n -P -o JobID,JobName,State,ExitCode | tee "$W/sacct_cancel.txt"
grep -q "|CANCELLED" "$W/sacct_cancel.txt" || fail "no CANCELLED job in sacct"
grep -q "CANCELLED" "$W/cancel.log" || fail "Snakemake did not report the cancelled job: $(tail -20 "$W/cancel.log")"
[ "$rc" = 0 ] || fail "the run did not recover from scancel by its retry (exit $rc): $(tail -30 "$W/cancel.log")"
"$PY" - "$W/local/results/vdm2020/fig2a" "$W/cancel/results/vdm2020/fig2a" <<'EOF' || fail "results after scancel differ"
import sys
from pathlib import Path

from dpbench.shards import assert_same_results

a, b = map(Path, sys.argv[1:])
for p in sorted(a.glob("*.parquet")):
    assert_same_results(p, b / p.name)
print("identical after scancel and retry")
EOF
echo "SLURM e2e: PASSED in $(( $(date +%s) - start ))s ($n_done jobs COMPLETED in sacct)"

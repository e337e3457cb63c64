#!/bin/bash
# tests/slurm/run.sh - coopmpi-run under srun (stage slurm): a one-node
# Slurm of the test's own (munged, slurmctld and slurmd on private
# sockets, ports, spool and state directories in a temporary folder,
# configured through SLURM_CONF, stopped at the end) runs tests/ucx's
# mpi_check directly from srun - MPICH with --mpi=pmi2, Open MPI with
# --mpi=pmix - through scripts/coopmpi-run, and checks that coop carried
# the rendezvous (MPICH: UCX's lanes; Open MPI's ob1 + btl uct: the bytes
# coop copied).  Needs slurm-wlm and munge (scripts/deps.sh) and root.
# One "ok"/"FAIL" line per check, then "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/ucx/report.sh
for t in munged slurmctld slurmd srun sinfo; do
	command -v $t >/dev/null || { echo "slurm: $t not found (scripts/deps.sh)"; exit 1; }
done
tmp=$(mktemp -d) || exit 1
chmod 755 "$tmp"
stop() {
	[[ -s $tmp/slurmd.pid ]] && kill "$(cat "$tmp/slurmd.pid")" 2>/dev/null
	[[ -s $tmp/slurmctld.pid ]] && kill "$(cat "$tmp/slurmctld.pid")" 2>/dev/null
	[[ -S $tmp/munge.sock ]] && munged --stop --socket="$tmp/munge.sock" >/dev/null 2>&1
	sleep 1
	rm -rf "$tmp"
}
trap stop EXIT

# munge, with a key of its own (munged refuses root without --force)
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
chmod 0400 "$tmp/munge.key"
munged --force --socket="$tmp/munge.sock" --key-file="$tmp/munge.key" \
	--pid-file="$tmp/munged.pid" --log-file="$tmp/munged.log" \
	--seed-file="$tmp/munged.seed" || { echo "slurm: munged did not start"; exit 1; }

host=$(hostname -s)
mkdir "$tmp/spool" "$tmp/state"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=coopmpi-test
SlurmctldHost=$host
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmdSpoolDir=$tmp/spool
StateSaveLocation=$tmp/state
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
MpiDefault=none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -f "$SLURM_CONF" && slurmd -f "$SLURM_CONF" ||
	{ echo "slurm: the daemons did not start"; exit 1; }
for ((i = 0; i < 40; i++)); do
	grep -q idle < <(sinfo -h -o %T 2>/dev/null) && break
	sleep 0.5
done
expect "a one-node Slurm runs srun -n 2" "$tmp/hostname" srun -n 2 hostname

mpicc.mpich -O2 tests/ucx/mpi_check.c -o "$tmp/check.mpich" &&
	mpicc.openmpi -O2 tests/ucx/mpi_check.c -o "$tmp/check.openmpi" &&
	copy_count_build "$tmp" || { echo "cannot build the test programs"; exit 1; }
expect "mpich: srun --mpi=pmi2 through coopmpi-run, mpi_check (data checked)" \
	"$tmp/mpich" env UCX_LOG_LEVEL=info scripts/coopmpi-run -v \
	srun --mpi=pmi2 -n 2 "$tmp/check.mpich"
has "$tmp/mpich" 'ep_cfg\[[0-9]+\]: tag\([^)]*coop/memory' \
	"mpich: the rendezvous went through coop"
before=$(copy_bytes)
expect "openmpi: srun --mpi=pmix through coopmpi-run (ob1 + btl uct), mpi_check" \
	"$tmp/ompi" env LD_PRELOAD="$tmp/copy_count.so" scripts/coopmpi-run -v \
	srun --mpi=pmix -n 2 "$tmp/check.openmpi"
ob1_check_copied openmpi "$tmp/ompi" "$before"
echo "$pass passed, $fail failed"
((fail == 0))

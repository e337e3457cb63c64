#!/bin/bash
# tests/nodes/vm-node.sh ID DIR serve|run - one VM of tests/nodes/vm-pair.sh
# (run inside it by scripts/vm/run): the node vmnodeID, 10.212.0.(10+ID)
# on the virtual link between the two VMs.  "serve": run tests/nodes/rsh.py
# until the other node is done.  "run": MPI jobs of 4 ranks, 2 on each
# node, through scripts/coopmpi-run and rsh.py as the launchers' ssh; DIR
# (writable, shared with the host) holds the programs in DIR/bin.  One
# "ok"/"FAIL" line per check, then "N passed, M failed".
set -uo pipefail
id=$1 dir=$2 role=$3
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
. tests/ucx/report.sh
. tests/nodes/counts.sh
report_tail=30

# the link: the VM's only NIC
modprobe virtio_net 2>/dev/null
nic=
for n in /sys/class/net/*; do
	[[ ${n##*/} == lo ]] || { nic=${n##*/}; break; }
done
[[ -n $nic ]] || { echo "vmnode$id: no network interface"; exit 1; }
ip addr add "10.212.0.$((10 + id))/24" dev "$nic" && ip link set "$nic" up || exit 1
hostname "vmnode$id"
printf '127.0.0.1\tlocalhost\n10.212.0.10\tvmnode0\n10.212.0.11\tvmnode1\n' >/run/hosts
mount --bind /run/hosts /etc/hosts || exit 1

if [[ $role == serve ]]; then
	exec /usr/bin/python3 tests/nodes/rsh.py serve
fi

rsh=$root/tests/nodes/rsh.py
for _ in $(seq 120); do
	"$rsh" vmnode1 true 2>/dev/null && break
	sleep 1
done
"$rsh" vmnode1 true || { echo "FAIL - vmnode1 does not answer"; exit 1; }
on() {	# on NODE CMD...: here or through rsh.py
	if [[ $1 == vmnode$id ]]; then shift; "$@"; else "$rsh" "$@"; fi
}
driver_bytes() {	# the driver's COPY bytes on node $1 (0: no module there)
	on "$1" cat /sys/kernel/coopmpi/copy_bytes 2>/dev/null || echo 0
}
has_module() { on "$1" test -e /dev/coopmpi; }

# run NAME LOG -p PML LAUNCHER...: mpi_pairs through the wrapper,
# copy_count preloaded; MPICH's jobs that hang in MPI_Finalize after
# their checks count as run (tests/ucx/report.sh, finalize_hang)
run() {
	local name=$1 log=$2 rc
	shift 2
	timeout -k 5 120 env LD_PRELOAD="$bin/copy_count.so" \
		"$root/scripts/coopmpi-run" "$@" </dev/null >"$log" 2>&1
	rc=$?
	finalize_hang "$name" "${3#mpirun.}" $rc "$log" '^mpi_pairs: ok' && rc=0
	return $rc
}
# job NAME PML LAUNCHER...: (PML: Open MPI's, the wrapper's -p) on each
# node, coop copied that node's intra-node rendezvous bytes - through the
# driver where it has the module (its COPY calls, and its windows, which
# the node's ranks count in their COOP_VERBOSE "copied:" lines), through
# the shm provider where it has not - and none of the other node's
job() {
	local name=$1 pml=$2 log=$dir/job.log n b0 b1 got how
	shift 2
	b0=$(driver_bytes vmnode0) b1=$(driver_bytes vmnode1)
	if run "$name" "$log" -p "$pml" "$@" && grep -q '^mpi_pairs: ok 4 ranks on 2 nodes' "$log"; then
		ok "$name: mpi_pairs across the two VMs, 8 B .. 16 MiB, data checked"
	else
		nok "$name: mpi_pairs across the two VMs" "$log"
		return
	fi
	b0=$(($(driver_bytes vmnode0) - b0)) b1=$(($(driver_bytes vmnode1) - b1))
	for n in vmnode0 vmnode1; do
		got=$(coop_bytes "$log" "$n")
		how="its shm provider (no module)"
		if has_module "$n"; then
			how="the driver"
			((got == 0)) || { nok "$name: $n has the module, yet coop copied $got bytes by itself" "$log"; continue; }
			[[ $n == vmnode0 ]] && got=$b0 || got=$b1
			got=$((got + $(window_bytes_on "$n" "$log")))
		fi
		intra_copied "$name" "$n" "$how" "$got" "$log"
	done
}

bin=$dir/bin
job mpich ob1 mpirun.mpich -np 4 -launcher ssh -launcher-exec "$rsh" \
	-hosts vmnode0:2,vmnode1:2 -genv COOP_VERBOSE 1 "$bin/mpi_pairs.mpich"
for path in ob1 ucx; do
	job "openmpi ($path)" "$path" mpirun.openmpi --allow-run-as-root -np 4 \
		--mca plm_rsh_agent "$rsh" --host vmnode0:2,vmnode1:2 "${ob1_pairs[@]}" \
		-x COOP_VERBOSE=1 "$bin/mpi_pairs.openmpi"
done
"$rsh" vmnode1 exit >/dev/null
echo "$pass passed, $fail failed"
((fail == 0))

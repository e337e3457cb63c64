#!/bin/bash
# tests/nodes/vm-pair.sh - two QEMU VMs (scripts/vm/run) joined by a virtual
# link, each with coopmpi.ko loaded, run one MPI job across both: 4 ranks
# of tests/nodes/mpi_pairs.c, 2 on each VM, under MPICH and Open MPI (ob1
# and pml ucx) through scripts/coopmpi-run, tests/nodes/rsh.py standing
# in for ssh.  Each VM's driver must have copied its own node's
# rendezvous bytes and none of the other's (/sys/kernel/coopmpi/
# copy_bytes).  Then the same with vmnode1 booted without the module:
# coop's shm provider copies its node's bytes (tests/ucx/copy_count.c).
# The checks run in vmnode0 (tests/nodes/vm-node.sh); one "ok"/"FAIL"
# line per check, then "N passed, M failed".  Emulated: minutes.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/ucx/report.sh
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
for mpi in mpich openmpi; do
	"mpicc.$mpi" -O2 -Wall -Werror tests/nodes/mpi_pairs.c \
		-o "$dir/bin/mpi_pairs.$mpi" || exit 1
done
copy_count_build "$dir/bin" || exit 1
scripts/ompi-btl-uct.sh >/dev/null || exit 1	# the VM reads the cache only
make -s -C kmod >/dev/null || exit 1

# link ID LOCALPORT PEERPORT: the VM's NIC, UDP to the other VM's QEMU
link() {
	echo "-netdev socket,id=n0,udp=127.0.0.1:$3,localaddr=127.0.0.1:$2" \
		"-device virtio-net-pci,netdev=n0,mac=52:54:00:c0:0b:1$1"
}
port=$((20000 + RANDOM % 20000))
pass=0 fail=0
for case in both-modules node1-without; do
	mod1=(--module kmod/coopmpi.ko)
	[[ $case == node1-without ]] && mod1=()
	echo "# $case"
	COOP_VM_QEMU_ARGS=$(link 1 $((port + 1)) "$port") COOP_VM_QUIET=1 \
		scripts/vm/run "${mod1[@]}" --rw "$dir" -- \
		tests/nodes/vm-node.sh 1 "$dir" serve >"$dir/vm1.log" 2>&1 &
	serve=$!
	COOP_VM_QEMU_ARGS=$(link 0 "$port" $((port + 1))) \
		scripts/vm/run --module kmod/coopmpi.ko --rw "$dir" -- \
		tests/nodes/vm-node.sh 0 "$dir" run | tee "$dir/vm0.log"
	rc0=${PIPESTATUS[0]}
	# a run that never reached vmnode1 leaves its server waiting
	((rc0 == 0)) || { sleep 5; kill $serve 2>/dev/null; }
	wait $serve
	rc1=$?
	pass=$((pass + $(grep -c '^ok ' "$dir/vm0.log")))
	fail=$((fail + $(grep -c '^FAIL ' "$dir/vm0.log")))
	if ((rc0 != 0 || rc1 != 0)); then
		echo "FAIL - $case: the VMs ended with $rc0 and $rc1 (kernel logs, modules)"
		sed 's/^/     | /' "$dir/vm1.log" | tail -20
		fail=$((fail + 1))
	fi
	port=$((port + 2))
done
echo "$pass passed, $fail failed"
((fail == 0))

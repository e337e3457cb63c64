#!/bin/bash
# tests/nodes/run.sh - jobs across nodes (stage nodes): two simulated nodes
# (tests/nodes/sim-nodes), 4 ranks with 2 on each, started from node0 by
# each launcher through the nodes' ssh look-alike and scripts/coopmpi-run:
#   - mpi_pairs (every rank pair, 8 B .. 16 MiB both ways, every byte
#     checked) under MPICH (UCX), Open MPI's ob1 (the wrapper's default:
#     vader + btl uct inside a node, btl tcp between) and Open MPI's pml
#     ucx; on each node, coop copied that node's intra-node rendezvous
#     bytes and none of the inter-node ones (per-node byte counts of
#     tests/ucx/copy_count.c), and the network carried at least the
#     inter-node bytes (the node's eth0);
#   - a node where libuct_coop.so cannot be loaded next to one where it
#     can: the job runs, UCX names the missing transport, the other node
#     still uses coop;
#   - a rank killed in the middle of a rendezvous: the job fails within
#     the time limit, and neither node keeps a coopmpi file in /dev/shm
#     (on node1 no launcher cleans up: the domain's guard does);
# With --suite instead (stage nodes-suite): MPICH's test/mpi,
# tests/ucx/mpich-quick.list, across the two nodes under both MPIs
# (tests/ucx/mpich-suite.sh --nodes); under Open MPI without its rma
# programs: Open MPI 4.1.4's own one-sided path (osc rdma) needs an RDMA
# network between nodes and fails over tcp without coopmpi as well.
# Needs root (namespaces).  One "ok"/"FAIL" line per check, then
# "N passed, M failed".
#
# MPICH's jobs that hang in MPI_Finalize after printing their checked
# result count as run, and the check says so (tests/ucx/report.sh,
# finalize_hang).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
. tests/ucx/report.sh
. tests/nodes/counts.sh
report_tail=30
((EUID == 0)) || { echo "nodes: needs root (namespaces)"; exit 1; }

nodes=$(mktemp -d) || exit 1
tests/nodes/sim-nodes up "$nodes" >/dev/null || exit 1
trap 'tests/nodes/sim-nodes down "$nodes"; rm -rf "$nodes"' EXIT

# suite ARGS...: tests/ucx/mpich-suite.sh --nodes, its lines counted here
suite() {
	tests/ucx/mpich-suite.sh --nodes "$nodes" --subset tests/ucx/mpich-quick.list \
		"$@" >"$nodes/suite.log" 2>&1
	grep -aE '^(ok|FAIL) |^     \||^#' "$nodes/suite.log"
	pass=$((pass + $(grep -c '^ok ' "$nodes/suite.log")))
	fail=$((fail + $(grep -c '^FAIL ' "$nodes/suite.log")))
}
if [[ ${1:-} == --suite ]]; then
	suite --mpi mpich
	suite --mpi openmpi --only '^(pt2pt|coll|comm)/'
	echo "$pass passed, $fail failed"
	((fail == 0))
	exit
fi

bin=$nodes/bin
mkdir "$bin"
for mpi in mpich openmpi; do
	for p in tests/nodes/mpi_pairs tests/ucx/mpi_kill; do
		"mpicc.$mpi" -O2 -Wall -Werror "$p.c" -o "$bin/${p##*/}.$mpi" || exit 1
	done
done
copy_count_build "$bin" || exit 1

on() { tests/nodes/sim-nodes run "$nodes" "$@"; }
# job MPI PATH LOG [WORD...]: run a 4-rank job from node0 through the
# wrapper (PATH: ob1 or ucx for Open MPI's pml), the WORDs being the
# program and its arguments
job() {
	local mpi=$1 path=$2 log=$3 launch
	shift 3
	if [[ $mpi == mpich ]]; then
		launch="mpirun.mpich -np 4 -launcher ssh -launcher-exec $nodes/ssh -hosts node0:2,node1:2"
	else
		launch="mpirun.openmpi --allow-run-as-root -np 4 --mca plm_rsh_agent $nodes/ssh --host node0:2,node1:2 ${ob1_pairs[*]}"
	fi
	timeout -k 5 40 "$nodes/ssh" node0 "cd $bin && LD_PRELOAD=$bin/copy_count.so" \
		"$root/scripts/coopmpi-run -p $path $launch $*" </dev/null >"$log" 2>&1
}
# eth0's bytes in and out of node $1 so far
net_bytes() {
	on "$1" awk '$1 == "eth0:" { print $2 + $10 }' /proc/net/dev
}
# pairs MPI PATH NAME: mpi_pairs through NAME's path, and the split
pairs() {
	local mpi=$1 path=$2 name=$3 log=$nodes/pairs.log n rc n0 n1 inter net
	n0=$(net_bytes node0) n1=$(net_bytes node1)
	job "$mpi" "$path" "$log" "./mpi_pairs.$mpi"
	rc=$?
	finalize_hang "$name" "$mpi" $rc "$log" '^mpi_pairs: ok' && rc=0
	if ((rc != 0)) || ! grep -q '^mpi_pairs: ok 4 ranks on 2 nodes' "$log"; then
		nok "$name: mpi_pairs, 4 ranks on 2 nodes, 8 B .. 16 MiB, data checked (rc $rc)" "$log"
		return
	fi
	ok "$name: mpi_pairs, 4 ranks on 2 nodes, 8 B .. 16 MiB, data checked"
	for n in node0 node1; do
		intra_copied "$name" "$n" coop "$(coop_bytes "$log" "$n")" "$log"
	done
	net=$(($(net_bytes node0) - n0 + $(net_bytes node1) - n1))
	inter=$(($(pairs_bytes "$log" node0 inter) + $(pairs_bytes "$log" node1 inter)))
	if ((net >= inter)); then
		ok "$name: the nodes' network carried the inter-node bytes ($((net >> 20)) MiB >= $((inter >> 20)) MiB)"
	else
		nok "$name: the nodes' network carried $net bytes, fewer than the inter-node $inter" "$log"
	fi
}

pairs mpich ob1 "mpich (UCX self,posix,coop,tcp)"
pairs openmpi ob1 "openmpi (ob1: vader, btl uct over coop, btl tcp)"
pairs openmpi ucx "openmpi (pml ucx)"

# node1 without the transport (a node without coopmpi installed): the
# module there is a file ld.so refuses
log=$nodes/mixed.log
on node1 mount --bind /dev/null "$root/lib/ucx/libuct_coop.so"
job mpich ob1 "$log" ./mpi_pairs.mpich
rc=$?
finalize_hang "mpich, node1 without coop" mpich $rc "$log" '^mpi_pairs: ok' && rc=0
on node1 umount "$root/lib/ucx/libuct_coop.so"
if ((rc == 0)) && grep -q '^mpi_pairs: ok 4 ranks on 2 nodes' "$log" &&
	grep -q "\[node1:.*transport 'coop' is not available" "$log" &&
	(($(coop_bytes "$log" node0) >= $(pairs_bytes "$log" node0 intra))) &&
	(($(coop_bytes "$log" node1) == 0)); then
	ok "mpich: node1 without libuct_coop.so: the job runs, UCX says coop is missing there, node0 still uses coop"
else
	nok "mpich: node1 without libuct_coop.so: the job runs, UCX says coop is missing there, node0 still uses coop (rc $rc)" "$log"
fi

# a rank killed mid-rendezvous (rank 1, on node0)
shm_left() {
	local n
	for _ in 1 2 3 4 5 6; do
		n=$(for n in node0 node1; do on "$n" sh -c 'ls /dev/shm | grep "^coopmpi-" | sed "s/^/$(hostname): /"'; done)
		[[ -z $n ]] && return 1
		sleep 0.5
	done
	echo "$n"
}
for path in mpich:ob1 openmpi:ob1 openmpi:ucx; do
	mpi=${path%%:*} log=$nodes/kill.log
	start=$SECONDS
	job "$mpi" "${path#*:}" "$log" "./mpi_kill.$mpi"
	rc=$?
	name=$mpi
	[[ $mpi == openmpi ]] && name="openmpi (${path#*:})"
	if ((rc != 0 && rc != 124)); then
		ok "$name: a rank killed mid-rendezvous: the job fails (rc $rc) in $((SECONDS - start)) s"
	else
		nok "$name: a rank killed mid-rendezvous: the job fails, no hang (rc $rc)" "$log"
	fi
	if left=$(shm_left); then
		echo "$left" >"$log"
		nok "$name: coopmpi files left in /dev/shm after the kill" "$log"
	else
		ok "$name: no coopmpi file left in either node's /dev/shm after the kill"
	fi
done

echo "$pass passed, $fail failed"
((fail == 0))

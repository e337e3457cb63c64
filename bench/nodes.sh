#!/usr/bin/env bash
# bench/nodes.sh [ROUNDS] - coop inside a node and the network between
# nodes, on two simulated nodes (tests/nodes/sim-nodes): osu_bw-style
# bandwidth (bench/bin/mpi_peer -t bw) of 2 ranks on one node (intra) and
# on two (inter), each MPI's default path against the same program
# through scripts/coopmpi-run:
#   mpich     mpirun.mpich (UCX's defaults: posix + cma inside, tcp between)
#   openmpi   mpirun.openmpi (ob1: vader + CMA inside, tcp between)
# against the wrapper's default paths (MPICH: UCX self,posix,coop,tcp;
# Open MPI: ob1 with vader + btl uct over coop + btl tcp).  Per round
# every MPI, placement and path runs once in turn, so background load hits
# them alike; each ratio coop/default is the median of its per-round
# ratios (ROUNDS, default 5).  Prints a table and key=value lines:
#   nodes_<mpi>_<intra|inter>_bw_<size>_vs_default=R
# The goals: intra-node >= 1.8 at 4 MiB (coop's gain stays with other
# nodes in the job), inter-node 0.95 .. 1.05 (coop does not touch the
# network path).  Natively, so on the shm provider; the "network" is the
# kernel's TCP over veth on the same CPUs (no NIC): its ratios say whether
# coop costs the inter-node path anything, not what a NIC would carry.
# Needs root.  Results in bench/results/nodes/ (raw/, a CSV per MPI and
# placement, summary.md).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
rounds=${1:-5}
sizes=(65536 1048576 4194304)
out=${BENCH_OUT:-bench/results/nodes}
for m in mpich openmpi; do
	[[ -x bench/bin/mpi_peer.$m ]] ||
		make -s -C bench -f Makefile.suite "bin/mpi_peer.$m" >/dev/null || exit 1
done
((EUID == 0)) || { echo "nodes: needs root (namespaces)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/raw"
out=$(cd "$out" && pwd)

nodes=$(mktemp -d) || exit 1
tests/nodes/sim-nodes up "$nodes" >/dev/null || exit 1
trap 'tests/nodes/sim-nodes down "$nodes"; rm -rf "$nodes"' EXIT

# run MPI WHERE PATH LOG: mpi_peer -t bw from node0, 2 ranks on node0
# (intra, bound by the launcher) or one on each node (inter): the nodes
# share the machine's CPUs, so the launcher would bind both ranks to CPU 0;
# instead each inter-node rank gets its own CPU through taskset, one MPMD
# section per rank, and the scheduler cannot move them between rounds
run() {
	local mpi=$1 where=$2 path=$3 log=$4 launch wrap='' prog ranks
	prog="bench/bin/mpi_peer.$mpi -t bw ${sizes[*]}"
	if [[ $mpi == mpich ]]; then
		launch="mpirun.mpich -launcher ssh -launcher-exec $nodes/ssh"
		[[ $where == intra ]] && launch+=" -bind-to core -hosts node0:2" ||
			launch+=" -bind-to none -hosts node0:1,node1:1"
	else
		launch="mpirun.openmpi --allow-run-as-root --mca plm_rsh_agent $nodes/ssh"
		[[ $where == intra ]] && launch+=" --bind-to core --host node0:2" ||
			launch+=" --bind-to none --host node0:1,node1:1"
	fi
	ranks="-np 1 taskset -c 0 $prog : -np 1 taskset -c 1 $prog"
	[[ $where == intra ]] && ranks="-np 2 $prog"
	[[ $path == coop ]] && wrap=$root/scripts/coopmpi-run
	timeout -k 5 60 "$nodes/ssh" node0 "cd $root && COOP_WARN_FALLBACK=0 $wrap $launch" \
		"$ranks" </dev/null >"$log" 2>&1
}

# bench/lib/stats.sh's CSVs, one per MPI and placement:
# "series,round,size_bytes,value" (series: default or coop, value MB/s)
. bench/lib/stats.sh
for mpi in mpich openmpi; do
	for where in intra inter; do
		echo "series,round,size_bytes,mbps" >"$out/$mpi-$where.csv"
	done
done
for ((r = 1; r <= rounds; r++)); do
	for mpi in mpich openmpi; do
		for where in intra inter; do
			for path in default coop; do
				log=$out/raw/$mpi-$where-$path-$r.txt
				echo "nodes: round $r/$rounds: $mpi $where $path" >&2
				if ! run "$mpi" "$where" "$path" "$log"; then
					# MPICH + UCX 1.13 tcp: a hang in MPI_Finalize
					# after the numbers (tests/README) costs the
					# timeout, not the numbers
					grep -qE "^${sizes[-1]} [0-9.]+$" "$log" ||
						{ echo "nodes: $mpi $where $path failed:" >&2; tail -5 "$log" >&2; exit 1; }
				fi
				awk -v p="$path" -v r="$r" 'NF == 2 && $1 ~ /^[0-9]+$/ { print p "," r "," $1 "," $2 }' \
					"$log" >>"$out/$mpi-$where.csv"
			done
		done
	done
done

{
	echo "# Two simulated nodes, 2 ranks, osu_bw-style MB/s (median of $rounds rounds), coop/default: median of per-round ratios"
	echo "# $(nproc) CPUs, $(uname -r), $(date -u +%F), bench/nodes.sh $rounds"
	echo
	echo "| MPI | pair | size | default MB/s | coop MB/s | coop/default |"
	echo "|---|---|---|---|---|---|"
	for mpi in mpich openmpi; do
		for where in intra inter; do
			for s in "${sizes[@]}"; do
				echo "| $mpi | $where-node | $((s >> 10)) KiB | $(med "$mpi-$where" default "$s") | $(med "$mpi-$where" coop "$s") | $(ratio "$mpi-$where" coop "$mpi-$where" default "$s") |"
			done
		done
	done
} | tee "$out/summary.md"
for mpi in mpich openmpi; do
	for where in intra inter; do
		for s in "${sizes[@]}"; do
			echo "nodes_${mpi}_${where}_bw_$((s >> 10))k_vs_default=$(ratio "$mpi-$where" coop "$mpi-$where" default "$s")"
		done
	done
done

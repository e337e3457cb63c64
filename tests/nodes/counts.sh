# tests/nodes/counts.sh - sourced by run.sh and vm-node.sh: what a log of
# tests/nodes/mpi_pairs.c, run with tests/ucx/copy_count.so preloaded,
# says about each node.
#
# coop_bytes LOG HOST: the bytes coop's shm provider (libuct_coop.so)
# copied in the ranks on HOST (copy_count's PID@HOST lines)
coop_bytes() {
	awk -v host="$2" '$1 ~ "@" host "\\]:$" && / by libuct_coop\.so$/ { s += $2 }
		END { print s + 0 }' "$1"
}
# pairs_bytes LOG NODE intra|inter: mpi_pairs' rendezvous bytes between
# NODE's ranks (intra) or from them to the other node's (inter)
pairs_bytes() {
	sed -n "s/^mpi_pairs: node $2: .* rendezvous \([0-9]*\) bytes, inter-node \([0-9]*\) bytes/\1 \2/p" "$1" |
		awk -v f="$3" '{ print f == "intra" ? $1 : $2 }'
}

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
# mpi_pairs only exchanges (every rank sends and receives at once), which
# the wrapper's ob1 leaves to vader under 32 MiB
# (pml_ob1_use_all_rdma_busy_min, checked by tests/ucx/run.sh); its Open
# MPI jobs here turn that rule off, so that coop carries their intra-node
# rendezvous from 1 MiB
ob1_pairs=(--mca pml_ob1_use_all_rdma_busy_min 0)
# intra_copied NAME NODE WHO GOT LOG: WHO copied GOT bytes on NODE; that
# must be NODE's intra-node rendezvous bytes in LOG and none of its
# inter-node ones (ok/nok of tests/ucx/report.sh)
intra_copied() {
	local intra inter
	intra=$(pairs_bytes "$5" "$2" intra) inter=$(pairs_bytes "$5" "$2" inter)
	# Open MPI's ob1 under the wrapper reads messages under 1 MiB with
	# vader's CMA (pml_ob1_use_all_rdma_min): mpi_pairs' 64 KiB + 13 of
	# each pair (of 65549 + 1 MiB + 4 MiB + 7 + 16 MiB) is not coop's
	[[ $1 == *ob1* ]] && intra=$((intra - intra / 22085652 * 65549))
	# coop's connection probes read a few bytes; a rendezvous >= 64 KiB
	if (($4 >= intra && $4 < intra + 65536)); then
		ok "$1: $2: $3 copied its intra-node rendezvous bytes ($4 of $intra) and no inter-node ones"
	else
		nok "$1: $2: $3 copied $4 bytes, its intra-node rendezvous $intra (inter-node $inter)" "$5"
	fi
}
# pairs_bytes LOG NODE intra|inter: mpi_pairs' rendezvous bytes between
# NODE's ranks (intra) or from them to the other node's (inter)
pairs_bytes() {
	sed -n "s/^mpi_pairs: node $2: .* rendezvous \([0-9]*\) bytes, inter-node \([0-9]*\) bytes/\1 \2/p" "$1" |
		awk -v f="$3" '{ print f == "intra" ? $1 : $2 }'
}

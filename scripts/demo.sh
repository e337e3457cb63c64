#!/bin/bash
# scripts/demo.sh - `make demo`: the project's main job, shown.  Runs an
# unmodified MPI program (NetPIPE's ping-pong, Debian's netpipe-mpich2 and
# netpipe-openmpi) under each installed MPI, first on the MPI's own default
# path and then through coop (scripts/coopmpi-run), and prints a table of
# bandwidth per message size with the ratio, and which coopmpi provider
# carried the messages (kmod: the driver; shm: the fallback without it).
#   DEMO_SIZES   message sizes in bytes (default 65536 1048576 4194304)
#   DEMO_ROUNDS  runs of each (default 5; the median is shown)
# Each run is NetPIPE on one size (-l S -u S -p 0), 2 ranks bound to cores.
set -euo pipefail
cd "$(dirname "$0")/.."
read -ra sizes <<<"${DEMO_SIZES:-65536 1048576 4194304}"
rounds=${DEMO_ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# np LAUNCH... : Mbps of one NetPIPE run (its output file's last line)
np() {
	"$@" -p 0 -o "$tmp/np.out" >"$tmp/np.log" 2>&1 || {
		sed 's/^/  | /' "$tmp/np.log" | tail -n 15 >&2
		echo "demo: failed: $*" >&2
		exit 1
	}
	awk 'END { print $2 }' "$tmp/np.out"
}
size_text() {
	if (($1 % 1048576 == 0)); then echo "$(($1 >> 20)) MiB"
	elif (($1 % 1024 == 0)); then echo "$(($1 >> 10)) KiB"
	else echo "$1 B"; fi
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run MPI default|coop SIZE: Mbps of NetPIPE through that path
run() {
	local ompi=(--allow-run-as-root --oversubscribe -np 2 --bind-to core)
	case $1:$2 in
	mpich:default) np mpirun.mpich -np 2 -bind-to core NPmpich2 -l "$3" -u "$3" ;;
	mpich:coop) np scripts/coopmpi-run mpirun.mpich -np 2 -bind-to core \
		-genv COOP_VERBOSE 1 NPmpich2 -l "$3" -u "$3" ;;
	openmpi:default) np mpirun.openmpi "${ompi[@]}" NPopenmpi -l "$3" -u "$3" ;;
	openmpi:coop) np scripts/coopmpi-run mpirun.openmpi "${ompi[@]}" \
		-x COOP_VERBOSE=1 NPopenmpi -l "$3" -u "$3" ;;
	esac
}

echo "NetPIPE ping-pong, 2 ranks; default: MPICH over UCX's shared memory, Open MPI"
echo "ob1 + vader (CMA); coop: the same programs through coopmpi-run"
printf '%-8s %9s %14s %14s %7s\n' MPI size "default Mbps" "coop Mbps" ratio
for mpi in mpich openmpi; do
	command -v "mpirun.$mpi" >/dev/null || continue
	for s in "${sizes[@]}"; do
		d=() c=()
		for ((r = 0; r < rounds; r++)); do	# interleaved
			d+=("$(run "$mpi" default "$s")")
			c+=("$(run "$mpi" coop "$s")")
		done
		dm=$(median "${d[@]}") cm=$(median "${c[@]}")
		printf '%-8s %9s %14.0f %14.0f %7.2f\n' "$mpi" \
			"$(size_text "$s")" "$dm" "$cm" \
			"$(awk -v a="$cm" -v b="$dm" 'BEGIN { print a / b }')"
	done
	provider=$(grep -om1 'provider [a-z]*' "$tmp/np.log" || echo "provider ?")
	echo "$mpi: coop's copies ran on the ${provider#provider } provider"
done

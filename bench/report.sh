#!/usr/bin/env bash
# bench/report.sh [ROUNDS] - the numbers the issue asks for, per protocol:
#   8-byte one-way latency (pingpong) and windowed bandwidth at 1, 4 and
#   16 MiB (bw).  Each round launches every protocol once, in turn (so
#   background load hits all of them alike); the table shows the median
#   over ROUNDS (default 5) launches, each launch itself reporting the
#   median of its repeats.  Ranks are bound to CPUs (cooprun default).
set -eu
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib/stats.sh
. bench/lib/stats.sh	# raw_median
rounds=${1:-5}
protos="rget rput rtr coop auto"
make -s -C bench >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for ((i = 0; i < rounds; i++)); do
	for p in $protos; do
		COOP_RNDV=$p scripts/cooprun -n 2 -t 300 bench/pingpong -r 5 \
			-i 10000 8 >>"$tmp/lat.$p"
		COOP_RNDV=$p scripts/cooprun -n 2 -t 300 bench/bw -r 5 \
			1m 4m 16m >>"$tmp/bw.$p"
	done
done
printf '%-6s %10s %12s %12s %12s\n' proto "lat8B(us)" "bw1M(MB/s)" \
	"bw4M(MB/s)" "bw16M(MB/s)"
for p in $protos; do
	printf '%-6s %10s %12s %12s %12s\n' "$p" "$(raw_median "$tmp/lat.$p" 8)" \
		"$(raw_median "$tmp/bw.$p" 1048576)" "$(raw_median "$tmp/bw.$p" 4194304)" \
		"$(raw_median "$tmp/bw.$p" 16777216)"
done

#!/usr/bin/env bash
# bench/phases.sh [ROUNDS] [phases options] - [Marathe]'s synthetic
# program (bench/bin/phases) under every static rendezvous protocol it
# is about (rget, rput, precopy, postcopy) and under COOP_RNDV=profile,
# ROUNDS times each (default 3, interleaved), natively on 2 ranks.
# Prints per phase the median over rounds of each protocol's time (us),
# then profile / the best static protocol per phase and profile / each
# static protocol over the three phases together.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
make -s -C bench -f Makefile.suite bin/phases
protos=(rget rput precopy postcopy profile)
declare -A t
for ((r = 1; r <= rounds; r++)); do
	for p in "${protos[@]}"; do
		out=$(COOP_RNDV=$p scripts/cooprun -n 2 bench/bin/phases "$@")
		while read -r ph us; do
			t[$p,$ph]+="$us "
		done < <(grep -v '^#' <<<"$out")
	done
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '%-6s' phase
printf ' %10s' "${protos[@]}"
printf '  profile/best static\n'
for ph in 1 2 3 0; do
	printf '%-6s' "$([[ $ph == 0 ]] && echo all || echo "$ph")"
	best=
	for p in "${protos[@]}"; do
		m=$(med "${t[$p,$ph]}")
		printf ' %10.1f' "$m"
		[[ $p == profile ]] && prof=$m && continue
		[[ -z $best ]] || awk -v a="$m" -v b="$best" 'BEGIN { exit !(a < b) }' && best=$m
	done
	awk -v a="$prof" -v b="$best" 'BEGIN { printf "  %.3f\n", a / b }'
done
echo "all phases, profile / each static:"
for p in rget rput precopy postcopy; do
	awk -v a="$(med "${t[profile,0]}")" -v b="$(med "${t[$p,0]}")" -v p="$p" \
		'BEGIN { printf "  %-8s %.3f\n", p, a / b }'
done

#!/usr/bin/env bash
# bench/neighbor.sh [ROUNDS] - neighbourhood alltoall on the same graphs:
# libcoopmpi's coop_neighbor_alltoall (bench/bin/neighbor) next to Open
# MPI's and MPICH's MPI_Neighbor_alltoall (bench/bin/mpi_neighbor.openmpi,
# .mpich).  coop runs twice: as the MPIs do (no hints, blocking calls:
# series coopmpi, column "coop") and with the paper's persistence (every
# hint, a persistent request per size, so small blocks go through static
# slots: series coopstatic, column "static").  Per rank count, graph and
# round the four run in turn (so background load hits them alike), each
# round from fresh copies of the programs (see fresh_copies); every
# value is the median over ROUNDS (default 1) of a run's "max over ranks
# of the mean us per call".  Prints one table per graph: the latencies,
# coop's and static's ratios to ompi and mpich, and whether the data
# checked out; writes bench/results/neighbor/ (CSV per graph and rank
# count, .notes, raw/, line.csv, run-info, summary.md).
#
# Before each graph's runs of a round it measures a cache line's one-way
# trip between CPUs 0 and 1 (bench/bin/limits -m line, line.csv): the
# least a call that waits for another rank's data can take.  On a
# virtual machine the trip changes with where the host runs the virtual
# CPUs (here 0.07 us in one minute and 0.30 in another), and every small
# cell with it; the tables give its median and range per graph.
#
# Environment (defaults in brackets):
#   NBR_GRAPHS     graphs of bench/nbr_graph.h [er:0.5 stencil2d stencil4d hotspot]
#   NBR_SIZES      block sizes [8 64 1k 64k 1m]
#   NBR_RANKS      rank counts [nproc, 2 x nproc, 8; duplicates dropped]
#   NBR_ITERS      timed calls per size [paced: about 50 ms, at least
#                  500-20 by size; nbr_pace_next() in bench/nbr_graph.h]
#   NBR_TOUCH      1: every program stores into its send blocks' lines
#                  before each call (--touch), as an application that
#                  computes them between calls [0: untouched, as OSU's]
#   NBR_COOP_ARGS  more options of the coopmpi series' bench/bin/neighbor
#                  [none: no hints, blocking calls, as the MPIs' runs]
#   NBR_TIMEOUT    seconds per run [600]
#   NBR_OUT        results directory [bench/results/neighbor]
#   COOP_PROVIDER [shm], COOP_PROGRESS [manual], COOP_RNDV [auto]: coop's
#                  settings, as the suite's coopmpi-auto series
#
# Every program binds rank i to CPU i mod nproc (cooprun -b, Open MPI
# --bind-to core:overload-allowed, MPICH -bind-to core); with more ranks
# than CPUs they share the CPUs.  Open MPI runs as the suite's "openmpi"
# series (bench/lib/mpi.sh ompi()): ob1 with the vader BTL and CMA single
# copies; MPICH as its "mpich" series: Debian's default device (ch4:ucx).
#
# Exit status 1 when a run failed (status, time limit, missing lines) or
# coop delivered wrong data; wrong data of an MPI is flagged in the
# tables but does not fail the script (see bench/README).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib/stats.sh
. bench/lib/stats.sh	# med, ratio, human, fmt, awk_median

usage() {
	echo "usage: bench/neighbor.sh [ROUNDS]" >&2
	exit 2
}

rounds=${1:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || usage
out=${NBR_OUT:-bench/results/neighbor}
tmo=${NBR_TIMEOUT:-600}
[[ $tmo =~ ^[1-9][0-9]*$ ]] || usage
ncpu=$(nproc 2>/dev/null || echo 1)
read -r -a graphs <<<"${NBR_GRAPHS:-er:0.5 stencil2d stencil4d hotspot}"
read -r -a sizes <<<"${NBR_SIZES:-8 64 1k 64k 1m}"
read -r -a coop_args <<<"${NBR_COOP_ARGS:-}"
common_args=()	# options of all four programs
[[ -n ${NBR_ITERS:-} ]] && common_args=(--iters "$NBR_ITERS")
[[ ${NBR_TOUCH:-0} == 1 ]] && common_args+=(--touch)
ranks=()
for n in ${NBR_RANKS:-$ncpu $((2 * ncpu)) 8}; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || usage
	[[ " ${ranks[*]} " == *" $n "* ]] || ranks+=("$n")
done
export COOP_PROVIDER=${COOP_PROVIDER:-shm} COOP_PROGRESS=${COOP_PROGRESS:-manual}
export COOP_RNDV=${COOP_RNDV:-auto}

# bytes SIZE: 1k -> 1024, 1m -> 1048576 (as the programs parse them)
bytes() {
	local s=${1,,}
	case $s in
	*k) echo $((${s%k} << 10)) ;;
	*m) echo $((${s%m} << 20)) ;;
	*) echo $((s)) ;;
	esac
}
size_bytes=()
for s in "${sizes[@]}"; do size_bytes+=("$(bytes "$s")"); done

# ------------------------------------------------------------ runners
# NAME N ARGS...: N ranks of the program with ARGS
coopmpi() {
	local n=$1
	shift
	scripts/cooprun -n "$n" -b -t "$tmo" "$bindir/neighbor" "$@" "${coop_args[@]}"
}

# coop with the paper's persistence (every hint: exact sizes, static
# buffers - so small blocks go through static slots -, a persistent
# request per size)
coopstatic() {
	local n=$1
	shift
	scripts/cooprun -n "$n" -b -t "$tmo" "$bindir/neighbor" "$@" --hints all --persistent
}

openmpi() {
	local n=$1
	shift
	timeout -k 5 "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe -np "$n" \
		--bind-to core:overload-allowed --mca pml ob1 --mca btl self,vader \
		--mca btl_vader_single_copy_mechanism cma \
		"$bindir/mpi_neighbor.openmpi" "$@"
}

mpich() {
	local n=$1
	shift
	timeout -k 5 "$tmo" mpirun.mpich -np "$n" -bind-to core "$bindir/mpi_neighbor.mpich" "$@"
}

# ------------------------------------------------------------ build
have() { command -v "$1" >/dev/null 2>&1; }
series=(coopmpi coopstatic) skipped=()
targets=(bin/neighbor bin/limits)
if have mpicc.openmpi && have mpirun.openmpi; then
	series+=(openmpi) targets+=(bin/mpi_neighbor.openmpi)
else
	skipped+=("Open MPI (mpicc.openmpi/mpirun.openmpi not installed: scripts/deps.sh)")
fi
if have mpicc.mpich && have mpirun.mpich; then
	series+=(mpich) targets+=(bin/mpi_neighbor.mpich)
else
	skipped+=("MPICH (mpicc.mpich/mpirun.mpich not installed: scripts/deps.sh)")
fi
make -s -C bench -f Makefile.suite "${targets[@]}"

rm -rf "$out"
mkdir -p "$out/raw"

# Each round runs fresh copies of the programs: a program's speed at a
# tenth of a microsecond per call depends on where its file's pages
# lie in memory (one file of bench/bin/neighbor ran the one edge's plain
# 8 B calls in 0.17 us, a byte-identical copy in 0.11, and the file
# itself in 0.115 once the page cache was dropped), so rounds of one
# file would all share its luck.
copies=$(mktemp -d)
trap 'rm -rf "$copies"' EXIT
fresh_copies() {
	bindir=$copies/r$1
	mkdir -p "$bindir"
	for t in "${targets[@]}"; do cp "bench/$t" "$bindir/"; done
}

# ------------------------------------------------------------ running
# gname GRAPH: the graph's part of file names (er:0.5 -> er0.5)
gname() {
	echo "${1//:/}"
}

failures=() start=$SECONDS
total=$((rounds * ${#ranks[@]} * ${#graphs[@]} * ${#series[@]})) k=0

# run ROUND N GRAPH SERIES: one run, checked and appended to the CSV
run() {
	local r=$1 n=$2 g=$3 s=$4 csv raw rc=0 t0=$SECONDS why=""
	csv=$(gname "$g")_n$n
	raw=$out/raw/${csv}_${s}_r$r
	k=$((k + 1))
	printf 'neighbor: [%d/%d] %-10s n=%-3d %-8s ' "$k" "$total" "$g" "$n" "$s" >&2
	"$s" "$n" --graph "$g" "${common_args[@]}" "${sizes[@]}" >"$raw.out" 2>"$raw.err" || rc=$?
	# exit status 1 with every line printed: blocks were wrong (column bad)
	if ! awk -v n="${#sizes[@]}" '!/^#/ && NF == 4 { c++ } END { exit c != n }' "$raw.out"; then
		why="exit status $rc, $(grep -cv '^#' "$raw.out") of ${#sizes[@]} sizes printed"
	elif ((rc != 0 && rc != 1)); then
		why="exit status $rc"
	fi
	if [[ -n $why ]]; then
		printf 'FAILED (%s, %ds)\n' "$why" $((SECONDS - t0)) >&2
		tail -n 5 "$raw.err" | sed 's/^/neighbor:      /' >&2
		failures+=("$g, $n ranks, $s, round $r: $why (see ${raw#"$out"/}.err)")
		return
	fi
	[[ -e $out/$csv.csv ]] || echo "series,round,size_bytes,latency_us,digest,bad" >"$out/$csv.csv"
	awk -v s="$s" -v r="$r" '!/^#/ { print s "," r "," $1 "," $2 "," $3 "," $4 }' \
		"$raw.out" >>"$out/$csv.csv"
	grep '^#' "$raw.out" | sed "s/^# */$s: /" >>"$out/$csv.notes" || true
	printf '%s (%ds)\n' "$( ((rc)) && echo "ok, WRONG DATA" || echo ok)" $((SECONDS - t0)) >&2
}

# line_trip ROUND N GRAPH: the trip before this graph's runs, to line.csv
line_trip() {
	local us
	us=$("$bindir/limits" -m line -r 3 | awk '$1 == "line" { print $2 }')
	[[ -e $out/line.csv ]] || echo "round,ranks,graph,trip_us" >"$out/line.csv"
	echo "$1,$2,$3,${us:-NA}" >>"$out/line.csv"
}

for ((r = 1; r <= rounds; r++)); do
	fresh_copies "$r"
	for n in "${ranks[@]}"; do
		for g in "${graphs[@]}"; do
			line_trip "$r" "$n" "$g"
			for s in "${series[@]}"; do
				run "$r" "$n" "$g" "$s"
			done
		done
	done
done

# ------------------------------------------------------------ report
# check CSV SIZE: "ok" if every run delivered the right blocks and every
# series the same digest, else what went wrong
check() {
	[[ -e $out/$1.csv ]] || {
		echo NA
		return
	}
	awk -F, -v z="$2" '
		FNR > 1 && $3 == z {
			if ($6 > 0 && !($1 in bad)) { bad[$1] = $6; nb++; lb = lb (nb > 1 ? ", " : "") $1 " " $6 " bad" }
			if (d == "") d = $5; else if ($5 != d) diff = 1
		}
		END {
			if (nb) print lb
			else if (diff) print "digests differ"
			else print "ok"
		}' "$out/$1.csv"
}

# trips N GRAPH: "0.071 us (0.070-0.301)", the line trips before its runs
trips() {
	awk -F, -v n="$1" -v g="$2" "$awk_median"'
		FNR > 1 && $2 == n && $3 == g && $4 != "NA" { v[++k] = $4 }
		END {	# median() sorts v: its ends are the range
			if (k) printf "%.3f us (%.3f-%.3f)\n", median(v, k), v[1], v[k]
			else print "NA"
		}' \
		"$out/line.csv" 2>/dev/null || echo NA
}

# shape CSV: "stencil2d:2x2, 16 edges" from the runs' notes
shape() {
	awk '$2 == "graph" { print $3 ", " $7 " edges"; exit }' "$out/$1.notes" 2>/dev/null || true
}

summary() {
	local g n z csv
	echo "# Neighbourhood alltoall: coop vs Open MPI vs MPICH"
	echo
	cat "$out/run-info"
	echo
	echo "us: per call, max over ranks of the mean; median over $rounds round(s)."
	echo "coop/ompi, coop/mpich: < 1 means coop is faster (median of per-round ratios)."
	echo "data: every rank's received blocks checked, and the three programs' digests compared."
	echo "a line's trip: one-way, CPU 0 to 1, before the graph's runs (bench/bin/limits -m line): median (range) over rounds."
	for g in "${graphs[@]}"; do
		echo
		echo "## $g"
		echo
		for n in "${ranks[@]}"; do
			echo "- $n ranks: $(shape "$(gname "$g")_n$n"); a line's trip $(trips "$n" "$g")"
		done
		echo
		echo "| ranks | size | coop us | static us | ompi us | mpich us | coop/ompi | coop/mpich | static/ompi | static/mpich | data |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
		for n in "${ranks[@]}"; do
			csv=$(gname "$g")_n$n
			for z in "${size_bytes[@]}"; do
				printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$(human "$z")" \
					"$(fmt "$(med "$csv" coopmpi "$z")" %.2f)" \
					"$(fmt "$(med "$csv" coopstatic "$z")" %.2f)" \
					"$(fmt "$(med "$csv" openmpi "$z")" %.2f)" \
					"$(fmt "$(med "$csv" mpich "$z")" %.2f)" \
					"$(ratio "$csv" coopmpi "$csv" openmpi "$z")" \
					"$(ratio "$csv" coopmpi "$csv" mpich "$z")" \
					"$(ratio "$csv" coopstatic "$csv" openmpi "$z")" \
					"$(ratio "$csv" coopstatic "$csv" mpich "$z")" \
					"$(check "$csv" "$z")"
			done
		done
	done
	if ((${#skipped[@]} + ${#failures[@]})); then
		echo
		echo "## Problems"
		echo
		for z in "${skipped[@]}"; do echo "- not run: $z"; done
		for z in "${failures[@]}"; do echo "- $z"; done
	fi
}

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
{
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ${cpu:-unknown CPU}, $ncpu CPUs, Linux $(uname -r), git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+changes'); \`bench/neighbor.sh $rounds\`, $((SECONDS - start)) s, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "    coop:    scripts/cooprun -b, COOP_PROVIDER=$COOP_PROVIDER COOP_PROGRESS=$COOP_PROGRESS COOP_RNDV=$COOP_RNDV, bench/bin/neighbor ${coop_args[*]:---hints none}"
	echo "    static:  the same, bench/bin/neighbor --hints all --persistent (static slots up to COOP_NEIGHBOR_SLOT_MAX, COOP_NEIGHBOR_RTR=${COOP_NEIGHBOR_RTR:-direct})"
	echo "    openmpi: mpirun.openmpi --bind-to core:overload-allowed --mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
	echo "    mpich:   mpirun.mpich -bind-to core (ch4:ucx)"
	echo "    graphs ${graphs[*]}; sizes ${sizes[*]}; ranks ${ranks[*]}; iterations ${NBR_ITERS:-paced}; send blocks touched before each call: ${NBR_TOUCH:-0}"
} >"$out/run-info"
summary | tee "$out/summary.md"
echo "neighbor: $out/summary.md" >&2

# coop's wrong data fails the run; the MPIs' is only reported
shopt -s nullglob
csvs=("$out"/*.csv)
coop_bad=$(awk -F, 'FNR > 1 && $1 ~ /^coop/ && $6 > 0 { n++ } END { print n + 0 }' \
	/dev/null "${csvs[@]}")
if ((${#failures[@]} || coop_bad)); then
	echo "neighbor: ${#failures[@]} failed run(s), $coop_bad coop size(s) with wrong data" >&2
	exit 1
fi

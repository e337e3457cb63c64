#!/usr/bin/env bash
# bench/run-suite.sh [full|quick|smoke|patterns|exchange|report] - the coopmpi benchmark suite.
#
#   full   (make bench) OSU-style latency, bandwidth, bidirectional
#          bandwidth, multi-pair bandwidth/message rate and overlap, 1 B ..
#          16 MiB, every rendezvous protocol (shm provider), the peers
#          (Open MPI, MPICH, ucx_perftest) and the machine's copy limits,
#          all on this machine in this run; per protocol and progress mode
#          (COOP_PROGRESS manual, thread, thread-sleep; the threads on their
#          rank's CPU and on the other rank's) the overlap at 1, 4 and
#          16 MiB, seed 002's origin/target test at 4 MiB, and the 8 B
#          latency with a progress thread; the exchanges (bibw, ring,
#          alltoall; 2 and 4 ranks) of each MPI against the same through
#          coop; then the kmod provider and the driver's DMA channel in
#          the QEMU VM (emulated: ratios only).  Writes
#          bench/results/full/: one CSV per benchmark, summary.md,
#          latency.png, bw.png, bibw.png, overlap.png.  ~11 min on 2
#          quiet cores (3 interleaved rounds + 2 VM boots).
#   quick  (make bench-quick) the headline numbers in ~4-5 min: the runs
#          behind each ratio are interleaved, round after round, and every
#          ratio is the median of its per-round ratios, so drift of the
#          machine cancels.  Ends with key=value lines on stdout.
#   smoke  (make check) every program once on tiny sizes, the VM ones too
#          (~20 s); fails only if a program fails or prints malformed
#          output.
#   patterns  (make bench-patterns) [Chakraborty18] Fig. 14-17 here:
#          bench/bin/patterns (scatter, gather: 3 and 4 ranks; reduce =
#          reduce-scatter + gather: 2 and 4 ranks; 256 KiB, 1 MiB, 4 MiB)
#          and bench/bin/stencil (4x1x1 and 3x2x1 ranks, 1 MiB) for
#          COOP_RNDV=rput, rget, coop, auto, shm provider, interleaved
#          round after round (BENCH_PATTERN_ROUNDS, default 15).  Ranks are
#          bound round-robin to the CPUs, so more ranks than CPUs share
#          them.  BENCH_VM=1 adds 4 ranks on 4 vCPUs in the VM, kmod
#          provider (emulated).  ~2 min.  summary.md: time per protocol,
#          auto vs the best static protocol, copies per rank.
#   exchange  full's exchange section alone, measured as bench-quick's
#          exchanges are (one launch per series and round, but 3 repeats
#          a launch): bibw, ring and alltoall of each MPI's default and
#          the same program through coop, 16 KiB .. 16 MiB, 2 ranks each
#          size 64 MiB a rank and repeat (4 ranks: as full),
#          BENCH_EXCHANGE_ROUNDS interleaved rounds (default 15, ~90 s
#          each).  summary.md: the tables and coop/default ratios of
#          full's exchange section.
#   report rewrite summary.md and the charts of bench/results/full from its
#          CSVs (after changing plot.gp, say); runs nothing.  With
#          BENCH_OUT=bench/results/patterns: that run's summary.md.
#
# Progress goes to stderr.  Environment:
#   BENCH_OUT=DIR      results directory (default bench/results/MODE)
#   BENCH_VM=0         skip the VM stage (full, smoke; patterns: 1 adds it)
#   BENCH_PEERS=0      skip Open MPI, MPICH and ucx_perftest
#   BENCH_ROUNDS=N     quick mode rounds (default 7)
#   BENCH_EXCHANGE_ROUNDS=N  rounds of the exchanges in quick and exchange
#                      modes (default 30 in quick, 15 in exchange)
#   BENCH_FULL_ROUNDS=N  full mode rounds (default 3)
#   BENCH_PATTERN_ROUNDS=N  patterns mode rounds (default 15)
#   BENCH_WAIT_MAX=S   before measuring (full, quick), wait up to S seconds
#                      (default 600) while another benchmark or VM runs on
#                      this machine; then measure anyway (noted in summary)
# Exit status: non-zero when a program failed or printed malformed output
# (a number is never a failure).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$(pwd -P)

# The suite's code: this file is the orchestration (modes, build, waiting,
# the plans, the main sequence); bench/lib/run.sh runs a step and ingests
# its output into a CSV, bench/lib/stats.sh takes the statistics and
# bench/lib/report.sh writes summary.md, the charts and the key=value lines.
# shellcheck source=bench/lib/run.sh
. bench/lib/run.sh
# shellcheck source=bench/lib/stats.sh
. bench/lib/stats.sh
# shellcheck source=bench/lib/report.sh
. bench/lib/report.sh

usage() {
	sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"
}

mode=${1:-full}
case $mode in
full | quick | smoke | patterns | exchange | report) ;;
-h | --help)
	usage
	exit 0
	;;
*)
	usage >&2
	exit 2
	;;
esac

out=${BENCH_OUT:-$repo/bench/results/${mode/report/full}}
start=$SECONDS
ncpu=$(nproc 2>/dev/null || echo 1)
tmo=300	# seconds a single run may take (smoke: 60)
[[ $mode == smoke ]] && tmo=60
vm_on=${BENCH_VM:-1}	# the VM stage: opt-in for patterns (slow under TCG)
[[ $mode == patterns ]] && vm_on=${BENCH_VM:-0}
[[ $mode == exchange ]] && vm_on=0	# natively only: no VM stage
failures=()
skipped=()
notes=()

say() { printf 'bench: %s\n' "$*" >&2; }
elapsed() { printf '%3ds' $((SECONDS - start)); }
have() { command -v "$1" >/dev/null 2>&1; }

# ------------------------------------------------------------ build
build() {
	say "building (lib, bench, bench/Makefile.suite$([[ $mode != quick && $vm_on != 0 ]] && echo ", kmod, tests/dmatest"))"
	make -s -C lib >/dev/null || return 1
	make -s -C bench >/dev/null || return 1
	make -s -C bench -f Makefile.suite >/dev/null || return 1
	if [[ $mode != quick && $vm_on != 0 ]]; then
		# kbuild's notes (BTF skipped) are not ours to show
		make -s -C kmod >/dev/null 2>&1 || {
			make -s -C kmod >&2
			return 1
		}
		make -s -C tests/dmatest >/dev/null 2>&1 || {
			make -s -C tests/dmatest >&2
			return 1
		}
	fi
}

# ------------------------------------------------------------ waiting
busy_pat='bench/(bw|pingpong|bin/)|qemu-system|mpirun|ucx_perftest|osu_'
wait_quiet() {
	local max=${BENCH_WAIT_MAX:-600} waited=0
	while pgrep -f "$busy_pat" >/dev/null 2>&1; do
		if ((waited >= max)); then
			say "machine still busy after ${waited}s: measuring anyway"
			notes+=("Another benchmark or VM was running on this machine during the run: numbers are disturbed.")
			return 0
		fi
		say "another benchmark or VM is running ($(pgrep -f "$busy_pat" | wc -l) processes): waiting 30 s (${waited}/${max}s)"
		sleep 30
		waited=$((waited + 30))
	done
}

# ------------------------------------------------------------ the plan
# Steps: name, csv, series, value columns, sizes (expected in the
# output, in order), round, command (eval'ed).  csv "@vm" = a VM stage,
# whose runs are ingested from its manifest.
S_NAME=() S_CSV=() S_SERIES=() S_COLS=() S_SIZES=() S_ROUND=() S_CMD=()
add() {
	local name=$1 csv=$2 series=$3 cols=$4 sizes=$5 round=$6
	shift 6
	S_NAME+=("$name") S_CSV+=("$csv") S_SERIES+=("$series") S_COLS+=("$cols")
	S_SIZES+=("$sizes") S_ROUND+=("$round") S_CMD+=("$(printf '%q ' "$@")")
}

protos="rget rput rtr coop auto"
# progress modes of the overlap runs (bench/bin/overlap -p MODE; -peercpu:
# the progress thread on the other rank's CPU, -c peer) and their sizes
ovl_modes="manual thread thread-sleep thread-peercpu thread-sleep-peercpu"
ovl_prog_sizes="1048576 4194304 16777216"
cur_round=1
peers=1
[[ ${BENCH_PEERS:-1} == 0 ]] && peers=0
have_ompi=0 have_mpich=0 have_ucx=0
((peers)) && have mpirun.openmpi && have mpicc.openmpi && have_ompi=1
((peers)) && have mpirun.mpich && have mpicc.mpich && have_mpich=1
((peers)) && have ucx_perftest && have_ucx=1
have_coop_ucx=0
((peers)) && [[ -r lib/ucx/libuct_coop.so ]] && have_coop_ucx=1

# ranged KIND NAME CSV SERIES COLS CMD...: one step per size range (S 1 B
# .. 64 KiB, M 128 KiB .. 1 MiB, L 2 .. 16 MiB), each with the iteration
# count and repeats of KIND (lat, bw, bibw, mbw; exch: mpi_peer's ring and
# alltoall, one exchange an iteration; exch4: the same with 4 ranks, which
# on fewer CPUs wait for the scheduler at every exchange) for that range
# appended
# as "-i N -r R sizes" (ucx: "N sizes"), so that every series of a chart
# gets the very same iterations.  Round: $cur_round.
ranged() {
	local kind=$1 name=$2 csv=$3 series=$4 cols=$5 r it reps sizes
	shift 5
	for r in S M L; do
		case $r in
		S) sizes=$size_s ;;
		M) sizes=$size_m ;;
		L) sizes=$size_l ;;
		esac
		reps=3
		case $kind-$r in
		lat-S) it=2000 ;;
		lat-M) it=100 ;;
		lat-L) it=10 ;;
		exch-S) it=1000 ;;
		exch-M) it=200 ;;
		exch-L) it=40 ;;
		exch4-S) it=40 ;;
		exch4-M) it=20 ;;
		exch4-L) it=10 ;;
		*-S) it=20 ;;
		*-M) it=4 ;;
		bw-L) it=1 ;;
		*-L) it=1 reps=2 ;;
		esac
		if [[ $1 == ucx ]]; then
			# shellcheck disable=SC2086 # size lists split on purpose
			add "$name-$r-r$cur_round" "$csv" "$series" "$cols" "$sizes" "$cur_round" "$@" "$it" $sizes
		else
			# shellcheck disable=SC2086
			add "$name-$r-r$cur_round" "$csv" "$series" "$cols" "$sizes" "$cur_round" "$@" -i "$it" -r "$reps" $sizes
		fi
	done
}

# reverse_from I: reverse the order of steps I..end
reverse_from() {
	local a=$1 b=$((${#S_NAME[@]} - 1)) arr t
	while ((a < b)); do
		for arr in S_NAME S_CSV S_SERIES S_COLS S_SIZES S_ROUND S_CMD; do
			local -n ref=$arr
			t=${ref[a]}
			ref[a]=${ref[b]}
			ref[b]=$t
		done
		a=$((a + 1)) b=$((b - 1))
	done
}

size_s="" size_m="" size_l=""
for ((s = 1; s <= 16777216; s *= 2)); do
	if ((s <= 65536)); then
		size_s+="$s "
	elif ((s <= 1048576)); then
		size_m+="$s "
	else
		size_l+="$s "
	fi
done
size_s=${size_s% } size_m=${size_m% } size_l=${size_l% }

# plan_rounds N DEFAULT PLAN...: N rounds (DEFAULT if N is not a count;
# $cur_round) of the steps the PLAN functions add, every other round in
# reverse order
plan_rounds() {
	local rounds=$1 first plan
	[[ $rounds =~ ^[1-9][0-9]*$ ]] || rounds=$2
	shift 2
	for ((cur_round = 1; cur_round <= rounds; cur_round++)); do
		first=${#S_NAME[@]}
		for plan; do
			"$plan"
		done
		((cur_round % 2 == 0)) && reverse_from "$first"
	done
}

# full: BENCH_FULL_ROUNDS (default 3) rounds of every native series, every
# other round in reverse order; tables and charts take the median over
# rounds of each run's median over its repeats.  Then the VM stages.
plan_full() {
	plan_rounds "${BENCH_FULL_ROUNDS:-3}" 3 plan_full_round
	if [[ $vm_on != 0 ]]; then
		add vm-soft @vm soft "" "" 1 vm soft lib dma window stripe ucx
		add vm-hw @vm hw "" "" 1 vm hw dma stripe hca
	fi
}

# plan_full_round: round $cur_round of full's native series
plan_full_round() {
	local all="$size_s $size_m $size_l" p ser
	local ovl="16384 65536 131072 262144 524288 1048576 2097152 4194304 8388608 16777216"
	for p in memcpy1 memcpy2 pvr; do
		ser=${p/memcpy1/memcpy-1T}
		ser=${ser/memcpy2/memcpy-2T}
		ser=${ser/pvr/process_vm_readv}
		# shellcheck disable=SC2086 # size lists split on purpose
		add "limits-$p-r$cur_round" limits "$ser" 1 "$all" "$cur_round" \
			bench/bin/limits -m "$p" -r 3 $all
	done
	plan_full_osu
	for p in $protos; do
		ranged mbw "mbw_mr-$p" mbw_mr "coopmpi-$p" 2 coop "$p" bench/bin/mbw_mr
	done
	for p in $protos; do
		# shellcheck disable=SC2086
		add "overlap-$p-r$cur_round" overlap "coopmpi-$p" 4 "$ovl" "$cur_round" \
			coop "$p" bench/bin/overlap -r 3 $ovl
	done
	plan_full_progress
}

# plan_full_progress: round $cur_round of the progress modes: per protocol
# and mode, overlap at $ovl_prog_sizes (series coopmpi-PROTO-MODE) and,
# for the modes without -peercpu, seed 002's origin/target test at 4 MiB;
# the 8 B and 4 KiB latency of auto with a progress thread (manual: the
# latency CSV's coopmpi-auto).  The thread shares its rank's CPU
# (cooprun -b binds each rank to one) unless -peercpu.
plan_full_progress() {
	local p m
	local -a pm
	for p in $protos; do
		for m in $ovl_modes; do
			pm=(-p "${m%-peercpu}")
			[[ $m == *-peercpu ]] && pm+=(-c peer)
			# shellcheck disable=SC2086 # size lists split on purpose
			add "ovlp-$p-$m-r$cur_round" overlap_progress "coopmpi-$p-$m" 4 "$ovl_prog_sizes" "$cur_round" \
				coop "$p" bench/bin/overlap "${pm[@]}" -r 3 $ovl_prog_sizes
			[[ $m == *-peercpu ]] && continue
			add "ot-$p-$m-r$cur_round" origin_target "coopmpi-$p-$m" 11 4194304 "$cur_round" \
				coop "$p" bench/bin/overlap -t origin-target -p "$m" -r 3 4194304
		done
	done
	for m in thread thread-sleep; do
		add "lat-auto-$m-r$cur_round" latency_progress "coopmpi-auto-$m" 1 "8 4096" "$cur_round" \
			coopp "$m" auto bench/pingpong -i 2000 -r 3 8 4096
	done
}

# plan_full_osu: latency, bandwidth and bidirectional bandwidth of every
# protocol and peer, round $cur_round
plan_full_osu() {
	local p
	for p in $protos; do
		ranged lat "lat-$p" latency "coopmpi-$p" 1 coop "$p" bench/pingpong
	done
	((have_ompi)) && ranged lat lat-openmpi latency openmpi 1 ompi -V -t lat
	((have_mpich)) && ranged lat lat-mpich latency mpich 1 mpich -V -t lat
	((have_ucx)) && ranged lat lat-ucx latency ucx 1 ucx lat
	((have_ompi && have_coop_ucx)) &&
		ranged lat lat-openmpi-coop latency openmpi-ucxcoop 1 ompi_coop -V -t lat
	((have_ompi && have_coop_ucx)) &&
		ranged lat lat-openmpi-ucx latency openmpi-ucx 1 ompi_ucx -V -t lat
	((have_ompi && have_coop_ucx)) &&
		ranged lat lat-openmpi-coop-pml latency openmpi-ucxcoop-pml 1 ompi_coop_pml_ucx -V -t lat
	((have_mpich && have_coop_ucx)) &&
		ranged lat lat-mpich-coop latency mpich-ucxcoop 1 mpich_coop -V -t lat
	for p in $protos; do
		ranged bw "bw-$p" bw "coopmpi-$p" 1 coop "$p" bench/bw
	done
	ranged bw bw-coop-heap bw coopmpi-coop-heap 1 coop coop bench/bw -H
	((have_ompi)) && ranged bw bw-openmpi bw openmpi 1 ompi -t bw
	((have_mpich)) && ranged bw bw-mpich bw mpich 1 mpich -t bw
	((have_ucx)) && ranged bw bw-ucx bw ucx 1 ucx bw
	((have_ompi && have_coop_ucx)) &&
		ranged bw bw-openmpi-coop bw openmpi-ucxcoop 1 ompi_coop -t bw
	((have_ompi && have_coop_ucx)) &&
		ranged bw bw-openmpi-coop-pml bw openmpi-ucxcoop-pml 1 ompi_coop_pml_ucx -t bw
	((have_mpich && have_coop_ucx)) &&
		ranged bw bw-mpich-coop bw mpich-ucxcoop 1 mpich_coop -t bw
	for p in $protos; do
		ranged bibw "bibw-$p" bibw "coopmpi-$p" 1 coop "$p" bench/bin/bibw
	done
	((have_ompi)) && ranged bibw bibw-openmpi bibw openmpi 1 ompi -t bibw
	((have_mpich)) && ranged bibw bibw-mpich bibw mpich 1 mpich -t bibw
	plan_full_exchange
}

# plan_exchange: exchange mode, BENCH_EXCHANGE_ROUNDS rounds
plan_exchange() {
	plan_rounds "${BENCH_EXCHANGE_ROUNDS:-15}" 15 plan_exchange_round
}

# plan_exchange_round: exchange mode's round $cur_round: for every MPI path
# of exchange_peers, bibw, ring and alltoall with 2 ranks, each one launch
# of 64 MiB a rank and repeat at every size (as bench-quick's: their
# spread is from launch to launch), and full's 4-rank runs
plan_exchange_round() {
	local size_s="16384 32768 65536" sizes="16384 $exchange_sizes" series runner t
	local -a opts
	while read -r series runner; do
		for t in bibw ring alltoall; do
			opts=(-t "$t" -r 3 -b 64m)
			[[ $t == bibw ]] && opts+=(-w 16)
			# shellcheck disable=SC2086 # the size list splits on purpose
			add "$t-$series-r$cur_round" "$t" "$series" 1 "$sizes" "$cur_round" \
				"$runner" "${opts[@]}" $sizes
		done
		for t in ring alltoall; do
			ranged exch4 "$t-n4-$series" "${t}_n4" "$series" 1 np4 "$runner" -t "$t"
		done
	done < <(exchange_peers)
}

# The MPI peers of the exchange patterns: "series runner" per line, each
# MPI's default path first, then the same program through coop
exchange_peers() {
	((have_mpich)) && echo "mpich mpich"
	((have_mpich && have_coop_ucx)) && echo "mpich-ucxcoop mpich_coop"
	((have_ompi)) && echo "openmpi ompi"
	((have_ompi && have_coop_ucx)) && echo "openmpi-ucxcoop ompi_coop"
	((have_ompi && have_coop_ucx)) && echo "openmpi-ucxcoop-pml ompi_coop_pml_ucx"
	return 0
}

# plan_full_exchange: both ranks sending at once, 16 KiB .. 16 MiB, for
# every MPI path of exchange_peers: bibw (2 ranks, the coop series; the
# defaults are plan_full_osu's), ring and alltoall with 2 ranks (CSVs
# ring, alltoall) and with 4 on this machine's CPUs (ring_n4,
# alltoall_n4: oversubscribed when it has fewer, so reported apart)
plan_full_exchange() {
	# ranged's ranges, from 16 KiB (bash: these locals are what it reads)
	local size_s="16384 32768 65536" series runner t
	while read -r series runner; do
		[[ $series == *coop* ]] &&
			ranged bibw "bibw-$series" bibw "$series" 1 "$runner" -t bibw
		for t in ring alltoall; do
			ranged exch "$t-$series" "$t" "$series" 1 "$runner" -t "$t"
			ranged exch4 "$t-n4-$series" "${t}_n4" "$series" 1 np4 "$runner" -t "$t"
		done
	done < <(exchange_peers)
}

# plan_quick_lines: one quick round's runs but the exchanges, appended to
# the caller's names and lines
plan_quick_lines() {
	local m
	names+=(q-lat-coop) lines+=("latency coopmpi-auto 8 coop auto bench/pingpong -r 5 -i 10000 8")
	((have_ompi)) && names+=(q-lat-ompi) lines+=("latency openmpi 8 ompi -t lat -r 5 -i 10000 8")
	names+=(q-bw-coop) lines+=("bw coopmpi-coop 1048576,4194304 coop coop bench/bw -r 3 -i 10 1048576 4194304")
	names+=(q-bw-rget) lines+=("bw coopmpi-rget 1048576,4194304 coop rget bench/bw -r 3 -i 10 1048576 4194304")
	names+=(q-bw-heap) lines+=("bw coopmpi-coop-heap 1048576,4194304 coop coop bench/bw -H -r 3 -i 10 1048576 4194304")
	((have_ompi)) && names+=(q-bw-ompi) lines+=("bw openmpi 1048576,4194304 ompi -t bw -r 3 -i 10 1048576 4194304")
	((have_mpich)) && names+=(q-bw-mpich) lines+=("bw mpich 1048576,4194304 mpich -t bw -r 3 -i 10 1048576 4194304")
	if ((have_coop_ucx && have_ucx)); then
		names+=(q-bw-ucx q-bw-ucx-heap)
		lines+=("bw ucx 4194304 ucx bw 10 4194304" "bw ucx-coop-heap 4194304 ucx_heap bw 10 4194304")
	fi
	if ((have_coop_ucx)); then
		((have_ompi)) && names+=(q-bw-ompi-coop) lines+=("bw openmpi-ucxcoop 4194304 ompi_coop -t bw -r 3 -i 10 4194304")
		((have_mpich)) && names+=(q-bw-mpich-coop) lines+=("bw mpich-ucxcoop 4194304 mpich_coop -t bw -r 3 -i 10 4194304")
		((have_mpich)) && names+=(q-lat-mpich q-lat-mpich-coop) lines+=("latency mpich 8 mpich -t lat -r 5 -i 10000 8" "latency mpich-ucxcoop 8 mpich_coop -t lat -r 5 -i 10000 8")
		((have_ompi)) && names+=(q-lat-ompi-coop q-lat-ompi-ucx q-lat-ompi-coop-pml) lines+=("latency openmpi-ucxcoop 8 ompi_coop -t lat -r 5 -i 10000 8" "latency openmpi-ucx 8 ompi_ucx -t lat -r 5 -i 10000 8" "latency openmpi-ucxcoop-pml 8 ompi_coop_pml_ucx -t lat -r 5 -i 10000 8")
	fi
	names+=(q-memcpy2) lines+=("limits memcpy-2T 1048576 bench/bin/limits -m memcpy2 -r 5 1048576")
	# progress modes: RGET's receiver computing, 8 B latency
	for m in manual thread thread-sleep thread-peercpu; do
		names+=("q-ovl-rget-$m") lines+=("overlap_progress coopmpi-rget-$m 4194304 coop rget bench/bin/overlap -p ${m%-peercpu}$([[ $m == *-peercpu ]] && echo " -c peer") -r 3 -i 10 4194304")
	done
	names+=(q-lat-thread q-lat-thread-sleep)
	lines+=("latency_progress coopmpi-auto-thread 8 coopp thread auto bench/pingpong -r 5 -i 2000 8"
		"latency_progress coopmpi-auto-thread-sleep 8 coopp thread-sleep auto bench/pingpong -r 5 -i 2000 8")
}

plan_quick() {
	local r rounds=${BENCH_ROUNDS:-7} xrounds=${BENCH_EXCHANGE_ROUNDS:-30} i
	local -a names=() lines=()
	[[ $rounds =~ ^[1-9][0-9]*$ ]] || rounds=7
	[[ $xrounds =~ ^[1-9][0-9]*$ ]] || xrounds=30
	for ((r = 1; r <= (rounds > xrounds ? rounds : xrounds); r++)); do
		names=() lines=()
		((r <= rounds)) && plan_quick_lines
		((r <= xrounds && have_coop_ucx)) && plan_quick_exchange
		# every other round in reverse order: order effects cancel too
		for ((i = 0; i < ${#names[@]}; i++)); do
			local k=$i
			((r % 2 == 0)) && k=$((${#names[@]} - 1 - i))
			local csv series sizes cmd cols
			read -r csv series sizes cmd <<<"${lines[k]}"
			cols=${HDR[$csv]:-value}
			cols=${cols//[!,]/}
			# shellcheck disable=SC2086 # the command line splits on purpose
			add "${names[k]}-r$r" "$csv" "$series" $((${#cols} + 1)) "${sizes//,/ }" "$r" $cmd
		done
	done
}

# plan_quick_exchange: plan_quick's bibw and ring runs, each MPI's
# default and the same through coop (wrapper default), appended to its
# names and lines.  Each default runs twice a round (series NAME and
# NAME-again): the default against itself is the noise floor the coop
# ratios are read against.  Every size sends about 64 MiB a rank and
# repeat (-b; at least one iteration: bibw's window of 16 MiB messages
# is 256 MiB), so 64 KiB is measured about as long as 4 MiB.  One repeat
# a launch: the spread is from launch to launch (repeats within one
# agree to a few per cent), so the time goes to more launches.
plan_quick_exchange() {
	# the sizes of the keys (bench/lib/report.sh), comma-separated
	local z=${exchange_sizes// /,} series runner t opts again s
	while read -r series runner; do
		[[ $series == *-pml ]] && continue
		again=
		[[ $series == *-* ]] || again=$series-again
		for t in bibw ring; do
			opts="-t $t -r 1 -b 64m"
			[[ $t == bibw ]] && opts+=" -w 16"
			for s in $series $again; do
				names+=("q-$t-$s") lines+=("$t $s $z $runner $opts ${z//,/ }")
			done
		done
	done < <(exchange_peers)
}

# The patterns mode's runs, one a line: name|ranks|csv|value columns|sizes
# (the first output column: stencil prints the rank count)|command.
pattern_sizes="262144 1048576 4194304"
pattern_runs() {
	local n pat
	for n in 3 4; do
		for pat in scatter gather; do
			echo "$pat-n$n|$n|${pat}_n$n|$((8 + n))|$pattern_sizes|bench/bin/patterns -p $pat $pattern_sizes"
		done
	done
	for n in 2 4; do
		echo "reduce-n$n|$n|reduce_n$n|$((8 + n))|$pattern_sizes|bench/bin/patterns -p reduce $pattern_sizes"
	done
	for n in 4x1x1 3x2x1; do
		echo "stencil-$n|$((${n//x/*}))|stencil_$n|14|$((${n//x/*}))|bench/bin/stencil -d $n -i 200"
	done
}

# pattern_hdr CSV: its value columns (patterns: per-rank copies at the end)
pattern_hdr() {
	local csv=$1 n r cols
	if [[ $csv == *stencil* ]]; then
		echo "iter_us,copies_max,copies_min,copies_ideal,copy_us_max,copy_us_min,copy_us_ideal,${rndv_cols// /,}"
		return
	fi
	n=${csv##*_n}
	cols="us,${rndv_cols// /,}"
	for ((r = 0; r < n; r++)); do cols+=",copies_r$r"; done
	echo "$cols"
}
rndv_cols="rget rput coop rtr dma stripe bounce"
pattern_protos="rput rget coop auto"

# patterns: BENCH_PATTERN_ROUNDS rounds; in each, every run of
# pattern_runs for every protocol, the protocols rotated one place per
# round and the runs in reverse order every other round, so drift of the
# machine hits all protocols alike.
# plan_patterns_round: patterns mode's round $cur_round, every run of
# pattern_runs per protocol, the protocols' order rotated each round
plan_patterns_round() {
	local name n csv cols sizes cmd k p
	local -a order ps
	read -ra order <<<"$pattern_protos"
	while IFS='|' read -r name n csv cols sizes cmd; do
		read -ra ps <<<"$cmd"
		HDR[$csv]=$(pattern_hdr "$csv")
		for ((k = 0; k < ${#order[@]}; k++)); do
			p=${order[(k + cur_round - 1) % ${#order[@]}]}
			add "$name-$p-r$cur_round" "$csv" "$p" "$cols" "$sizes" "$cur_round" \
				coopn "$n" "$p" "${ps[@]}"
		done
	done < <(pattern_runs)
}

plan_patterns() {
	local csv
	plan_rounds "${BENCH_PATTERN_ROUNDS:-15}" 15 plan_patterns_round
	if [[ $vm_on != 0 ]]; then
		vm_smp=4
		while IFS='|' read -r _ _ csv _; do
			HDR[vm_$csv]=$(pattern_hdr "$csv")
		done < <(pattern_runs)
		add vm-patterns @vm soft "" "" 1 vm soft patterns
	fi
}

plan_smoke() {
	local t="8 131072"
	# shellcheck disable=SC2086
	{
		add pingpong latency coopmpi-auto 1 "$t" 1 coop auto bench/pingpong -i 4 -r 1 $t
		add bw bw coopmpi-auto 1 "$t" 1 coop auto bench/bw -i 2 -r 1 -w 4 $t
		add bw-heap bw coopmpi-coop-heap 1 131072 1 coop coop bench/bw -H -i 2 -r 1 -w 4 131072
		add bibw bibw coopmpi-auto 1 "$t" 1 coop auto bench/bin/bibw -i 2 -r 1 -w 4 $t
		add mbw_mr mbw_mr coopmpi-auto 2 "$t" 1 coop auto bench/bin/mbw_mr -i 2 -r 1 -w 4 $t
		add overlap overlap coopmpi-auto 4 131072 1 coop auto bench/bin/overlap -i 2 -r 1 131072
		add overlap-thread overlap_progress coopmpi-auto-thread 4 131072 1 coop auto bench/bin/overlap -p thread -i 2 -r 1 131072
		add origin-target origin_target coopmpi-rget-thread-sleep 11 131072 1 coop rget bench/bin/overlap -t origin-target -p thread-sleep -i 2 -r 1 131072
		add pingpong-thread-sleep latency_progress coopmpi-auto-thread-sleep 1 8 1 coopp thread-sleep auto bench/pingpong -i 4 -r 1 8
		add patterns-scatter scatter_n3 coopmpi-auto 11 131072 1 coopn 3 auto bench/bin/patterns -p scatter -i 2 131072
		add patterns-gather gather_n3 coopmpi-auto 11 131072 1 coopn 3 auto bench/bin/patterns -p gather -i 2 131072
		add patterns-reduce reduce_n4 coopmpi-auto 12 262144 1 coopn 4 auto bench/bin/patterns -p reduce -i 2 262144
		add stencil stencil_3x2x1 coopmpi-auto 14 6 1 coopn 6 auto bench/bin/stencil -d 3x2x1 -m 131072 -i 4
		add limits-memcpy1 limits memcpy-1T 1 "$t" 1 bench/bin/limits -m memcpy1 -r 1 $t
		add limits-memcpy2 limits memcpy-2T 1 "$t" 1 bench/bin/limits -m memcpy2 -r 1 $t
		add limits-pvr limits process_vm_readv 1 "$t" 1 bench/bin/limits -m pvr -r 1 $t
	}
	plan_smoke_peers "$t"
	if [[ $vm_on != 0 ]]; then
		add vm-soft @vm soft "" "" 1 vm soft smoke-lib smoke-dma smoke-window
		add vm-hw @vm hw "" "" 1 vm hw smoke-dma
	fi
}

# plan_smoke_peers "SIZES": the peers' smoke runs
plan_smoke_peers() {
	local t=$1
	# shellcheck disable=SC2086
	{
		if ((have_ompi)); then
			add openmpi-lat latency openmpi 1 "$t" 1 ompi -V -t lat -i 4 -r 1 $t
			add openmpi-bw bw openmpi 1 "$t" 1 ompi -t bw -i 2 -r 1 -w 4 $t
			add openmpi-bibw bibw openmpi 1 "$t" 1 ompi -t bibw -i 2 -r 1 -w 4 $t
		fi
		if ((have_coop_ucx && have_ompi)); then
			add openmpi-coop-bw bw openmpi-ucxcoop 1 "$t" 1 ompi_coop -t bw -i 2 -r 1 -w 4 $t
			add openmpi-coop-ring ring openmpi-ucxcoop 1 "$t" 1 ompi_coop -t ring -b 1m -r 1 $t
		fi
		if ((have_coop_ucx && have_mpich)); then
			add mpich-coop-lat latency mpich-ucxcoop 1 "$t" 1 mpich_coop -V -t lat -i 4 -r 1 $t
			add mpich-coop-bw bw mpich-ucxcoop 1 "$t" 1 mpich_coop -t bw -i 2 -r 1 -w 4 $t
			add mpich-coop-ring ring mpich-ucxcoop 1 "$t" 1 mpich_coop -t ring -b 1m -r 1 $t
		fi
		if ((have_mpich)); then
			add mpich-lat latency mpich 1 "$t" 1 mpich -V -t lat -i 4 -r 1 $t
			add mpich-bw bw mpich 1 "$t" 1 mpich -t bw -i 2 -r 1 -w 4 $t
			add mpich-bibw bibw mpich 1 "$t" 1 mpich -t bibw -i 2 -r 1 -w 4 $t
		fi
		if ((have_ucx)); then
			add ucx-lat latency ucx 1 "$t" 1 ucx lat 4 $t
			add ucx-bw bw ucx 1 "$t" 1 ucx bw 2 $t
		fi
	}
}

# ------------------------------------------------------------ main
# fresh_out: the results directory, emptied of a previous run's results
fresh_out() {
	mkdir -p "$out" || exit 1
	rm -rf "$out/raw" "$out/plotdata" "$out"/vm-*
	rm -f "$out"/*.csv "$out"/*.notes "$out"/*.png "$out"/summary.md "$out"/keys.txt "$out"/run-info
	mkdir -p "$out/raw"
}

# note_skipped: what this run leaves out (said now, listed in summary.md)
note_skipped() {
	local s
	((peers)) || skipped+=("peers (BENCH_PEERS=0)")
	if ((peers)); then
		((have_ompi)) || skipped+=("Open MPI (mpirun.openmpi/mpicc.openmpi not installed: scripts/deps.sh)")
		((have_mpich)) || skipped+=("MPICH (mpirun.mpich/mpicc.mpich not installed: scripts/deps.sh)")
		((have_ucx)) || skipped+=("ucx_perftest (ucx-utils not installed: scripts/deps.sh)")
	fi
	[[ $vm_on == 0 && $mode != exchange ]] && skipped+=("VM stage (BENCH_VM=$vm_on)")
	for s in "${skipped[@]}"; do say "skipping $s"; done
}

if [[ $mode == report ]]; then
	report_rewrite
	exit
fi
fresh_out
if ! build; then
	say "build failed"
	exit 1
fi
note_skipped

"plan_$mode"
[[ $mode == smoke ]] || wait_quiet
say "$mode: ${#S_NAME[@]} runs, results in $out"
for i in "${!S_NAME[@]}"; do
	run_step "$i"
done

report_run
say "$mode: ${#S_NAME[@]} runs, ${#failures[@]} failed, $((SECONDS - start)) s; results in ${out#"$repo"/}"
for f in "${failures[@]}"; do say "  failed: $f"; done
[[ $mode == full || $mode == patterns || $mode == exchange ]] && say "summary: ${out#"$repo"/}/summary.md"
[[ $mode == quick ]] && print_keys
((${#failures[@]} == 0))

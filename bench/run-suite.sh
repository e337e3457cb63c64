#!/usr/bin/env bash
# bench/run-suite.sh [full|quick|smoke|patterns|report] - the coopmpi benchmark suite.
#
#   full   (make bench) OSU-style latency, bandwidth, bidirectional
#          bandwidth, multi-pair bandwidth/message rate and overlap, 1 B ..
#          16 MiB, every rendezvous protocol (shm provider), the peers
#          (Open MPI, MPICH, ucx_perftest) and the machine's copy limits,
#          all on this machine in this run; then the kmod provider and the
#          driver's DMA channel in the QEMU VM (emulated: ratios only).
#          Writes bench/results/full/: one CSV per benchmark, summary.md,
#          latency.png, bw.png, bibw.png, overlap.png.  ~5 min on 2 quiet
#          cores (3 interleaved rounds + 2 VM boots).
#   quick  (make bench-quick) the headline numbers in < 90 s: the runs
#          behind each ratio are interleaved, round after round, and every
#          ratio is the median of its per-round ratios, so drift of the
#          machine cancels.  Ends with key=value lines on stdout.
#   smoke  (make check) every program once on tiny sizes, the VM ones too
#          (~20 s); fails only if a program fails or prints malformed
#          output.
#   patterns  (make bench-patterns) seed 000 Fig. 14-17 on this machine:
#          bench/bin/patterns (scatter, gather: 3 and 4 ranks; reduce =
#          reduce-scatter + gather: 2 and 4 ranks; 256 KiB, 1 MiB, 4 MiB)
#          and bench/bin/stencil (4x1x1 and 3x2x1 ranks, 1 MiB) for
#          COOP_RNDV=rput, rget, coop, auto, shm provider, interleaved
#          round after round (BENCH_PATTERN_ROUNDS, default 15).  Ranks are
#          bound round-robin to the CPUs, so more ranks than CPUs share
#          them.  BENCH_VM=1 adds 4 ranks on 4 vCPUs in the VM, kmod
#          provider (emulated).  ~2 min.  summary.md: time per protocol,
#          auto vs the best static protocol, copies per rank.
#   report rewrite summary.md and the charts of bench/results/full from its
#          CSVs (after changing plot.gp, say); runs nothing.  With
#          BENCH_OUT=bench/results/patterns: that run's summary.md.
#
# Progress goes to stderr.  Environment:
#   BENCH_OUT=DIR      results directory (default bench/results/MODE)
#   BENCH_VM=0         skip the VM stage (full, smoke; patterns: 1 adds it)
#   BENCH_PEERS=0      skip Open MPI, MPICH and ucx_perftest
#   BENCH_ROUNDS=N     quick mode rounds (default 7)
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

usage() {
	sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"
}

mode=${1:-full}
case $mode in
full | quick | smoke | patterns | report) ;;
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
failures=()
skipped=()
notes=()

say() { printf 'bench: %s\n' "$*" >&2; }
elapsed() { printf '%3ds' $((SECONDS - start)); }

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

# ------------------------------------------------------------ runners
have() { command -v "$1" >/dev/null 2>&1; }

coop() { # coop PROTO PROG ARGS...: libcoopmpi program, 2 ranks, shm provider
	coopn 2 "$@"
}

# coopn N PROTO PROG ARGS...: the same with N ranks, bound round-robin to
# the CPUs even when N > CPUs (cooprun -b: every run shares the CPUs the
# same way, rather than however the scheduler moves busy-polling ranks)
coopn() {
	local n=$1 proto=$2
	shift 2
	env COOP_PROVIDER=shm COOP_RNDV="$proto" scripts/cooprun -n "$n" -b -t "$tmo" "$@"
}

ompi() { # ompi ARGS...: bench/bin/mpi_peer.openmpi, 2 ranks, vader BTL + CMA
	local bind=()
	((ncpu >= 2)) && bind=(--bind-to core)
	timeout -k 5 "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
		"${bind[@]}" --mca pml ob1 --mca btl self,vader \
		--mca btl_vader_single_copy_mechanism cma \
		bench/bin/mpi_peer.openmpi "$@"
}

mpich() { # mpich ARGS...: bench/bin/mpi_peer.mpich, 2 ranks
	local bind=()
	((ncpu >= 2)) && bind=(-bind-to core)
	timeout -k 5 "$tmo" mpirun.mpich -np 2 "${bind[@]}" bench/bin/mpi_peer.mpich "$@"
}

# ucx TEST ITERS SIZES...: ucx_perftest tag_lat/tag_bw, server and client
# on this machine (loopback TCP only for the bootstrap); prints "size us"
# (one-way latency: UCX halves the round trip) or "size MB/s" (UCX reports
# MiB/s: converted to MB/s = 1e6 B/s).  ITERS as -i of pingpong (lat) or
# bw (bw: windows of 64 outstanding sends, as osu_bw).  One run per size,
# a tenth of it as warm-up.  Size 0 is not supported by the tag tests.
ucx() {
	local test=$1 iters=$2 size n w port log sp line rc=0 k lat bw
	local sc=() cc=()
	shift 2
	((ncpu >= 2)) && sc=(-c 1) && cc=(-c 0)
	for size in "$@"; do
		n=$iters
		[[ $test == bw ]] && n=$((64 * iters))
		w=$((n / 10 + 1))
		port=$((20000 + RANDOM % 20000))
		log=$(mktemp)
		timeout -k 5 "$tmo" stdbuf -oL ucx_perftest -p "$port" "${sc[@]}" >"$log" 2>&1 &
		sp=$!
		for ((k = 0; k < 100; k++)); do
			grep -q 'Waiting for connection' "$log" && break
			sleep 0.05
		done
		line=$(timeout -k 5 "$tmo" ucx_perftest 127.0.0.1 -p "$port" "${cc[@]}" \
			-t "tag_$test" -s "$size" -n "$n" -w "$w" -O 64 -v 2>&1 | tail -n 1)
		wait "$sp" || rc=1
		rm -f "$log"
		# iterations,p50_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
		IFS=, read -r _ _ _ lat _ bw _ <<<"$line"
		if [[ $test == lat ]]; then
			echo "$size ${lat// /}"
		else
			awk -v s="$size" -v b="${bw// /}" 'BEGIN { printf "%s %.1f\n", s, b * 1.048576 }'
		fi
	done
	return $rc
}

# vm ENGINE MODE...: bench/vm-stage.sh MODE... in the VM with coopmpi.ko
# (ENGINE soft: dma=soft; hw: the test dmaengine provider + dma=hw), on
# $vm_smp virtual CPUs
vm_smp=2
vm() {
	local engine=$1 args
	shift
	mkdir -p "$out/vm-$engine"
	if [[ $engine == hw ]]; then
		args=(--extra-module tests/dmatest/coopmpi_dmatest.ko
			--module kmod/coopmpi.ko --modparams dma=hw)
	else
		args=(--module kmod/coopmpi.ko --modparams dma=soft)
	fi
	COOP_VM_TIMEOUT=${COOP_VM_TIMEOUT:-$((tmo * 3))} COOP_VM_QUIET=1 \
		scripts/vm/run --smp "$vm_smp" "${args[@]}" --rw "$out/vm-$engine" -- \
		env DMA_TAG="dma-$engine" bench/vm-stage.sh "$out/vm-$engine" "$@" 2>&1 |
		grep --line-buffered -v '^\[vm-dmesg\]'
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

declare -A HDR=(
	[latency]=latency_us [bw]=MBps [bibw]=MBps [limits]=MBps
	[mbw_mr]="MBps,messages_per_s"
	[overlap]="send_overlap_pct,recv_overlap_pct,send_pure_us,recv_pure_us"
	[vm_latency]=latency_us [vm_bw]=MBps [vm_bibw]=MBps [vm_stripe]=MBps
	[vm_mbw_mr]="MBps,messages_per_s"
	[vm_overlap]="send_overlap_pct,recv_overlap_pct,send_pure_us,recv_pure_us"
	[dma]="dma_MBps,copy_MBps,dma_overlap_pct,copy_overlap_pct"
)

protos="rget rput rtr coop auto"
cur_round=1
peers=1
[[ ${BENCH_PEERS:-1} == 0 ]] && peers=0
have_ompi=0 have_mpich=0 have_ucx=0
((peers)) && have mpirun.openmpi && have mpicc.openmpi && have_ompi=1
((peers)) && have mpirun.mpich && have mpicc.mpich && have_mpich=1
((peers)) && have ucx_perftest && have_ucx=1

# ranged KIND NAME CSV SERIES COLS CMD...: one step per size range (S 1 B
# .. 64 KiB, M 128 KiB .. 1 MiB, L 2 .. 16 MiB), each with the iteration
# count and repeats of KIND (lat, bw, bibw, mbw) for that range appended
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

# full: BENCH_FULL_ROUNDS (default 3) rounds of every native series, every
# other round in reverse order; tables and charts take the median over
# rounds of each run's median over its repeats.  Then the VM stages.
plan_full() {
	local all="$size_s $size_m $size_l" p ser first
	local ovl="16384 65536 131072 262144 524288 1048576 2097152 4194304 8388608 16777216"
	local rounds=${BENCH_FULL_ROUNDS:-3}
	[[ $rounds =~ ^[1-9][0-9]*$ ]] || rounds=3

	for ((cur_round = 1; cur_round <= rounds; cur_round++)); do
		first=${#S_NAME[@]}
		for p in memcpy1 memcpy2 pvr; do
			ser=${p/memcpy1/memcpy-1T}
			ser=${ser/memcpy2/memcpy-2T}
			ser=${ser/pvr/process_vm_readv}
			# shellcheck disable=SC2086 # size lists split on purpose
			add "limits-$p-r$cur_round" limits "$ser" 1 "$all" "$cur_round" \
				bench/bin/limits -m "$p" -r 3 $all
		done
		for p in $protos; do
			ranged lat "lat-$p" latency "coopmpi-$p" 1 coop "$p" bench/pingpong
		done
		((have_ompi)) && ranged lat lat-openmpi latency openmpi 1 ompi -V -t lat
		((have_mpich)) && ranged lat lat-mpich latency mpich 1 mpich -V -t lat
		((have_ucx)) && ranged lat lat-ucx latency ucx 1 ucx lat
		for p in $protos; do
			ranged bw "bw-$p" bw "coopmpi-$p" 1 coop "$p" bench/bw
		done
		((have_ompi)) && ranged bw bw-openmpi bw openmpi 1 ompi -t bw
		((have_mpich)) && ranged bw bw-mpich bw mpich 1 mpich -t bw
		((have_ucx)) && ranged bw bw-ucx bw ucx 1 ucx bw
		for p in $protos; do
			ranged bibw "bibw-$p" bibw "coopmpi-$p" 1 coop "$p" bench/bin/bibw
		done
		((have_ompi)) && ranged bibw bibw-openmpi bibw openmpi 1 ompi -t bibw
		((have_mpich)) && ranged bibw bibw-mpich bibw mpich 1 mpich -t bibw
		for p in $protos; do
			ranged mbw "mbw_mr-$p" mbw_mr "coopmpi-$p" 2 coop "$p" bench/bin/mbw_mr
		done
		for p in $protos; do
			# shellcheck disable=SC2086
			add "overlap-$p-r$cur_round" overlap "coopmpi-$p" 4 "$ovl" "$cur_round" \
				coop "$p" bench/bin/overlap -r 3 $ovl
		done
		((cur_round % 2 == 0)) && reverse_from "$first"
	done
	if [[ $vm_on != 0 ]]; then
		add vm-soft @vm soft "" "" 1 vm soft lib dma stripe
		add vm-hw @vm hw "" "" 1 vm hw dma stripe
	fi
}

plan_quick() {
	local r rounds=${BENCH_ROUNDS:-7} i
	local -a names=() lines=()
	[[ $rounds =~ ^[1-9][0-9]*$ ]] || rounds=7
	for ((r = 1; r <= rounds; r++)); do
		names=() lines=()
		names+=(q-lat-coop) lines+=("latency coopmpi-auto 8 coop auto bench/pingpong -r 5 -i 10000 8")
		((have_ompi)) && names+=(q-lat-ompi) lines+=("latency openmpi 8 ompi -t lat -r 5 -i 10000 8")
		names+=(q-bw-coop) lines+=("bw coopmpi-coop 1048576,4194304 coop coop bench/bw -r 3 -i 10 1048576 4194304")
		names+=(q-bw-rget) lines+=("bw coopmpi-rget 1048576,4194304 coop rget bench/bw -r 3 -i 10 1048576 4194304")
		((have_ompi)) && names+=(q-bw-ompi) lines+=("bw openmpi 1048576 ompi -t bw -r 3 -i 10 1048576")
		((have_mpich)) && names+=(q-bw-mpich) lines+=("bw mpich 1048576 mpich -t bw -r 3 -i 10 1048576")
		names+=(q-memcpy2) lines+=("limits memcpy-2T 1048576 bench/bin/limits -m memcpy2 -r 5 1048576")
		# every other round in reverse order: order effects cancel too
		for ((i = 0; i < ${#names[@]}; i++)); do
			local k=$i
			((r % 2 == 0)) && k=$((${#names[@]} - 1 - i))
			local csv series sizes cmd
			read -r csv series sizes cmd <<<"${lines[k]}"
			# shellcheck disable=SC2086 # the command line splits on purpose
			add "${names[k]}-r$r" "$csv" "$series" 1 "${sizes//,/ }" "$r" $cmd
		done
	done
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
plan_patterns() {
	local rounds=${BENCH_PATTERN_ROUNDS:-15} first name n csv cols sizes cmd k p
	local -a order ps
	read -ra order <<<"$pattern_protos"
	[[ $rounds =~ ^[1-9][0-9]*$ ]] || rounds=15
	for ((cur_round = 1; cur_round <= rounds; cur_round++)); do
		first=${#S_NAME[@]}
		while IFS='|' read -r name n csv cols sizes cmd; do
			read -ra ps <<<"$cmd"
			HDR[$csv]=$(pattern_hdr "$csv")
			for ((k = 0; k < ${#order[@]}; k++)); do
				p=${order[(k + cur_round - 1) % ${#order[@]}]}
				add "$name-$p-r$cur_round" "$csv" "$p" "$cols" "$sizes" "$cur_round" \
					coopn "$n" "$p" "${ps[@]}"
			done
		done < <(pattern_runs)
		((cur_round % 2 == 0)) && reverse_from "$first"
	done
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
		add bibw bibw coopmpi-auto 1 "$t" 1 coop auto bench/bin/bibw -i 2 -r 1 -w 4 $t
		add mbw_mr mbw_mr coopmpi-auto 2 "$t" 1 coop auto bench/bin/mbw_mr -i 2 -r 1 -w 4 $t
		add overlap overlap coopmpi-auto 4 131072 1 coop auto bench/bin/overlap -i 2 -r 1 131072
		add patterns-scatter scatter_n3 coopmpi-auto 11 131072 1 coopn 3 auto bench/bin/patterns -p scatter -i 2 131072
		add patterns-gather gather_n3 coopmpi-auto 11 131072 1 coopn 3 auto bench/bin/patterns -p gather -i 2 131072
		add patterns-reduce reduce_n4 coopmpi-auto 12 262144 1 coopn 4 auto bench/bin/patterns -p reduce -i 2 262144
		add stencil stencil_3x2x1 coopmpi-auto 14 6 1 coopn 6 auto bench/bin/stencil -d 3x2x1 -m 131072 -i 4
		add limits-memcpy1 limits memcpy-1T 1 "$t" 1 bench/bin/limits -m memcpy1 -r 1 $t
		add limits-memcpy2 limits memcpy-2T 1 "$t" 1 bench/bin/limits -m memcpy2 -r 1 $t
		add limits-pvr limits process_vm_readv 1 "$t" 1 bench/bin/limits -m pvr -r 1 $t
		if ((have_ompi)); then
			add openmpi-lat latency openmpi 1 "$t" 1 ompi -V -t lat -i 4 -r 1 $t
			add openmpi-bw bw openmpi 1 "$t" 1 ompi -t bw -i 2 -r 1 -w 4 $t
			add openmpi-bibw bibw openmpi 1 "$t" 1 ompi -t bibw -i 2 -r 1 -w 4 $t
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
	if [[ $vm_on != 0 ]]; then
		add vm-soft @vm soft "" "" 1 vm soft smoke-lib smoke-dma
		add vm-hw @vm hw "" "" 1 vm hw smoke-dma
	fi
}

# ------------------------------------------------------------ ingesting
# ingest RAW CSV SERIES COLS "SIZES" ROUND: check RAW (comment lines
# "#...", then one line per expected size: the size and COLS finite
# numbers) and append it to CSV.csv.  Comment lines go to CSV.notes.
ingest() {
	local raw=$1 csv=$2 series=$3 cols=$4 sizes=$5 round=$6 rows
	rows=$(awk -v cols="$cols" -v sizes="$sizes" -v series="$series" -v round="$round" '
		BEGIN { n = split(sizes, want, " "); num = "^-?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$" }
		/^#/ { next }
		/^[ \t]*$/ { next }
		{
			if (NF != cols + 1) { print "line " FNR ": " NF " fields, expected " cols + 1 > "/dev/stderr"; bad = 1; exit }
			for (i = 1; i <= NF; i++)
				if ($i !~ num) { print "line " FNR ": not a number: " $i > "/dev/stderr"; bad = 1; exit }
			got++
			if (got > n || $1 != want[got]) { print "line " FNR ": size " $1 ", expected " (got > n ? "no more lines" : want[got]) > "/dev/stderr"; bad = 1; exit }
			line = series "," round
			for (i = 1; i <= NF; i++) line = line "," $i
			print line
		}
		END {
			if (bad) exit 1
			if (got != n) { print got + 0 " sizes printed, expected " n > "/dev/stderr"; exit 1 }
		}' "$raw") || return 1
	if [[ ! -e $out/$csv.csv ]]; then
		echo "series,round,size_bytes,${HDR[$csv]:-value}" >"$out/$csv.csv"
	fi
	printf '%s\n' "$rows" >>"$out/$csv.csv"
	if grep -q '^#' "$raw"; then
		grep '^#' "$raw" | sed "s/^# */$series: /" >>"$out/$csv.notes"
	fi
}

# run_step I: run step I, check and ingest its output
run_step() {
	local i=$1 n=${#S_NAME[@]} name=${S_NAME[$1]} t0=$SECONDS rc=0 raw why
	raw=$out/raw/$name
	if [[ ${S_CSV[i]} == @vm ]]; then
		# another VM would halve this one's CPUs
		[[ $mode == smoke ]] || wait_quiet
		say "$(elapsed) [$((i + 1))/$n] VM stage, DMA engine ${S_SERIES[i]}: emulated (QEMU TCG) — ratios only"
		eval "${S_CMD[i]}" 2>&1 | tee "$raw.log" | sed -u 's/^/bench:      /' >&2
		rc=${PIPESTATUS[0]}
		ingest_vm "$out/vm-${S_SERIES[i]}" "$name" || rc=1
		if ((rc)); then
			failures+=("$name (VM stage: see $raw.log)")
			say "      $name FAILED ($((SECONDS - t0))s)"
		else
			say "      $name ok ($((SECONDS - t0))s)"
		fi
		return
	fi
	printf 'bench: %s [%d/%d] %-22s ' "$(elapsed)" $((i + 1)) "$n" "$name" >&2
	(eval "${S_CMD[i]}") >"$raw.out" 2>"$raw.err" || rc=$?
	if ((rc)); then
		why="exit status $rc"
	elif ! ingest "$raw.out" "${S_CSV[i]}" "${S_SERIES[i]}" "${S_COLS[i]}" \
		"${S_SIZES[i]}" "${S_ROUND[i]}" 2>"$raw.bad"; then
		why="malformed output: $(head -n 1 "$raw.bad")"
		rc=1
	fi
	if ((rc)); then
		printf 'FAILED (%s, %ds)\n' "$why" $((SECONDS - t0)) >&2
		tail -n 5 "$raw.err" | sed 's/^/bench:      /' >&2
		failures+=("$name: $why")
	else
		printf 'ok (%ds)\n' $((SECONDS - t0)) >&2
	fi
}

# ingest_vm DIR STAGE: the runs listed in DIR/manifest
ingest_vm() {
	local dir=$1 stage=$2 name csv series cols sizes rc=0
	[[ -s $dir/manifest ]] || {
		say "      $stage: the VM produced no results"
		return 1
	}
	while IFS='|' read -r name csv series cols sizes; do
		if ! ingest "$dir/$name.out" "$csv" "$series" "$cols" "$sizes" 1 2>"$dir/$name.bad"; then
			say "      $name: malformed output: $(head -n 1 "$dir/$name.bad")"
			failures+=("$name: malformed output")
			rc=1
		fi
	done <"$dir/manifest"
	return $rc
}

# ------------------------------------------------------------ results
# med CSV SERIES SIZE [COL]: median over rounds (COL: 1 = first value)
med() {
	[[ -e $out/$1.csv ]] || {
		echo NA
		return
	}
	awk -F, -v s="$2" -v z="$3" -v c="${4:-1}" '
		FNR > 1 && $1 == s && $3 == z { v[++n] = $(3 + c) }
		END {
			if (!n) { print "NA"; exit }
			for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j] + 0 < v[j - 1] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		}' "$out/$1.csv"
}

# ratio CSV_A SERIES_A CSV_B SERIES_B SIZE [COL_A COL_B]: median over
# rounds of A/B, A and B taken from the same round (value columns, default
# 1 and 1)
ratio() {
	[[ -e $out/$1.csv && -e $out/$3.csv ]] || {
		echo NA
		return
	}
	awk -F, -v sa="$2" -v sb="$4" -v z="$5" -v ca="${6:-1}" -v cb="${7:-1}" '
		FNR == 1 { f++; next }
		f == 1 && $1 == sa && $3 == z { a[$2] = $(3 + ca) }
		f == 2 && $1 == sb && $3 == z { b[$2] = $(3 + cb) }
		END {
			for (r in a) if ((r in b) && b[r] > 0) v[++n] = a[r] / b[r]
			if (!n) { print "NA"; exit }
			for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j] < v[j - 1]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			printf "%.3f\n", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		}' "$out/$1.csv" "$out/$3.csv"
}

# human SIZE: 8 B, 64 KiB, 1 MiB
human() {
	local s=$1
	if ((s >= 1048576 && s % 1048576 == 0)); then
		echo "$((s / 1048576)) MiB"
	elif ((s >= 1024 && s % 1024 == 0)); then
		echo "$((s / 1024)) KiB"
	else
		echo "$s B"
	fi
}

# table CSV COL FORMAT SIZES...: Markdown table, a row per series (in the
# order of the CSV), a column per size, medians over rounds
table() {
	local csv=$1 col=$2 fmt=$3 s hdr="| series |" sep="|---|"
	shift 3
	[[ -e $out/$csv.csv ]] || {
		echo "(no data)"
		return
	}
	for s in "$@"; do
		hdr+=" $(human "$s") |"
		sep+="---:|"
	done
	echo "$hdr"
	echo "$sep"
	awk -F, -v c="$col" -v fmt="$fmt" -v sizes="$*" '
		BEGIN { n = split(sizes, z, " ") }
		FNR > 1 {
			if (!($1 in seen)) { seen[$1] = 1; order[++ns] = $1 }
			k = $1 SUBSEP $3; cnt[k]++; val[k, cnt[k]] = $(3 + c)
		}
		END {
			for (i = 1; i <= ns; i++) {
				line = "| " order[i] " |"
				for (j = 1; j <= n; j++) {
					k = order[i] SUBSEP z[j]; m = cnt[k]
					if (!m) { line = line " |"; continue }
					for (a = 1; a <= m; a++) v[a] = val[k, a] + 0
					for (a = 2; a <= m; a++) for (b = a; b > 1 && v[b] < v[b - 1]; b--) { t = v[b]; v[b] = v[b - 1]; v[b - 1] = t }
					x = (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
					line = line " " sprintf(fmt, x) " |"
				}
				print line
			}
		}' "$out/$csv.csv"
}

# medians CSV SERIES COL: "size median" lines of value column COL of
# SERIES, median over rounds, sorted by size
medians() {
	awk -F, -v s="$2" -v c="$3" 'FNR > 1 && $1 == s { print $3, $(3 + c) }' "$out/$1.csv" |
		sort -n -k1,1 | awk '
		$1 != p { if (n) out(); p = $1; n = 0 }
		{ v[++n] = $2 }
		function out(  i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j] < v[j - 1]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			print p, (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		}
		END { if (n) out() }'
}

# plot NAME TITLE YLABEL CSV...: gnuplot chart NAME.png of value column 1
# of every series of the CSVs (medians over rounds)
plot() {
	local name=$1 title=$2 ylabel=$3 csv files="" titles="" ser dir k=0 sers
	shift 3
	have gnuplot || return 0
	dir=$out/plotdata/$name
	mkdir -p "$dir"
	for csv in "$@"; do
		[[ -e $out/$csv.csv ]] || continue
		mapfile -t sers < <(awk -F, 'FNR > 1 && !seen[$1]++ { print $1 }' "$out/$csv.csv")
		for ser in "${sers[@]}"; do
			k=$((k + 1))
			medians "$csv" "$ser" 1 >"$dir/$k.dat"
			files+="$dir/$k.dat "
			titles+="$ser "
		done
	done
	[[ -n $files ]] || return 0
	gnuplot -e "files='${files% }'; titles='${titles% }'; out='$out/$name.png'; ttl='$title'; ylab='$ylabel'" \
		bench/plot.gp 2>"$out/raw/plot-$name.err" ||
		say "gnuplot failed for $name (see $out/raw/plot-$name.err)"
}

machine() {
	local cpu kern
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
	kern=$(uname -r)
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ${cpu:-unknown CPU}, $ncpu CPUs, Linux $kern, git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+changes')"
}

summary_full() {
	local f=$out/summary.md key=(8 4096 65536 1048576 16777216) bws=(65536 1048576 4194304 16777216)
	{
		echo "# coopmpi benchmark results"
		echo
		local note
		if [[ ! -s $out/run-info ]]; then
			{
				echo "$(machine); \`bench/run-suite.sh full\`, $((SECONDS - start)) s."
				echo "OSU methodology: 2 ranks bound to CPUs 0 and 1; every value is the median over ${BENCH_FULL_ROUNDS:-3} interleaved rounds of a run's median over its repeats."
				for note in "${notes[@]}"; do echo; echo "**Note:** $note"; done
			} >"$out/run-info"
		fi
		cat "$out/run-info"
		echo
		echo "## Headline (1 MiB unless noted)"
		echo
		echo "| ratio | value |"
		echo "|---|---:|"
		echo "| COOP-p2p / RGET bandwidth | $(ratio bw coopmpi-coop bw coopmpi-rget 1048576) |"
		echo "| COOP-p2p / RGET bandwidth, 16 MiB | $(ratio bw coopmpi-coop bw coopmpi-rget 16777216) |"
		echo "| COOP-p2p / Open MPI bandwidth | $(ratio bw coopmpi-coop bw openmpi 1048576) |"
		echo "| COOP-p2p / MPICH bandwidth | $(ratio bw coopmpi-coop bw mpich 1048576) |"
		echo "| COOP-p2p / UCX bandwidth | $(ratio bw coopmpi-coop bw ucx 1048576) |"
		echo "| COOP-p2p bandwidth / memcpy 2 threads | $(ratio bw coopmpi-coop limits memcpy-2T 1048576) |"
		echo "| COOP-p2p bandwidth / process_vm_readv | $(ratio bw coopmpi-coop limits process_vm_readv 1048576) |"
		echo "| eager latency 8 B / Open MPI | $(ratio latency coopmpi-auto latency openmpi 8) |"
		echo "| eager latency 8 B / MPICH | $(ratio latency coopmpi-auto latency mpich 8) |"
		echo "| eager latency 8 B / UCX | $(ratio latency coopmpi-auto latency ucx 8) |"
		echo
		echo "Key numbers (as \`make bench-quick\` prints them, here from this single run):"
		echo
		echo '```'
		print_keys
		echo '```'
		echo
		echo "## One-way latency, us (osu_latency; lower is better)"
		echo
		table latency 1 "%.2f" "${key[@]}"
		echo
		echo "## Bandwidth, MB/s (osu_bw, window 64; limits: one copy)"
		echo
		table bw 1 "%.0f" "${bws[@]}"
		table limits 1 "%.0f" "${bws[@]}" | tail -n +3
		echo
		echo "## Bidirectional bandwidth, MB/s (osu_bibw, both directions)"
		echo
		table bibw 1 "%.0f" "${bws[@]}"
		echo
		echo "## Multi-pair bandwidth (MB/s) and message rate (messages/s), 1 pair (osu_mbw_mr)"
		echo
		table mbw_mr 1 "%.0f" 8 65536 1048576 16777216
		echo
		table mbw_mr 2 "%.0f" 1 8 64 1024
		echo
		echo "## Overlap: % of a nonblocking transfer a side can spend computing"
		echo
		echo "Sender side:"
		echo
		table overlap 1 "%.0f" 65536 262144 1048576 4194304 16777216
		echo
		echo "Receiver side:"
		echo
		table overlap 2 "%.0f" 65536 262144 1048576 4194304 16777216
		echo
		echo "## In the VM: emulated (QEMU TCG) — ratios only"
		echo
		echo "kmod = the driver's provider, shm = the user-space one, same VM and run."
		echo
		echo "Latency, us:"
		echo
		table vm_latency 1 "%.2f" 8 1048576
		echo
		echo "Bandwidth, MB/s:"
		echo
		table vm_bw 1 "%.0f" 262144 1048576
		echo
		echo "kmod / shm bandwidth at 1 MiB:"
		echo
		echo "| protocol | kmod/shm |"
		echo "|---|---:|"
		local p
		for p in $protos; do
			echo "| $p | $(ratio vm_bw "kmod-$p" vm_bw "shm-$p" 1048576) |"
		done
		echo
		echo "DMA channel (dma_bw: parent's memory -> region of another process):"
		echo
		echo "| engine | size | DMA MB/s | COPY MB/s | DMA/COPY | DMA overlap % | COPY overlap % |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		local e s
		for e in dma-soft dma-hw; do
			for s in 65536 1048576 4194304; do
				local d c
				d=$(med dma "$e" "$s" 1)
				c=$(med dma "$e" "$s" 2)
				[[ $d == NA ]] && continue
				echo "| $e | $(human "$s") | ${d%.*} | ${c%.*} | $(awk -v a="$d" -v b="$c" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') | $(med dma "$e" "$s" 3) | $(med dma "$e" "$s" 4) |"
			done
		done
		echo
		echo "Offload striping (bw, one message at a time, kmod): MB/s of the CPU alone (rput), CPU + engine (stripe), the engine alone (dma):"
		echo
		table vm_stripe 1 "%.0f" 1048576 4194304 16777216
		echo
		echo "| engine | size | stripe/rput | stripe/dma |"
		echo "|---|---:|---:|---:|"
		for e in soft hw; do
			for s in 1048576 16777216; do
				echo "| $e | $(human "$s") | $(ratio vm_stripe "$e-stripe" vm_stripe "$e-rput" "$s") | $(ratio vm_stripe "$e-stripe" vm_stripe "$e-dma" "$s") |"
			done
		done
		echo
		echo "## Peers"
		echo
		cat "$out"/*.notes 2>/dev/null | sort -u | sed 's/^/    /'
		echo "    openmpi: mpirun.openmpi --mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
		echo "    mpich:   mpirun.mpich (ch4:ucx)"
		echo "    ucx:     ucx_perftest -t tag_lat / tag_bw -O 64, $(ucx_info -v 2>/dev/null | awk '/Version/ { print "UCX " $3; exit }')"
		if ((${#failures[@]} + ${#skipped[@]})); then
			echo
			echo "## Problems"
			echo
			for note in "${failures[@]}"; do echo "- failed: $note"; done
			for note in "${skipped[@]}"; do echo "- skipped: $note"; done
		fi
		echo
		echo "Charts: latency.png, bw.png, bibw.png, overlap.png.  Raw output: raw/."
	} >"$f"
	plot latency "One-way latency (osu_latency)" "latency (us)" latency
	plot bw "Bandwidth (osu_bw, window 64) and copy limits" "MB/s" bw limits
	plot bibw "Bidirectional bandwidth (osu_bibw)" "MB/s" bibw
	plot_overlap
}

# overlap.png: sender (solid) and receiver (dashed) overlap per protocol,
# one colour per protocol
plot_overlap() {
	local dir=$out/plotdata/overlap files="" titles="" lcs="" dts="" ser k=0 n=0 c sers
	have gnuplot && [[ -e $out/overlap.csv ]] || return 0
	mkdir -p "$dir"
	mapfile -t sers < <(awk -F, 'FNR > 1 && !seen[$1]++ { print $1 }' "$out/overlap.csv")
	for ser in "${sers[@]}"; do
		n=$((n + 1))
		for c in 1 2; do
			k=$((k + 1))
			medians overlap "$ser" "$c" >"$dir/$k.dat"
			files+="$dir/$k.dat "
			titles+="$ser-$([[ $c == 1 ]] && echo sender || echo receiver) "
			lcs+="$n "
			dts+="$([[ $c == 1 ]] && echo 1 || echo 2) "
		done
	done
	gnuplot -e "files='${files% }'; titles='${titles% }'; lcs='${lcs% }'; dts='${dts% }'; out='$out/overlap.png'; ttl='Overlap: share of a nonblocking transfer the side spends computing (solid: sender, dashed: receiver)'; ylab='overlap (%)'; linear=1; xmin=12000" \
		bench/plot.gp 2>"$out/raw/plot-overlap.err" ||
		say "gnuplot failed for overlap (see $out/raw/plot-overlap.err)"
}

# ------------------------------------------------------------ patterns
# fmt X FORMAT: X printed with FORMAT, NA stays NA
fmt() {
	awk -v x="$1" -v f="$2" 'BEGIN { if (x == "NA") print x; else printf f "\n", x }'
}

# vs_best CSV SIZE: "RATIO (PROTO)": PROTO is the static protocol with the
# lowest median time, RATIO the median over rounds of auto's time / PROTO's
# in the same round.  (Not / the fastest static of each round: a minimum
# of three noisy times is biased low, and auto would look slower than the
# very protocol it chose.)
vs_best() {
	local csv=$1 z=$2 p v best="" bv=""
	for p in $pattern_protos; do
		[[ $p == auto ]] && continue
		v=$(med "$csv" "$p" "$z")
		[[ $v == NA ]] && continue
		if [[ -z $bv ]] || awk -v a="$v" -v b="$bv" 'BEGIN { exit !(a < b) }'; then
			bv=$v best=$p
		fi
	done
	if [[ -z $best ]]; then
		echo "NA (NA)"
		return
	fi
	echo "$(fmt "$(ratio "$csv" auto "$csv" "$best" "$z")" %.2f) ($best)"
}

# mix CSV SERIES SIZE FIRST: the protocols messages took (median messages
# per operation), from value columns FIRST.. (in the order of rndv_cols)
mix() {
	local csv=$1 ser=$2 z=$3 c=$4 p v acc=""
	for p in $rndv_cols; do
		v=$(med "$csv" "$ser" "$z" "$c")
		c=$((c + 1))
		awk -v x="$v" 'BEGIN { exit !(x != "NA" && x > 0.005) }' || continue
		acc+="${acc:+, }$p $(fmt "$v" %.2g)"
	done
	echo "${acc:--}"
}

# copies CSV SERIES SIZE N: medians of the per-rank copy columns, r0/r1/..
copies() {
	local csv=$1 ser=$2 z=$3 n=$4 r acc=""
	for ((r = 0; r < n; r++)); do
		acc+="${acc:+/}$(fmt "$(med "$csv" "$ser" "$z" $((9 + r)))" %.2f)"
	done
	echo "$acc"
}

# pattern_table CSV SIZES...: time per protocol and auto's ratios, then
# who copied
pattern_table() {
	local csv=$1 n z p row
	shift
	[[ -e $out/$csv.csv ]] || {
		echo "(no data)"
		return
	}
	n=${csv##*_n}
	echo "| size | rput us | rget us | coop us | auto us | auto / best static | auto / rput | auto / rget | auto chose (messages/op) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
	for z in "$@"; do
		row="| $(human "$z") |"
		for p in $pattern_protos; do
			row+=" $(fmt "$(med "$csv" "$p" "$z")" %.0f) |"
		done
		row+=" $(vs_best "$csv" "$z") | $(ratio "$csv" auto "$csv" rput "$z") |"
		row+=" $(ratio "$csv" auto "$csv" rget "$z") | $(mix "$csv" auto "$z" 2) |"
		echo "$row"
	done
	echo
	echo "Bytes each rank's CPU copied per operation, in units of the size, ranks 0 (root) .. $((n - 1)):"
	echo
	row="| protocol |" sep="|---|"
	for z in "$@"; do
		row+=" $(human "$z") |"
		sep+="---|"
	done
	echo "$row"
	echo "$sep"
	for p in $pattern_protos; do
		row="| $p |"
		for z in "$@"; do row+=" $(copies "$csv" "$p" "$z" "$n") |"; done
		echo "$row"
	done
}

# stencil_table CSV: per protocol, time per iteration and the copy balance
stencil_table() {
	local csv=$1 n p
	[[ -e $out/$csv.csv ]] || {
		echo "(no data)"
		return
	}
	n=$(awk -F, 'FNR == 2 { print $3; exit }' "$out/$csv.csv")
	echo "| protocol | us/iter | copies/iter max | min | max/min | ideal (mean) | copy us/iter max/min | messages/iter by protocol |"
	echo "|---|---:|---:|---:|---:|---:|---:|---|"
	for p in $pattern_protos; do
		echo "| $p | $(fmt "$(med "$csv" "$p" "$n")" %.0f) | $(fmt "$(med "$csv" "$p" "$n" 2)" %.2f) | $(fmt "$(med "$csv" "$p" "$n" 3)" %.2f) | $(ratio "$csv" "$p" "$csv" "$p" "$n" 2 3) | $(fmt "$(med "$csv" "$p" "$n" 4)" %.2f) | $(ratio "$csv" "$p" "$csv" "$p" "$n" 5 6) | $(mix "$csv" "$p" "$n" 8) |"
	done
	echo
	echo "auto / best static time: $(vs_best "$csv" "$n"); auto / rput: $(ratio "$csv" auto "$csv" rput "$n"); auto / rget: $(ratio "$csv" auto "$csv" rget "$n")."
}

summary_patterns() {
	local f=$out/summary.md note csv pre
	{
		echo "# coopmpi collective patterns and 3-D stencil (seed 000, Fig. 14-17)"
		echo
		if [[ ! -s $out/run-info ]]; then
			{
				echo "$(machine); \`bench/run-suite.sh patterns\`, ${BENCH_PATTERN_ROUNDS:-15} interleaved rounds, $((SECONDS - start)) s."
				echo "shm provider.  Every value is the median over rounds; a ratio is the median of per-round ratios."
				echo "Ranks are bound round-robin to the $ncpu CPUs (scripts/cooprun -b): with more ranks than CPUs, ranks share CPUs, so waiting ranks take CPU time from copying ones; the scale is this machine's, not the seed's."
				for note in "${notes[@]}"; do echo; echo "**Note:** $note"; done
			} >"$out/run-info"
		fi
		cat "$out/run-info"
		for pre in "" vm_; do
			[[ -n $pre ]] && {
				ls "$out"/vm_*.csv >/dev/null 2>&1 || continue
				echo
				echo "# In the VM: emulated (QEMU TCG), kmod provider, 4 ranks on 4 vCPUs — ratios only"
			}
			for csv in scatter_n3 scatter_n4 gather_n3 gather_n4 reduce_n2 reduce_n4; do
				[[ -e $out/$pre$csv.csv ]] || continue
				echo
				echo "## ${csv%_n*}, ${csv##*_n} ranks: time per operation (us), median over iterations of the slowest rank"
				echo
				if [[ -n $pre ]]; then
					pattern_table "$pre$csv" 262144 1048576
				else
					# shellcheck disable=SC2086 # the list splits on purpose
					pattern_table "$csv" $pattern_sizes
				fi
			done
			for csv in stencil_4x1x1 stencil_3x2x1; do
				[[ -e $out/$pre$csv.csv ]] || continue
				echo
				echo "## 3-D stencil, grid ${csv#stencil_}, non-periodic (copies: bytes a rank copied / message size)"
				echo
				stencil_table "$pre$csv"
			done
		done
		if ((${#failures[@]})); then
			echo
			echo "## Problems"
			echo
			for note in "${failures[@]}"; do echo "- failed: $note"; done
		fi
		echo
		echo "Raw output: raw/.  CSVs: one per pattern and rank count (series = protocol)."
	} >"$f"
}

keys_quick() {
	local f=$out/summary.md
	{
		echo "# coopmpi quick benchmark"
		echo
		echo "$(machine); \`bench/run-suite.sh quick\`, ${BENCH_ROUNDS:-7} interleaved rounds, medians."
		local note
		for note in "${notes[@]}"; do echo; echo "**Note:** $note"; done
		echo
		echo '```'
		print_keys
		echo '```'
	} >"$f"
	print_keys >"$out/keys.txt"
}

print_keys() {
	local M=1048576 F=4194304
	echo "eager_lat_8B_us=$(med latency coopmpi-auto 8)"
	echo "ompi_lat_8B_us=$(med latency openmpi 8)"
	echo "rget_bw_1MiB_MBps=$(med bw coopmpi-rget $M)"
	echo "coop_bw_1MiB_MBps=$(med bw coopmpi-coop $M)"
	echo "rget_bw_4MiB_MBps=$(med bw coopmpi-rget $F)"
	echo "coop_bw_4MiB_MBps=$(med bw coopmpi-coop $F)"
	echo "ompi_bw_1MiB_MBps=$(med bw openmpi $M)"
	echo "mpich_bw_1MiB_MBps=$(med bw mpich $M)"
	echo "memcpy2_bw_1MiB_MBps=$(med limits memcpy-2T $M)"
	echo "coop_vs_rget_bw_1MiB=$(ratio bw coopmpi-coop bw coopmpi-rget $M)"
	echo "coop_vs_rget_bw_4MiB=$(ratio bw coopmpi-coop bw coopmpi-rget $F)"
	echo "coop_vs_ompi_bw_1MiB=$(ratio bw coopmpi-coop bw openmpi $M)"
	echo "coop_vs_mpich_bw_1MiB=$(ratio bw coopmpi-coop bw mpich $M)"
	echo "coop_vs_memcpy2_bw_1MiB=$(ratio bw coopmpi-coop limits memcpy-2T $M)"
	echo "eager_lat_vs_ompi_8B=$(ratio latency coopmpi-auto latency openmpi 8)"
}

# ------------------------------------------------------------ main
if [[ $mode == report ]]; then
	mkdir -p "$out/raw"
	if [[ -e $out/bw.csv ]]; then
		summary_full
	elif [[ -e $out/scatter_n3.csv ]]; then
		summary_patterns	# BENCH_OUT=bench/results/patterns
	else
		say "no results in $out: run bench/run-suite.sh full (or patterns, with BENCH_OUT) first"
		exit 1
	fi
	say "report: ${out#"$repo"/}/summary.md and charts rewritten"
	exit 0
fi
mkdir -p "$out" || exit 1
rm -rf "$out/raw" "$out/plotdata" "$out"/vm-*
rm -f "$out"/*.csv "$out"/*.notes "$out"/*.png "$out"/summary.md "$out"/keys.txt "$out"/run-info
mkdir -p "$out/raw"

if ! build; then
	say "build failed"
	exit 1
fi
((peers)) || skipped+=("peers (BENCH_PEERS=0)")
if ((peers)); then
	((have_ompi)) || skipped+=("Open MPI (mpirun.openmpi/mpicc.openmpi not installed: scripts/deps.sh)")
	((have_mpich)) || skipped+=("MPICH (mpirun.mpich/mpicc.mpich not installed: scripts/deps.sh)")
	((have_ucx)) || skipped+=("ucx_perftest (ucx-utils not installed: scripts/deps.sh)")
fi
[[ $vm_on == 0 ]] && skipped+=("VM stage (BENCH_VM=$vm_on)")
for s in "${skipped[@]}"; do say "skipping $s"; done

"plan_$mode"
[[ $mode == smoke ]] || wait_quiet
say "$mode: ${#S_NAME[@]} runs, results in $out"
for i in "${!S_NAME[@]}"; do
	run_step "$i"
done

case $mode in
full) summary_full ;;
patterns) summary_patterns ;;
quick) keys_quick ;;
smoke) ;;
esac

total=$((${#S_NAME[@]}))
say "$mode: $total runs, ${#failures[@]} failed, $((SECONDS - start)) s; results in ${out#"$repo"/}"
for f in "${failures[@]}"; do say "  failed: $f"; done
[[ $mode == full || $mode == patterns ]] && say "summary: ${out#"$repo"/}/summary.md"
[[ $mode == quick ]] && print_keys
((${#failures[@]} == 0))

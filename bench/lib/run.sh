# shellcheck shell=bash disable=SC2154 # globals of bench/run-suite.sh
# bench/lib/run.sh - running the steps of bench/run-suite.sh's plan: the
# runners a step's command names (coop, coopn, ompi, mpich, ucx, vm), then
# checking each run's output and ingesting it into $out/CSV.csv.  Sourced by
# bench/run-suite.sh, whose globals it uses (out, mode, tmo, ncpu, the
# S_* step arrays, failures; say, elapsed, wait_quiet).

# ------------------------------------------------------------ runners
coop() { # coop PROTO PROG ARGS...: libcoopmpi program, 2 ranks, shm provider
	coopn 2 "$@"
}

# coopn N PROTO PROG ARGS...: the same with N ranks, bound round-robin to
# the CPUs even when N > CPUs (cooprun -b: every run shares the CPUs the
# same way, rather than however the scheduler moves busy-polling ranks).
# Manual progress unless coopp says otherwise (not the caller's
# COOP_PROGRESS: a series' name says its mode).
coopn() {
	local n=$1 proto=$2
	shift 2
	env COOP_PROVIDER=shm COOP_RNDV="$proto" COOP_PROGRESS="${coop_progress:-manual}" \
		scripts/cooprun -n "$n" -b -t "$tmo" "$@"
}

# coopp MODE PROTO PROG ARGS...: coop with COOP_PROGRESS=MODE (manual,
# thread, thread-sleep): the progress thread, for programs without -p.
# It inherits its rank's CPU binding (COOP_PROGRESS_CPU unset).
coopp() {
	local coop_progress=$1
	shift
	coop "$@"
}

# ompi, mpich, ompi_coop, mpich_coop: bench/lib/mpi.sh
# shellcheck source=bench/lib/mpi.sh
. bench/lib/mpi.sh

# ucx TEST ITERS SIZES...: ucx_perftest tag_lat/tag_bw, server and client
# on this machine (loopback TCP only for the bootstrap); prints "size us"
# (one-way latency: UCX halves the round trip) or "size MB/s" (UCX reports
# MiB/s: converted to MB/s = 1e6 B/s).  ITERS as -i of pingpong (lat) or
# bw (bw: windows of 64 outstanding sends, as osu_bw).  One run per size,
# a tenth of it as warm-up.  Size 0 is not supported by the tag tests.
ucx() {
	local test=$1 iters=$2 size rc=0
	shift 2
	for size in "$@"; do
		ucx_size "$test" "$iters" "$size" || rc=1
	done
	return $rc
}

# ucx_heap TEST ITERS SIZES...: ucx through coop alone (UCX_TLS=coop,self),
# ucx_perftest's buffers (ucp_mem_map ALLOCATE) from coop's memory domain:
# the library's shared heap, copied through windows
ucx_heap() {
	UCX_TLS=coop,self LD_PRELOAD="$PWD/lib/ucx/libuct_coop.so" \
		UCX_ALLOC_PRIO=md:coop,md:sysv,md:posix,huge,thp,mmap,heap \
		COOP_WARN_FALLBACK=0 ucx "$@"
}

# ucx_size TEST ITERS SIZE: one size of ucx
ucx_size() {
	local test=$1 n=$2 size=$3 w port log sp line rc=0 k lat bw
	local sc=() cc=()
	((ncpu >= 2)) && sc=(-c 1) && cc=(-c 0)
	[[ $test == bw ]] && n=$((64 * n))
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
	if [[ $engine == hw ]]; then	# + Soft-RoCE for mode hca
		mapfile -t args < <(scripts/vm/rxe-modules)
		args+=(--extra-module tests/dmatest/coopmpi_dmatest.ko
			--module kmod/coopmpi.ko --modparams dma=hw)
	else
		args=(--module kmod/coopmpi.ko --modparams dma=soft)
	fi
	COOP_VM_TIMEOUT=${COOP_VM_TIMEOUT:-$((tmo * 3))} COOP_VM_QUIET=1 \
		scripts/vm/run --smp "$vm_smp" "${args[@]}" --rw "$out/vm-$engine" -- \
		env DMA_TAG="dma-$engine" bench/vm-stage.sh "$out/vm-$engine" "$@" 2>&1 |
		grep --line-buffered -v '^\[vm-dmesg\]'
}

# ------------------------------------------------------------ ingesting
# HDR[CSV]: the value columns of CSV.csv (default: value); the patterns
# plan adds its CSVs
declare -A HDR=(
	[latency]=latency_us [bw]=MBps [bibw]=MBps [limits]=MBps
	[mbw_mr]="MBps,messages_per_s"
	[overlap]="send_overlap_pct,recv_overlap_pct,send_pure_us,recv_pure_us"
	[overlap_progress]="send_overlap_pct,recv_overlap_pct,send_pure_us,recv_pure_us"
	[origin_target]="T_us,s_comm_us,s_origin_comp_us,s_target_comp_us,s_target_wait_us,s_landed_pct,r_comm_us,r_origin_comp_us,r_target_comp_us,r_target_wait_us,r_landed_pct"
	[latency_progress]=latency_us
	[vm_latency]=latency_us [vm_bw]=MBps [vm_ucx_latency]=latency_us [vm_ucx_bw]=MBps [vm_bibw]=MBps [vm_stripe]=MBps
	[vm_mbw_mr]="MBps,messages_per_s"
	[vm_overlap]="send_overlap_pct,recv_overlap_pct,send_pure_us,recv_pure_us"
	[dma]="dma_MBps,copy_MBps,dma_overlap_pct,copy_overlap_pct"
	[window]="window_MBps,copy_MBps,cma_MBps"
)

# csv_rows RAW SERIES COLS "SIZES" ROUND: RAW's lines as CSV rows
# "SERIES,ROUND,size,value...", or the first problem on stderr and status
# 1.  RAW: comment lines "#...", then one line per expected size: the size
# and COLS finite numbers.
csv_rows() {
	awk -v series="$2" -v cols="$3" -v sizes="$4" -v round="$5" '
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
		}' "$1"
}

# ingest RAW CSV SERIES COLS "SIZES" ROUND: check RAW (csv_rows) and
# append it to CSV.csv.  Comment lines go to CSV.notes.
ingest() {
	local raw=$1 csv=$2 series=$3 rows
	rows=$(csv_rows "$raw" "$series" "$4" "$5" "$6") || return 1
	if [[ ! -e $out/$csv.csv ]]; then
		echo "series,round,size_bytes,${HDR[$csv]:-value}" >"$out/$csv.csv"
	fi
	printf '%s\n' "$rows" >>"$out/$csv.csv"
	if grep -q '^#' "$raw"; then
		grep '^#' "$raw" | sed "s/^# */$series: /" >>"$out/$csv.notes"
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

# ------------------------------------------------------------ steps
# run_step I: run step I, check and ingest its output
run_step() {
	local i=$1 n=${#S_NAME[@]} name=${S_NAME[$1]} t0=$SECONDS rc=0 raw why
	raw=$out/raw/$name
	if [[ ${S_CSV[i]} == @vm ]]; then
		run_vm_step "$i"
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

# run_vm_step I: step I, a VM stage: its runs are ingested from its manifest
run_vm_step() {
	local i=$1 n=${#S_NAME[@]} name=${S_NAME[$1]} t0=$SECONDS rc=0 raw
	raw=$out/raw/$name
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
}

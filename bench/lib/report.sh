# shellcheck shell=bash disable=SC2154 # globals of bench/run-suite.sh
# bench/lib/report.sh - what bench/run-suite.sh writes from its CSVs:
# summary.md of a full or patterns run, the charts (bench/plot.gp), quick
# mode's key=value lines, and the report mode that rewrites them.  Numbers
# come from bench/lib/stats.sh.  Sourced by bench/run-suite.sh, whose
# globals it uses (out, repo, mode, start, ncpu, protos, ovl_modes,
# ovl_prog_sizes, pattern_protos, pattern_sizes, rndv_cols, notes,
# failures, skipped; say, have).

# report_run: what a run of $mode leaves besides its CSVs
report_run() {
	case $mode in
	full) summary_full ;;
	patterns) summary_patterns ;;
	exchange) summary_exchange ;;
	quick) keys_quick ;;
	smoke) ;;
	esac
}

# report_rewrite: report mode - summary.md (and charts) again from the CSVs
# in $out, running nothing: a full run's, else a patterns or an exchange
# run's (BENCH_OUT=bench/results/patterns or .../exchange)
report_rewrite() {
	mkdir -p "$out/raw"
	if [[ -e $out/bw.csv ]]; then
		summary_full
	elif [[ -e $out/scatter_n3.csv ]]; then
		summary_patterns
	elif [[ -e $out/alltoall.csv ]]; then
		summary_exchange
	else
		say "no results in $out: run bench/run-suite.sh full (or patterns or exchange, with BENCH_OUT) first"
		return 1
	fi
	say "report: ${out#"$repo"/}/summary.md and charts rewritten"
}

# ------------------------------------------------------------ common parts
machine() {
	local cpu kern
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
	kern=$(uname -r)
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ${cpu:-unknown CPU}, $ncpu CPUs, Linux $kern, git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+changes')"
}

# print_notes: the notes on this run (a disturbed machine), one paragraph each
print_notes() {
	local note
	for note in "${notes[@]}"; do
		echo
		echo "**Note:** $note"
	done
}

# run_info LINE...: the run's description (LINEs, then the notes), kept in
# run-info when the run ends so that report mode, which cannot know the
# machine or the duration of the run, prints it unchanged
run_info() {
	if [[ ! -s $out/run-info ]]; then
		{
			printf '%s\n' "$@"
			print_notes
		} >"$out/run-info"
	fi
	cat "$out/run-info"
}

# problems LINE...: the "Problems" section, if there is any LINE
problems() {
	(($#)) || return 0
	echo
	echo "## Problems"
	echo
	printf -- '- %s\n' "$@"
}

# ------------------------------------------------------------ full
summary_full() {
	{
		echo "# coopmpi benchmark results"
		echo
		run_info "$(machine); \`bench/run-suite.sh full\`, $((SECONDS - start)) s." \
			"OSU methodology: 2 ranks bound to CPUs 0 and 1; every value is the median over ${BENCH_FULL_ROUNDS:-3} interleaved rounds of a run's median over its repeats."
		full_headline
		full_native
		full_overlap
		full_exchange
		full_ucx
		full_vm
		full_peers
		problems "${failures[@]/#/failed: }" "${skipped[@]/#/skipped: }"
		echo
		echo "Charts: latency.png, bw.png, bibw.png, overlap.png.  Raw output: raw/."
	} >"$out/summary.md"
	plot latency "One-way latency (osu_latency)" "latency (us)" latency
	plot bw "Bandwidth (osu_bw, window 64) and copy limits" "MB/s" bw limits
	plot bibw "Bidirectional bandwidth (osu_bibw)" "MB/s" bibw
	plot_overlap
}

# summary_exchange: summary.md of an exchange run
summary_exchange() {
	{
		echo "# coopmpi exchange benchmarks"
		echo
		run_info "$(machine); \`bench/run-suite.sh exchange\`, $((SECONDS - start)) s." \
			"2 ranks bound to CPUs 0 and 1 (4 ranks: unbound); every value is the median over ${BENCH_EXCHANGE_ROUNDS:-15} interleaved rounds of a run's median over its repeats, every ratio the median of the per-round ratios."
		full_exchange
		problems "${failures[@]/#/failed: }" "${skipped[@]/#/skipped: }"
	} >"$out/summary.md"
}

full_headline() {
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
}

# full_native: latency and bandwidth tables of this machine's runs
full_native() {
	local bws=(65536 1048576 4194304 16777216)
	echo
	echo "## One-way latency, us (osu_latency; lower is better)"
	echo
	table latency 1 "%.2f" 8 4096 65536 1048576 16777216
	latency_progress_table
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
}

# The exchange patterns' sizes in tables and keys: 64 KiB .. 16 MiB
exchange_sizes="65536 262144 1048576 4194304 16777216"

# full_exchange: both ranks sending at once (plan_full_exchange), MB/s and
# each coop path against its MPI's default
full_exchange() {
	local csv title
	for csv in bibw ring alltoall ring_n4 alltoall_n4; do
		[[ -e $out/$csv.csv ]] || continue
		case $csv in
		bibw) title="osu_bibw, 2 ranks" ;;
		ring) title="ring (MPI_Sendrecv to the next rank, from the previous), 2 ranks" ;;
		alltoall) title="MPI_Alltoall, 2 ranks" ;;
		*) title="${csv%_n4}, 4 ranks on $ncpu CPUs" ;;
		esac
		echo
		echo "## Exchange: $title, MB/s of all ranks"
		echo
		# shellcheck disable=SC2086 # the size list splits on purpose
		table "$csv" 1 "%.0f" 16384 $exchange_sizes
		echo
		exchange_ratios "$csv"
	done
}

# exchange_ratios CSV: coop/default per coop series of CSV, and the
# smallest over exchange_sizes
exchange_ratios() {
	local csv=$1 a b z row hdr="| coop / default |" sep="|---|"
	for z in $exchange_sizes; do
		hdr+=" $(human "$z") |"
		sep+="---:|"
	done
	echo "$hdr min |"
	echo "$sep---:|"
	for a in mpich-ucxcoop openmpi-ucxcoop openmpi-ucxcoop-pml; do
		b=${a%%-*}
		row="| $a / $b |"
		for z in $exchange_sizes; do
			row+=" $(ratio "$csv" "$a" "$csv" "$b" "$z") |"
		done
		# shellcheck disable=SC2086
		echo "$row $(min_ratio "$csv" "$a" "$csv" "$b" $exchange_sizes) |"
	done
}

full_overlap() {
	local lap=(65536 262144 1048576 4194304 16777216)
	echo
	echo "## Overlap: % of a nonblocking transfer a side can spend computing"
	echo
	echo "Sender side:"
	echo
	table overlap 1 "%.0f" "${lap[@]}"
	echo
	echo "Receiver side:"
	echo
	table overlap 2 "%.0f" "${lap[@]}"
	full_overlap_progress
	full_origin_target
}

# latency_progress_table: auto's latency with a progress thread against
# manual progress (the latency table's coopmpi-auto)
latency_progress_table() {
	local m z row
	[[ -e $out/latency_progress.csv ]] || return 0
	echo
	echo "With a progress thread (COOP_PROGRESS, auto; the thread shares its rank's CPU), us and / manual:"
	echo
	echo "| progress | 8 B | 4 KiB | 8 B / manual | 4 KiB / manual |"
	echo "|---|---:|---:|---:|---:|"
	echo "| manual | $(fmt "$(med latency coopmpi-auto 8)" %.2f) | $(fmt "$(med latency coopmpi-auto 4096)" %.2f) | 1 | 1 |"
	for m in thread thread-sleep; do
		row="| $m |"
		for z in 8 4096; do
			row+=" $(fmt "$(med latency_progress "coopmpi-auto-$m" "$z")" %.2f) |"
		done
		for z in 8 4096; do
			row+=" $(fmt "$(ratio latency_progress "coopmpi-auto-$m" latency coopmpi-auto "$z")" %.2f) |"
		done
		echo "$row"
	done
}

# full_overlap_progress: overlap per protocol and progress mode
full_overlap_progress() {
	local p m c z row hdr sep
	[[ -e $out/overlap_progress.csv ]] || return 0
	echo
	echo "### Overlap by progress mode (COOP_PROGRESS; bench/bin/overlap -p MODE)"
	echo
	echo "% of the transfer the measured side spends computing while the other side waits.  manual: only library calls move data; thread: a progress thread per rank that polls; thread-sleep: one that sleeps on the mailbox doorbell.  Each rank is bound to one CPU and its progress thread inherits that binding: with a thread per rank, 4 threads share this machine's $ncpu CPUs, and a rank's thread can copy only when the scheduler takes the CPU from the rank's own computing thread.  peer CPU (overlap -c peer): each progress thread runs on the other rank's CPU, which is free while that rank waits (a spare core for the computing side)."
	echo
	hdr="| protocol | mode |" sep="|---|---|"
	for c in sender receiver; do
		for z in $ovl_prog_sizes; do
			hdr+=" $c $(human "$z") |"
			sep+="---:|"
		done
	done
	echo "$hdr"
	echo "$sep"
	for p in $protos; do
		for m in $ovl_modes; do
			row="| $p | ${m/-peercpu/ (peer CPU)} |"
			for c in 1 2; do
				for z in $ovl_prog_sizes; do
					row+=" $(fmt "$(med overlap_progress "coopmpi-$p-$m" "$z" "$c")" %.0f) |"
				done
			done
			echo "$row"
		done
	done
	mode_check overlap_progress osu
}

# full_origin_target: seed 002's Code 2 / Code 3 test, point to point
full_origin_target() {
	local p m ser z=4194304 row
	[[ -e $out/origin_target.csv ]] || return 0
	echo
	echo "### Origin/target test (seed 002 Code 2 / Code 3, point to point), 4 MiB"
	echo
	echo "Both ranks post (coop_isend / coop_irecv) after a barrier.  The origin computes a fixed amount of work that takes T us on an idle CPU (T = 4 x the transfer time), then waits: comm = post .. completion.  The target computes T/2, then T more (comp), then waits.  Nobody calls the library while computing.  comm / T ~ 1: the transfer moved while both computed (independent progress); ~ 1.5 + copy / T: it waited for the target's wait.  comp / T > 1: a progress thread took CPU time from the computing thread.  landed: % of the message in the receiver's buffer when it stopped computing, before any library call.  Medians over rounds of the ratios."
	echo
	echo "| protocol | mode | T us | origin = sender: comm / T | origin comp / T | target comp / T | landed % | origin = receiver: comm / T | origin comp / T | target comp / T | landed % |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for p in $protos; do
		for m in $ovl_modes; do
			[[ $m == *-peercpu ]] && continue
			ser=coopmpi-$p-$m
			row="| $p | $m | $(fmt "$(med origin_target "$ser" "$z" 1)" %.0f) |"
			row+=" $(fmt "$(ratio origin_target "$ser" origin_target "$ser" "$z" 2 1)" %.2f) |"
			row+=" $(fmt "$(ratio origin_target "$ser" origin_target "$ser" "$z" 3 1)" %.2f) |"
			row+=" $(fmt "$(ratio origin_target "$ser" origin_target "$ser" "$z" 4 1)" %.2f) |"
			row+=" $(fmt "$(med origin_target "$ser" "$z" 6)" %.0f) |"
			row+=" $(fmt "$(ratio origin_target "$ser" origin_target "$ser" "$z" 7 1)" %.2f) |"
			row+=" $(fmt "$(ratio origin_target "$ser" origin_target "$ser" "$z" 8 1)" %.2f) |"
			row+=" $(fmt "$(ratio origin_target "$ser" origin_target "$ser" "$z" 9 1)" %.2f) |"
			row+=" $(fmt "$(med origin_target "$ser" "$z" 11)" %.0f) |"
			echo "$row"
		done
	done
	mode_check origin_target origin-target
}

# mode_check CSV TEST: a line for each series (coopmpi-PROTO-MODE) whose
# program did not report running TEST in MODE ("# overlap: test TEST
# progress MODE cpu C ..." in CSV.notes; MODE-peercpu: "cpu N (peer)")
mode_check() {
	local csv=$1 test=$2 ser m want bad=""
	[[ -e $out/$csv.csv ]] || return 0
	while read -r ser; do
		m=${ser#coopmpi-*-}
		want="^$ser: overlap: test $test progress ${m%-peercpu} cpu "
		[[ $m == *-peercpu ]] && want+="[0-9]+ \(peer\) "
		grep -Eq "$want" "$out/$csv.notes" 2>/dev/null || bad+=" $ser"
	done < <(awk -F, 'FNR > 1 && !seen[$1]++ { print $1 }' "$out/$csv.csv")
	[[ -z $bad ]] && return 0
	echo
	echo "**Warning:** these series did not report the test and progress mode of their name:$bad (see $csv.notes)."
}

# ucx_row MPI CSV WHAT FORMAT UNIT SIZE [BASE [COOP]]: one row: the MPI's
# default path (or the series BASE), the same program through UCX with coop
# (or the series COOP), their ratio
ucx_row() {
	local mpi=$1 csv=$2 what=$3 f=$4 unit=$5 s=$6 base=${7:-$1}
	local coop=${8:-$1-ucxcoop}
	echo "| $mpi${7:+ ($7)}${8:+ vs $8} | $what | $(human "$s") | $(fmt "$(med "$csv" "$base" "$s")" "$f") $unit | $(fmt "$(med "$csv" "$coop" "$s")" "$f") $unit | $(ratio "$csv" "$coop" "$csv" "$base" "$s") |"
}

# ucx_rows CSV_LAT CSV_BW LAT_SIZES BW_SIZES: the rows of both MPIs
ucx_rows() {
	local mpi s
	for mpi in mpich openmpi; do
		for s in $3; do
			ucx_row "$mpi" "$1" latency "%.2f" us "$s"
		done
		for s in $4; do
			ucx_row "$mpi" "$2" bandwidth "%.0f" MB/s "$s"
		done
	done
}

ucx_header() {
	echo "| MPI | | size | default path | through coop | coop / default |"
	echo "|---|---|---:|---:|---:|---:|"
}

# full_ucx: unmodified MPI programs through UCX's coop transport against
# each MPI's default path (MPICH: UCX without coop; Open MPI: ob1 + vader
# with CMA), natively on the shm provider
full_ucx() {
	echo
	echo "## Unmodified MPIs through the UCX transport coop (shm provider)"
	echo
	echo "bench/bin/mpi_peer (osu_latency / osu_bw) under each launcher; coop: scripts/coopmpi-run (MPICH: UCX with UCX_TLS=self,posix,coop,tcp; Open MPI: ob1 + vader for small messages, Open MPI's btl uct over coop for rendezvous).  Goals: bandwidth >= 1.8x the default path at 1-16 MiB, 8 B latency <= 1.05x."
	echo
	ucx_header
	ucx_rows latency bw "8 4096 65536" "65536 1048576 4194304 16777216"
	[[ -e $out/latency.csv ]] && grep -q '^openmpi-ucx,' "$out/latency.csv" ||
		return 0
	echo
	echo "Open MPI through coop (ob1 + btl uct) against its pml ucx on UCX's own transports without coop (openmpi-ucx), the path the wrapper's -p ucx takes:"
	echo
	ucx_header
	local s
	for s in 8 4096 65536; do
		ucx_row openmpi latency latency "%.2f" us "$s" openmpi-ucx
	done
	grep -q '^openmpi-ucxcoop-pml,' "$out/latency.csv" || return 0
	echo
	echo "Open MPI's pml ucx through coop (scripts/coopmpi-run -p ucx, series openmpi-ucxcoop-pml) against ob1 + vader and against pml ucx without coop:"
	echo
	ucx_header
	for s in 8 4096 65536; do
		ucx_row openmpi latency latency "%.2f" us "$s" openmpi openmpi-ucxcoop-pml
		ucx_row openmpi latency latency "%.2f" us "$s" openmpi-ucx openmpi-ucxcoop-pml
	done
	for s in 65536 1048576 4194304 16777216; do
		ucx_row openmpi bw bandwidth "%.0f" MB/s "$s" openmpi openmpi-ucxcoop-pml
	done
}

# full_vm: the VM stage's tables
full_vm() {
	local p
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
	for p in $protos; do
		echo "| $p | $(ratio vm_bw "kmod-$p" vm_bw "shm-$p" 1048576) |"
	done
	full_dma
	full_stripe
	[[ -e $out/vm_ucx_bw.csv ]] || return 0
	echo
	echo "Unmodified MPIs through coop on the driver (kmod provider) vs their default path, same VM:"
	echo
	ucx_header
	ucx_rows vm_ucx_latency vm_ucx_bw 8 "1048576 4194304"
}

# full_dma: the driver's DMA channel against the CPU's copy
full_dma() {
	local e s d c
	echo
	echo "DMA channel (dma_bw: parent's memory -> region of another process):"
	echo
	echo "| engine | size | DMA MB/s | COPY MB/s | DMA/COPY | DMA overlap % | COPY overlap % |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for e in dma-soft dma-hw; do
		for s in 65536 1048576 4194304; do
			d=$(med dma "$e" "$s" 1)
			c=$(med dma "$e" "$s" 2)
			[[ $d == NA ]] && continue
			echo "| $e | $(human "$s") | ${d%.*} | ${c%.*} | $(awk -v a="$d" -v b="$c" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') | $(med dma "$e" "$s" 3) | $(med dma "$e" "$s" 4) |"
		done
	done
}

# full_stripe: offload striping against either part alone
full_stripe() {
	local e s
	echo
	echo "Offload striping (bw, one message at a time, kmod): MB/s of the CPU alone (rput), CPU + engine (stripe), the engine alone (dma); engines: the driver's DMA channel (soft: its kernel threads, hw: the dmaengine path on the test provider) and the HCA loopback over Soft-RoCE (hca, in the hw VM):"
	echo
	table vm_stripe 1 "%.0f" 1048576 4194304 16777216
	echo
	echo "| engine | size | stripe/rput | stripe/dma |"
	echo "|---|---:|---:|---:|"
	for e in soft hw hca; do
		for s in 1048576 16777216; do
			echo "| $e | $(human "$s") | $(ratio vm_stripe "$e-stripe" vm_stripe "$e-rput" "$s") | $(ratio vm_stripe "$e-stripe" vm_stripe "$e-dma" "$s") |"
		done
	done
	echo
	echo "The HCA engine next to the DMA channel (same VM: hca-dma / hw-dma, MB/s ratio):"
	echo
	echo "| size | hca/hw engine alone | hca/hw striped |"
	echo "|---:|---:|---:|"
	stripe_ratio_rows hca-dma hw-dma hca-stripe hw-stripe
	echo
	echo "The HCA engine's registrations kept for the next message (COOP_HCA_MR_CACHE) against none kept (-nokeep), MB/s ratio:"
	echo
	echo "| size | dma kept/not | rput kept/not |"
	echo "|---:|---:|---:|"
	stripe_ratio_rows hca-dma hca-dma-nokeep hca-rput hca-rput-nokeep
}

# stripe_ratio_rows A B C D: per size of the striping runs, A/B and C/D
stripe_ratio_rows() {
	local s
	for s in 1048576 4194304 16777216; do
		echo "| $(human "$s") | $(ratio vm_stripe "$1" vm_stripe "$2" "$s") | $(ratio vm_stripe "$3" vm_stripe "$4" "$s") |"
	done
}

full_peers() {
	echo
	echo "## Peers"
	echo
	# the overlap programs' notes are their settings, not peers'
	find "$out" -maxdepth 1 -name '*.notes' ! -name 'overlap*' ! -name 'origin_target*' \
		-exec cat {} + 2>/dev/null | sort -u | sed 's/^/    /'
	echo "    openmpi: mpirun.openmpi --mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
	echo "    mpich:   mpirun.mpich (ch4:ucx)"
	echo "    ucx:     ucx_perftest -t tag_lat / tag_bw -O 64, $(ucx_info -v 2>/dev/null | awk '/Version/ { print "UCX " $3; exit }')"
}

# ------------------------------------------------------------ charts
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
summary_patterns() {
	local pre
	{
		echo "# coopmpi collective patterns and 3-D stencil ([Chakraborty18] Fig. 14-17)"
		echo
		run_info "$(machine); \`bench/run-suite.sh patterns\`, ${BENCH_PATTERN_ROUNDS:-15} interleaved rounds, $((SECONDS - start)) s." \
			"shm provider.  Every value is the median over rounds; a ratio is the median of per-round ratios." \
			"Ranks are bound round-robin to the $ncpu CPUs (scripts/cooprun -b): with more ranks than CPUs, ranks share CPUs, so waiting ranks take CPU time from copying ones; the scale is this machine's, not [Chakraborty18]'s."
		for pre in "" vm_; do
			patterns_part "$pre"
		done
		problems "${failures[@]/#/failed: }"
		echo
		echo "Raw output: raw/.  CSVs: one per pattern and rank count (series = protocol)."
	} >"$out/summary.md"
}

# patterns_part PREFIX: the tables of this machine's CSVs (PREFIX "") or
# of the VM's (vm_, if any)
patterns_part() {
	local pre=$1 csv
	if [[ -n $pre ]]; then
		ls "$out"/vm_*.csv >/dev/null 2>&1 || return 0
		echo
		echo "# In the VM: emulated (QEMU TCG), kmod provider, 4 ranks on 4 vCPUs — ratios only"
	fi
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
	local csv=$1 z p row
	shift
	[[ -e $out/$csv.csv ]] || {
		echo "(no data)"
		return
	}
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
	copies_table "$csv" "$@"
}

# copies_table CSV SIZES...: bytes each rank copied, per protocol
copies_table() {
	local csv=$1 n=${1##*_n} z p row sep="|---|"
	shift
	echo "Bytes each rank's CPU copied per operation, in units of the size, ranks 0 (root) .. $((n - 1)):"
	echo
	row="| protocol |"
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

# ------------------------------------------------------------ quick
keys_quick() {
	{
		echo "# coopmpi quick benchmark"
		echo
		echo "$(machine); \`bench/run-suite.sh quick\`, ${BENCH_ROUNDS:-7} interleaved rounds (the exchanges ${BENCH_EXCHANGE_ROUNDS:-30}, one repeat a launch), medians."
		print_notes
		echo
		echo '```'
		print_keys
		echo '```'
	} >"$out/summary.md"
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
	echo "coop_window_bw_1MiB_MBps=$(med bw coopmpi-coop-heap $M)"
	echo "coop_window_bw_4MiB_MBps=$(med bw coopmpi-coop-heap $F)"
	echo "coop_window_vs_memcpy2_1MiB=$(ratio bw coopmpi-coop-heap limits memcpy-2T $M)"
	echo "coop_window_vs_coop_bw_4MiB=$(ratio bw coopmpi-coop-heap bw coopmpi-coop $F)"
	echo "ucx_window_bw_4MiB_MBps=$(med bw ucx-coop-heap $F)"
	echo "ucx_window_vs_ucx_bw_4MiB=$(ratio bw ucx-coop-heap bw ucx $F)"
	echo "eager_lat_vs_ompi_8B=$(ratio latency coopmpi-auto latency openmpi 8)"
	echo "mpich_ucxcoop_bw_4MiB_MBps=$(med bw mpich-ucxcoop $F)"
	echo "ompi_ucxcoop_bw_4MiB_MBps=$(med bw openmpi-ucxcoop $F)"
	echo "mpich_ucxcoop_lat_8B_us=$(med latency mpich-ucxcoop 8)"
	echo "ucxcoop_vs_ucxcma_bw_4MiB=$(ratio bw mpich-ucxcoop bw mpich $F)"
	echo "ompi_ucxcoop_vs_ompi_vader_bw_4MiB=$(ratio bw openmpi-ucxcoop bw openmpi $F)"
	echo "mpich_ucxcoop_lat_8B_vs_default=$(ratio latency mpich-ucxcoop latency mpich 8)"
	echo "ompi_ucxcoop_lat_8B_vs_default=$(ratio latency openmpi-ucxcoop latency openmpi 8)"
	echo "ompi_ucxcoop_lat_8B_vs_pml_ucx=$(ratio latency openmpi-ucxcoop latency openmpi-ucx 8)"
	echo "ompi_ucxcoop_pml_lat_8B_vs_default=$(ratio latency openmpi-ucxcoop-pml latency openmpi 8)"
	echo "ompi_ucxcoop_pml_lat_8B_vs_pml_ucx=$(ratio latency openmpi-ucxcoop-pml latency openmpi-ucx 8)"
	# shellcheck disable=SC2086 # the size list splits on purpose
	{
		echo "mpich_bibw_min_vs_default=$(min_ratio bibw mpich-ucxcoop bibw mpich $exchange_sizes)"
		echo "ompi_bibw_min_vs_default=$(min_ratio bibw openmpi-ucxcoop bibw openmpi $exchange_sizes)"
		echo "mpich_ring_min_vs_default=$(min_ratio ring mpich-ucxcoop ring mpich $exchange_sizes)"
		echo "ompi_ring_min_vs_default=$(min_ratio ring openmpi-ucxcoop ring openmpi $exchange_sizes)"
		echo "mpich_bibw_min_default_vs_itself=$(min_ratio bibw mpich-again bibw mpich $exchange_sizes)"
		echo "ompi_bibw_min_default_vs_itself=$(min_ratio bibw openmpi-again bibw openmpi $exchange_sizes)"
		echo "mpich_ring_min_default_vs_itself=$(min_ratio ring mpich-again ring mpich $exchange_sizes)"
		echo "ompi_ring_min_default_vs_itself=$(min_ratio ring openmpi-again ring openmpi $exchange_sizes)"
	}
	echo "overlap_manual_rget_recv_4MiB=$(med overlap_progress coopmpi-rget-manual $F 2)"
	echo "overlap_thread_rget_recv_4MiB=$(med overlap_progress coopmpi-rget-thread $F 2)"
	echo "overlap_threadsleep_rget_recv_4MiB=$(med overlap_progress coopmpi-rget-thread-sleep $F 2)"
	echo "overlap_threadpeercpu_rget_recv_4MiB=$(med overlap_progress coopmpi-rget-thread-peercpu $F 2)"
	echo "eager_lat_8B_thread_us=$(med latency_progress coopmpi-auto-thread 8)"
	echo "eager_lat_8B_threadsleep_us=$(med latency_progress coopmpi-auto-thread-sleep 8)"
	echo "lat_8B_thread_vs_manual=$(ratio latency_progress coopmpi-auto-thread latency coopmpi-auto 8)"
	echo "lat_8B_threadsleep_vs_manual=$(ratio latency_progress coopmpi-auto-thread-sleep latency coopmpi-auto 8)"
}
